//! `memvault reembed`: follows a running server's re-embedding with a progress bar.
//!
//! A server re-embeds by itself, in the background, whenever its configured embedding
//! model differs from the one that built a collection's vectors (see
//! `memvault_core::reembed`); this command only watches. It polls the operator endpoint
//! `GET /v1/memory/admin/embeddings` with an admin-flagged key and draws one bar over the
//! memories of every collection still to switch, until none is left. Exit status: 0 when
//! every collection is on the configured model, 1 when the server cannot be read.

use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use memvault_server::api::operator::EmbeddingsResponse;

#[derive(Debug, Clone, Args)]
pub struct ReembedArgs {
    /// The server's base URL.
    #[arg(long, default_value = "http://127.0.0.1:8420")]
    pub url: String,
    /// An admin-flagged tenant's API key.
    #[arg(long, env = "MEMVAULT_API_KEY", hide_env_values = true)]
    pub key: String,
    /// Print the state once and exit instead of following it.
    #[arg(long)]
    pub once: bool,
    /// Milliseconds between two reads of the state.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(50..))]
    pub interval_ms: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ReembedError {
    #[error("cannot reach {url}: {source}")]
    Unreachable { url: String, source: reqwest::Error },
    #[error("{url} answered {status}: {body}")]
    Refused {
        url: String,
        status: u16,
        body: String,
    },
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

pub fn run(args: ReembedArgs) -> Result<(), ReembedError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ReembedError::Runtime)?;
    runtime.block_on(follow(args))
}

async fn follow(args: ReembedArgs) -> Result<(), ReembedError> {
    let client = reqwest::Client::new();
    let url = format!(
        "{}/v1/memory/admin/embeddings",
        args.url.trim_end_matches('/')
    );
    let state = read(&client, &url, &args.key).await?;
    println!("{}", describe(&state));
    if args.once || state.reembedding.collections_left == 0 {
        return Ok(());
    }
    let bar = ProgressBar::new(total(&state) as u64).with_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} memories ({per_sec}, eta {eta}) {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    loop {
        let state = read(&client, &url, &args.key).await?;
        bar.set_length(total(&state) as u64);
        bar.set_position(done(&state) as u64);
        bar.set_message(message(&state));
        if state.reembedding.collections_left == 0 {
            bar.finish_with_message("every collection is on the configured model");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(args.interval_ms)).await;
    }
}

async fn read(
    client: &reqwest::Client,
    url: &str,
    key: &str,
) -> Result<EmbeddingsResponse, ReembedError> {
    let unreachable = |source| ReembedError::Unreachable {
        url: url.to_owned(),
        source,
    };
    let response = client
        .get(url)
        .bearer_auth(key)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(unreachable)?;
    let status = response.status();
    if !status.is_success() {
        return Err(ReembedError::Refused {
            url: url.to_owned(),
            status: status.as_u16(),
            body: response.text().await.unwrap_or_default(),
        });
    }
    response.json().await.map_err(unreachable)
}

/// Memories re-embedded since the server started, switched or staged.
pub fn done(state: &EmbeddingsResponse) -> usize {
    state.reembedding.memories_switched + state.reembedding.memories_done
}

pub fn total(state: &EmbeddingsResponse) -> usize {
    state.reembedding.memories_switched + state.reembedding.memories_total
}

pub fn message(state: &EmbeddingsResponse) -> String {
    let progress = &state.reembedding;
    let mut message = format!("{} collections left", progress.collections_left);
    if progress.failing > 0 {
        message.push_str(&format!(
            "; {} retrying: {}",
            progress.failing,
            progress.last_error.as_deref().unwrap_or("unknown error")
        ));
    }
    message
}

/// The state in a few lines.
pub fn describe(state: &EmbeddingsResponse) -> String {
    let mut lines = vec![format!(
        "configured model: {} ({} dimensions)",
        state.configured.model, state.configured.dimensions
    )];
    for model in &state.models {
        lines.push(format!(
            "  {} collections on {} ({} dimensions)",
            model.collections, model.model, model.dimensions
        ));
    }
    let progress = &state.reembedding;
    lines.push(if progress.collections_left == 0 {
        "every collection is on the configured model".to_owned()
    } else {
        format!(
            "re-embedding: {} collections left, {} of {} memories done; {}",
            progress.collections_left,
            done(state),
            total(state),
            message(state)
        )
    });
    lines.join("\n")
}
