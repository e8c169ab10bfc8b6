//! The embedding thread. Requests from concurrent writers queue on a channel; the thread
//! takes everything waiting (up to `max_batch` texts) and embeds it in one call, so ten
//! clients creating one memory each cost close to one forward pass, not ten.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::{Embedder, EmbeddingError};

type Vectors = Result<Vec<Vec<f32>>, EmbeddingError>;

struct Request {
    texts: Vec<String>,
    reply: oneshot::Sender<Vectors>,
}

/// A cheap, cloneable handle to the embedding thread. The thread ends when every handle is
/// dropped.
#[derive(Clone)]
pub struct EmbeddingService {
    sender: mpsc::UnboundedSender<Request>,
    model_name: Arc<str>,
    dimensions: usize,
    token_counter: Option<crate::TokenCounter>,
    max_tokens: Option<usize>,
}

impl EmbeddingService {
    /// Starts the thread that owns `embedder`.
    pub fn start(embedder: Arc<dyn Embedder>, max_batch: usize) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        let model_name = Arc::from(embedder.model_name());
        let dimensions = embedder.dimensions();
        let (token_counter, max_tokens) = (embedder.token_counter(), embedder.max_tokens());
        let spawned = std::thread::Builder::new()
            .name("memvault-embed".to_owned())
            .spawn(move || run(embedder.as_ref(), receiver, max_batch.max(1)));
        if let Err(error) = spawned {
            // Every call will answer `Stopped`; the status page reports the outage.
            tracing::error!(%error, "cannot start the embedding thread");
        }
        Self {
            sender,
            model_name,
            dimensions,
            token_counter,
            max_tokens,
        }
    }

    /// The model's own token count (see [`crate::Embedder::token_counter`]).
    pub fn token_counter(&self) -> Option<crate::TokenCounter> {
        self.token_counter.clone()
    }

    /// The most tokens the model reads of one text.
    pub fn max_tokens(&self) -> Option<usize> {
        self.max_tokens
    }

    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// One vector per text, in order.
    pub async fn embed(&self, texts: Vec<String>) -> Vectors {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Request { texts, reply })
            .map_err(|_| EmbeddingError::Stopped)?;
        answer.await.map_err(|_| EmbeddingError::Stopped)?
    }

    pub async fn embed_one(&self, text: String) -> Result<Vec<f32>, EmbeddingError> {
        let mut vectors = self.embed(vec![text]).await?;
        vectors
            .pop()
            .ok_or_else(|| EmbeddingError::Inference("no vector returned".to_owned()))
    }
}

fn run(embedder: &dyn Embedder, mut receiver: mpsc::UnboundedReceiver<Request>, max_batch: usize) {
    while let Some(first) = receiver.blocking_recv() {
        let mut total = first.texts.len();
        let mut batch = vec![first];
        while total < max_batch {
            match receiver.try_recv() {
                Ok(request) => {
                    total += request.texts.len();
                    batch.push(request);
                }
                Err(_) => break,
            }
        }
        let texts: Vec<&str> = batch
            .iter()
            .flat_map(|request| request.texts.iter().map(String::as_str))
            .collect();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| embedder.embed_batch(&texts)))
            .unwrap_or_else(|_| Err(EmbeddingError::Inference("the model panicked".to_owned())));
        match result {
            Ok(vectors) if vectors.len() == texts.len() => {
                let mut vectors = vectors.into_iter();
                for request in batch {
                    let mine = vectors.by_ref().take(request.texts.len()).collect();
                    let _ = request.reply.send(Ok(mine));
                }
            }
            Ok(vectors) => {
                let error = EmbeddingError::Inference(format!(
                    "{} vectors for {} texts",
                    vectors.len(),
                    texts.len()
                ));
                reply_all(batch, &error);
            }
            Err(error) => reply_all(batch, &error),
        }
    }
}

fn reply_all(batch: Vec<Request>, error: &EmbeddingError) {
    for request in batch {
        let _ = request.reply.send(Err(error.clone()));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts calls so tests can see batching; vectors encode the text length.
    struct Counting {
        calls: AtomicUsize,
    }

    impl Embedder for Counting {
        fn model_name(&self) -> &str {
            "counting"
        }
        fn dimensions(&self) -> usize {
            1
        }
        fn embed_batch(&self, texts: &[&str]) -> Vectors {
            self.calls.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(20));
            if texts.contains(&"panic") {
                panic!("asked to");
            }
            Ok(texts.iter().map(|text| vec![text.len() as f32]).collect())
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_requests_share_forward_passes_and_keep_their_order() {
        let embedder = Arc::new(Counting {
            calls: AtomicUsize::new(0),
        });
        let service = EmbeddingService::start(embedder.clone(), 64);
        let tasks: Vec<_> = (0..20)
            .map(|index| {
                let service = service.clone();
                tokio::spawn(async move {
                    let texts = vec!["x".repeat(index), "y".repeat(index + 1)];
                    (index, service.embed(texts).await.unwrap())
                })
            })
            .collect();
        for task in tasks {
            let (index, vectors) = task.await.unwrap();
            assert_eq!(vectors, vec![vec![index as f32], vec![(index + 1) as f32]]);
        }
        assert!(embedder.calls.load(Ordering::SeqCst) < 20);
    }

    #[tokio::test]
    async fn a_panicking_model_fails_the_batch_and_the_thread_lives_on() {
        let service = EmbeddingService::start(
            Arc::new(Counting {
                calls: AtomicUsize::new(0),
            }),
            1,
        );
        let error = service.embed_one("panic".to_owned()).await.unwrap_err();
        assert!(matches!(error, EmbeddingError::Inference(_)));
        assert_eq!(
            service.embed_one("abc".to_owned()).await.unwrap(),
            vec![3.0]
        );
    }
}
