//! `memvault eval [PATH]`: retrieval quality of every search mode on the public evaluation
//! sets under a data root (default `../shared/data`: BEIR MS MARCO 5k, BEIR business
//! reports, LoCoMo conversations), or on one BEIR folder or LoCoMo file. Every set goes
//! through the real write path of one in-process service; each query is then searched in
//! each mode (limit 10) and scored: nDCG@10 and Recall@10 against graded judgements, and
//! for LoCoMo evidence Recall@10 (the share of a question's evidence turns in the top 10)
//! with nDCG@10 over the same turns. One table, set × mode. `--grid` also scores hybrid
//! fusion settings (how the defaults were chosen); `--quantization` compares the vector
//! index's storage types on the BEIR sets.
//!
//! # Layout
//!
//! - [`set`]: a loaded set (collections, documents, judged queries) and where sets live.
//! - [`beir`], [`locomo`]: the two formats.
//! - [`harness`]: the in-process service, loading, and scoring one way of searching.
//! - [`variant`]: the ways of searching the table scores, and the fusion grid.
//! - [`metrics`]: nDCG@k and Recall@k.
//! - [`quantization`]: the `--quantization` report.
//! - [`report`]: the tables.

pub mod beir;
pub mod harness;
pub mod locomo;
pub mod metrics;
pub mod quantization;
pub mod report;
pub mod set;
pub mod variant;

use std::path::{Path, PathBuf};

use clap::Args;

use self::harness::{EmbeddingChoice, Harness, Scores};
use self::set::{EvalSet, SetKind};
use self::variant::Variant;
use memvault_server::config::{LocalModel, LocalRuntime};

/// Results per query that are scored.
pub const CUTOFF: usize = 10;

#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// A data root holding beir-msmarco-5k, beir-business-reports and
    /// locomo-dev/locomo-dev.json, or one BEIR folder (corpus.jsonl, queries.jsonl,
    /// qrels/test.tsv), or one LoCoMo JSON file.
    #[arg(default_value = "../shared/data")]
    pub path: PathBuf,
    /// Also score a grid of hybrid fusion settings on every set.
    #[arg(long)]
    pub grid: bool,
    /// Also compare the vector index's storage types (f32, f16, i8) against exact search
    /// on the BEIR sets.
    #[arg(long)]
    pub quantization: bool,
    /// Score every set with the fp32 model (today's vectors) and the int8 one, and print
    /// each table and int8's difference, set by set and mode by mode.
    #[arg(long, conflicts_with_all = ["grid", "quantization"])]
    pub compare_models: bool,
    /// With --compare-models: what runs the fp32 model, `onnx` (its vectors equal
    /// candle's) or `candle`.
    #[arg(long, default_value = "onnx", value_parser = ["onnx", "candle"])]
    pub runtime: String,
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{0}")]
    Data(String),
    #[error("{0}")]
    Service(String),
}

/// One set's scores, a row per way of searching.
#[derive(Debug, Clone)]
pub struct SetScores {
    pub set: String,
    pub kind: SetKind,
    pub documents: usize,
    pub queries: usize,
    pub rows: Vec<(Variant, Scores)>,
}

impl SetScores {
    /// The set's headline measure for the row labelled `label`: nDCG@10 on BEIR sets,
    /// evidence Recall@10 on conversations.
    pub fn headline(&self, label: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|(variant, _)| variant.label == label)
            .map(|(_, scores)| headline(self.kind, scores))
    }
}

/// nDCG@10 for BEIR sets, evidence Recall@10 for conversations.
pub fn headline(kind: SetKind, scores: &Scores) -> f64 {
    match kind {
        SetKind::Beir => scores.ndcg,
        SetKind::Conversations => scores.recall,
    }
}

