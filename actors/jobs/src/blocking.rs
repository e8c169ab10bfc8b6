//! [`blocking`]: a job's blocking work (a store read or write) off the async threads.

use std::fmt::Display;

use memvault_types::Failure;

/// Runs `work` on tokio's blocking pool. Its error, or a task that died, is an internal
/// failure worth another try (`Failure::internal`).
pub async fn blocking<T, E>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, Failure>
where
    T: Send + 'static,
    E: Display + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(|error| Failure::internal(error.to_string())),
        Err(join_error) => Err(Failure::internal(format!(
            "storage task failed: {join_error}"
        ))),
    }
}
