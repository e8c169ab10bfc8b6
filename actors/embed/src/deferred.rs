//! An embedder whose model is still loading on a thread of its own.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};

use crate::{Embedder, EmbeddingError, TokenCounter};

type Loaded = Result<Arc<dyn Embedder>, EmbeddingError>;

/// Answers for its model's name, dimensions and tokens at once; an embedding waits until
/// the model has loaded, then runs on it. A load that fails (or panics) is logged once and
/// answered as that error by every embedding after.
pub struct Deferred {
    model_name: String,
    dimensions: usize,
    token_counter: Option<TokenCounter>,
    max_tokens: Option<usize>,
    loaded: Arc<OnceLock<Loaded>>,
}

impl Deferred {
    /// Runs `load` on a new thread. `model_name` and `dimensions` must be those of the
    /// embedder it returns.
    pub fn spawn(
        model_name: &str,
        dimensions: usize,
        token_counter: Option<TokenCounter>,
        max_tokens: Option<usize>,
        load: impl FnOnce() -> Loaded + Send + 'static,
    ) -> Self {
        let loaded = Arc::new(OnceLock::new());
        let filled = loaded.clone();
        let name = model_name.to_owned();
        let spawned = std::thread::Builder::new()
            .name("memvault-model-load".to_owned())
            .spawn(move || {
                let started = std::time::Instant::now();
                let outcome =
                    std::panic::catch_unwind(AssertUnwindSafe(load)).unwrap_or_else(|_| {
                        Err(EmbeddingError::Load(format!("loading {name} panicked")))
                    });
                match &outcome {
                    Ok(_) => tracing::info!(
                        model = %name,
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "embedding model ready"
                    ),
                    Err(error) => {
                        tracing::error!(model = %name, %error, "embedding model failed to load")
                    }
                }
                let _ = filled.set(outcome);
            });
        if let Err(error) = spawned {
            let _ = loaded.set(Err(EmbeddingError::Load(format!(
                "cannot start the thread that loads {model_name}: {error}"
            ))));
        }
        Self {
            model_name: model_name.to_owned(),
            dimensions,
            token_counter,
            max_tokens,
            loaded,
        }
    }

    /// Waits for the load; the embedder, or why it did not load.
    pub fn wait(&self) -> Result<&Arc<dyn Embedder>, EmbeddingError> {
        self.loaded.wait().as_ref().map_err(Clone::clone)
    }
}

impl Embedder for Deferred {
    fn model_name(&self) -> &str {
        &self.model_name
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn token_counter(&self) -> Option<TokenCounter> {
        self.token_counter.clone()
    }

    fn max_tokens(&self) -> Option<usize> {
        self.max_tokens
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        self.wait()?.embed_batch(texts)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    struct Fixed;

    impl Embedder for Fixed {
        fn model_name(&self) -> &str {
            "fixed"
        }
        fn dimensions(&self) -> usize {
            2
        }
        fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
            Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
        }
    }

    #[test]
    fn an_embedding_waits_for_the_load_then_runs_on_its_model() {
        let (release, released) = mpsc::channel::<()>();
        let deferred = Deferred::spawn("fixed", 2, None, Some(7), move || {
            released.recv().unwrap();
            Ok(Arc::new(Fixed) as Arc<dyn Embedder>)
        });
        assert_eq!(
            (
                deferred.model_name(),
                deferred.dimensions(),
                deferred.max_tokens()
            ),
            ("fixed", 2, Some(7))
        );
        let deferred = Arc::new(deferred);
        let (done, finished) = mpsc::channel();
        let waiting = deferred.clone();
        std::thread::spawn(move || done.send(waiting.embed_batch(&["a", "b"])).unwrap());
        assert!(
            finished.recv_timeout(Duration::from_millis(200)).is_err(),
            "answered before the load"
        );
        release.send(()).unwrap();
        let vectors = finished
            .recv_timeout(Duration::from_secs(10))
            .unwrap()
            .unwrap();
        assert_eq!(vectors, vec![vec![1.0, 0.0]; 2]);
    }

    #[test]
    fn a_load_that_fails_or_panics_answers_its_error_every_time() {
        let failed = Deferred::spawn("fixed", 2, None, None, || {
            Err(EmbeddingError::Load("no graph".to_owned()))
        });
        for _ in 0..2 {
            let error = failed.embed_batch(&["a"]).unwrap_err();
            assert!(error.to_string().contains("no graph"), "{error}");
        }
        let panicked = Deferred::spawn("fixed", 2, None, None, || panic!("a bad library"));
        let error = panicked.embed_batch(&["a"]).unwrap_err();
        assert!(
            error.to_string().contains("loading fixed panicked"),
            "{error}"
        );
    }
}
