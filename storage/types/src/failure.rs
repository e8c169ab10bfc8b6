//! [`Failure`]: why background work failed, as it crosses a seam between crates (a job
//! kind and the job system, the sync engine and its sink, an ingest job and its steps).
//! It keeps what a `String` loses: the [`ErrorCode`] the failure maps to and whether
//! trying again may help.

use crate::ErrorCode;

/// A failure at a seam: its code, whether a retry may succeed, and a text for people
/// (never a secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct Failure {
    pub code: ErrorCode,
    /// Whether the same work may succeed later (a store or a dependency that was down).
    pub retryable: bool,
    pub detail: String,
}

impl Failure {
    /// A failure with `code`; retryable when the code's status says the service or a
    /// dependency failed (429 and 5xx), not the request.
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        let status = code.status();
        Self {
            code,
            retryable: status == 429 || status >= 500,
            detail: detail.into(),
        }
    }

    /// An unexpected failure inside the service (a store read, a task that died):
    /// `internal_error`, worth another try.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::InternalError, detail)
    }

    /// The same failure, marked as one no retry can fix.
    pub fn permanent(self) -> Self {
        Self {
            retryable: false,
            ..self
        }
    }

    /// The same failure with `context` before its detail.
    pub fn context(self, context: &str) -> Self {
        Self {
            detail: format!("{context}: {}", self.detail),
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_follows_the_code_unless_marked_permanent() {
        assert!(Failure::internal("store down").retryable);
        assert!(Failure::new(ErrorCode::UpstreamFailed, "llm").retryable);
        assert!(!Failure::new(ErrorCode::InvalidBody, "bad").retryable);
        let permanent = Failure::internal("x").permanent();
        assert!(!permanent.retryable);
        assert_eq!(permanent.code, ErrorCode::InternalError);
        assert_eq!(
            Failure::internal("gone").context("reading").to_string(),
            "reading: gone"
        );
    }
}