/// The CLI: loads, scores, prints.
pub fn run(args: EvalArgs) -> Result<(), EvalError> {
    let sets = set::load_sets(&args.path)?;
    let mut variants = variant::modes();
    if args.compare_models {
        let fp32_runtime = match args.runtime.as_str() {
            "candle" => LocalRuntime::Candle,
            _ => LocalRuntime::Onnx,
        };
        return compare_models(&sets, &variants, fp32_runtime);
    }
    if args.grid {
        variants.extend(variant::grid());
    }
    runtime()?.block_on(async {
        let harness = Harness::start().await?;
        let outcome = async {
            let scores = score_loaded(&harness, &sets, &variants).await?;
            if args.quantization {
                for set in sets.iter().filter(|set| set.kind == SetKind::Beir) {
                    quantization::report(&harness, set).await?;
                }
            }
            Ok::<_, EvalError>(scores)
        }
        .await;
        harness.shutdown().await;
        let scores = outcome?;
        println!();
        report::print_modes(&scores);
        if args.grid {
            println!();
            report::print_grid(&scores);
        }
        Ok(())
    })
}

/// `--compare-models`: the table per build, then int8's difference from fp32. fp32 runs on
/// ONNX Runtime: its vectors are candle's (cosine > 0.999 to the reference, the same
/// test candle passes), at a quarter of the time; `--runtime candle` checks that.
fn compare_models(
    sets: &[EvalSet],
    variants: &[Variant],
    fp32_runtime: LocalRuntime,
) -> Result<(), EvalError> {
    let builds = [
        EmbeddingChoice {
            model: LocalModel::MiniLm,
            runtime: fp32_runtime,
        },
        EmbeddingChoice {
            model: LocalModel::MiniLmInt8,
            runtime: LocalRuntime::Onnx,
        },
    ];
    let mut tables = Vec::new();
    for build in builds {
        eprintln!("eval: {}", build.label());
        let scores = runtime()?.block_on(async {
            let harness = Harness::start_with(&build).await?;
            let scores = score_loaded(&harness, sets, variants).await;
            harness.shutdown().await;
            scores
        })?;
        println!();
        println!("{}:", build.label());
        println!();
        report::print_modes(&scores);
        tables.push((build, scores));
    }
    println!();
    report::print_model_differences(&tables[0].1, &tables[1].1);
    Ok(())
}

/// Scores vector, text and hybrid (and hybrid at the API's default `min_score`) on the sets
/// at `path` (see [`set::load_sets`]). Blocking; for tests and tools.
pub fn score_modes(path: &Path) -> Result<Vec<SetScores>, EvalError> {
    score_sets(&set::load_sets(path)?)
}

/// [`score_modes`] on sets already loaded (for instance [`EvalSet::sample`]d ones).
pub fn score_sets(sets: &[EvalSet]) -> Result<Vec<SetScores>, EvalError> {
    let variants = variant::modes();
    runtime()?.block_on(async {
        let harness = Harness::start().await?;
        let scores = score_loaded(&harness, sets, &variants).await;
        harness.shutdown().await;
        scores
    })
}

/// Loads each set into `harness` and scores every variant on it.
async fn score_loaded(
    harness: &Harness,
    sets: &[EvalSet],
    variants: &[Variant],
) -> Result<Vec<SetScores>, EvalError> {
    let mut all = Vec::new();
    for set in sets {
        eprintln!(
            "eval: {}: {} documents in {} collection(s), {} queries",
            set.name,
            set.document_count(),
            set.collections.len(),
            set.query_count()
        );
        harness.load(set).await?;
        let mut rows = Vec::new();
        for variant in variants {
            rows.push((variant.clone(), harness.score(set, variant).await?));
        }
        all.push(SetScores {
            set: set.name.clone(),
            kind: set.kind,
            documents: set.document_count(),
            queries: set.query_count(),
            rows,
        });
    }
    Ok(all)
}

fn runtime() -> Result<tokio::runtime::Runtime, EvalError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| EvalError::Service(format!("runtime: {error}")))
}
