//! The tables `memvault eval` prints: set × mode, and the fusion grid.

use super::variant::modes;
use super::SetScores;
use crate::eval::set::SetKind;

/// The single modes hybrid is compared with.
const SINGLE_MODES: [&str; 2] = ["vector", "text"];

/// One row per set and mode, then per mode the mean of each set's headline measure.
pub fn print_modes(scores: &[SetScores]) {
    println!("| set | mode | nDCG@10 | Recall@10 |");
    println!("|---|---|---|---|");
    let labels: Vec<String> = modes().into_iter().map(|variant| variant.label).collect();
    for set in scores {
        let name = match set.kind {
            SetKind::Beir => format!(
                "{} ({} documents, {} queries)",
                set.set, set.documents, set.queries
            ),
            SetKind::Conversations => format!(
                "{} ({} turns, {} questions; evidence)",
                set.set, set.documents, set.queries
            ),
        };
        for (variant, row) in set.rows.iter().filter(|(v, _)| labels.contains(&v.label)) {
            println!(
                "| {name} | {} | {:.4} | {:.4} |",
                variant.label, row.ndcg, row.recall
            );
        }
    }
    println!();
    println!("Headline: nDCG@10 on BEIR sets, evidence Recall@10 on conversations.");
    println!();
    println!("| mode | mean headline | worst gap to the best single mode |");
    println!("|---|---|---|");
    for label in &labels {
        println!(
            "| {label} | {:.4} | {:+.4} |",
            mean_headline(scores, label),
            worst_gap(scores, label)
        );
    }
}

/// Per set and mode: nDCG@10 and Recall@10 of the fp32 model, of the int8 one and their
/// difference, and the largest loss.
pub fn print_model_differences(fp32: &[SetScores], int8: &[SetScores]) {
    println!(
        "| set | mode | nDCG@10 fp32 | nDCG@10 int8 | Δ | Recall@10 fp32 | Recall@10 int8 | Δ |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut worst: f64 = 0.0;
    for (base, quantized) in fp32.iter().zip(int8) {
        for ((variant, before), (_, after)) in base.rows.iter().zip(&quantized.rows) {
            let (ndcg, recall) = (after.ndcg - before.ndcg, after.recall - before.recall);
            worst = worst.max(-ndcg).max(-recall);
            println!(
                "| {} | {} | {:.4} | {:.4} | {:+.4} | {:.4} | {:.4} | {:+.4} |",
                base.set,
                variant.label,
                before.ndcg,
                after.ndcg,
                ndcg,
                before.recall,
                after.recall,
                recall
            );
        }
    }
    println!();
    println!("Largest loss of int8 against fp32: {worst:.4}");
}

/// One row per grid setting: its headline per set, the mean, the worst gap.
pub fn print_grid(scores: &[SetScores]) {
    let Some(first) = scores.first() else {
        return;
    };
    let header: Vec<&str> = scores.iter().map(|set| set.set.as_str()).collect();
    println!(
        "| fusion | {} | mean | worst gap to the best single mode |",
        header.join(" | ")
    );
    println!("|---|{}---|---|", "---|".repeat(header.len()));
    let base: Vec<String> = modes().into_iter().map(|variant| variant.label).collect();
    for (variant, _) in first.rows.iter().filter(|(v, _)| !base.contains(&v.label)) {
        let cells: Vec<String> = scores
            .iter()
            .map(|set| format!("{:.4}", set.headline(&variant.label).unwrap_or(f64::NAN)))
            .collect();
        println!(
            "| {} | {} | {:.4} | {:+.4} |",
            variant.label,
            cells.join(" | "),
            mean_headline(scores, &variant.label),
            worst_gap(scores, &variant.label)
        );
    }
}

/// The mean over sets of the headline measure of the row labelled `label`.
pub fn mean_headline(scores: &[SetScores], label: &str) -> f64 {
    let values: Vec<f64> = scores
        .iter()
        .filter_map(|set| set.headline(label))
        .collect();
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// The smallest (most negative) difference over sets between the row labelled `label`
/// and the better of vector and text, on the headline measure.
pub fn worst_gap(scores: &[SetScores], label: &str) -> f64 {
    scores
        .iter()
        .filter_map(|set| {
            let best = SINGLE_MODES
                .iter()
                .filter_map(|mode| set.headline(mode))
                .fold(f64::NEG_INFINITY, f64::max);
            set.headline(label).map(|value| value - best)
        })
        .fold(f64::INFINITY, f64::min)
}
