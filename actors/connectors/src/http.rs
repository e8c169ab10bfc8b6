//! The one HTTP client every provider calls through: a per-provider pacer (a token bucket
//! per connection's credential), bounded answers, and one retry loop that waits out rate
//! limits (the provider's Retry-After, or an exponential back-off when it sends none) and
//! retries server failures a few times.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;
use reqwest::{RequestBuilder, StatusCode};

use crate::provider::{ProviderError, ProviderKind};

/// The largest answer read from a provider; anything longer is refused, not buffered.
pub const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;

/// How often a rate-limited or failing call is tried again before the run fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retries {
    /// Rate-limit answers waited out per call.
    pub rate_limits: u32,
    /// Server failures retried per call.
    pub transient: u32,
    /// The longest Retry-After waited inside a run; a longer one fails the run (rate
    /// limited) and the scheduler tries again later.
    pub max_wait: Duration,
    /// The first back-off when the provider gives no Retry-After (doubled each time).
    pub backoff: Duration,
}

impl Default for Retries {
    fn default() -> Self {
        Retries {
            rate_limits: 5,
            transient: 2,
            max_wait: Duration::from_secs(60),
            backoff: Duration::from_millis(500),
        }
    }
}

/// A provider's request budget: `rate` requests per second on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub rate: f64,
    pub burst: f64,
}

impl Budget {
    /// The documented limits each provider's default pacing follows (see the README).
    pub fn default_for(kind: ProviderKind) -> Budget {
        match kind {
            // Tier 3 (conversations.history / replies): 50+ per minute per workspace.
            ProviderKind::Slack => Budget {
                rate: 50.0 / 60.0,
                burst: 10.0,
            },
            // An average of three requests per second per integration.
            ProviderKind::Notion => Budget {
                rate: 3.0,
                burst: 6.0,
            },
            // Drive: 12,000 queries per minute per user; stay well under it.
            ProviderKind::Gdrive => Budget {
                rate: 20.0,
                burst: 20.0,
            },
            // Gmail: 15,000 quota units per user per minute, 5 units a get: 50 per second.
            ProviderKind::Gmail => Budget {
                rate: 40.0,
                burst: 40.0,
            },
            // Linear API keys: 5,000 requests per hour.
            ProviderKind::Linear => Budget {
                rate: 5000.0 / 3600.0,
                burst: 20.0,
            },
            // Confluence Cloud: points-based; a conservative 10 per second.
            ProviderKind::Confluence => Budget {
                rate: 10.0,
                burst: 10.0,
            },
            // HubSpot private apps: 100 per 10 s; search: 4 per second.
            ProviderKind::Hubspot => Budget {
                rate: 4.0,
                burst: 4.0,
            },
        }
    }
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets by key; `wait` returns when the key may send one request.
#[derive(Debug, Default)]
pub struct Pacer {
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl Pacer {
    pub async fn wait(&self, key: &str, budget: Budget) {
        loop {
            let delay = {
                let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
                let now = Instant::now();
                let bucket = buckets.entry(key.to_owned()).or_insert(Bucket {
                    tokens: budget.burst,
                    at: now,
                });
                let elapsed = now.duration_since(bucket.at).as_secs_f64();
                bucket.tokens = (bucket.tokens + elapsed * budget.rate).min(budget.burst);
                bucket.at = now;
                if bucket.tokens >= 1.0 {
                    bucket.tokens -= 1.0;
                    return;
                }
                Duration::from_secs_f64((1.0 - bucket.tokens) / budget.rate.max(1e-6))
            };
            tokio::time::sleep(delay).await;
        }
    }
}

/// A provider's answer, read whole (up to [`MAX_ANSWER_BYTES`]).
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON (an empty or malformed body is a transient failure: the provider
    /// answered something it documents no such way).
    pub fn json(&self) -> Result<serde_json::Value, ProviderError> {
        serde_json::from_slice(&self.body).map_err(|error| {
            ProviderError::Transient(format!(
                "the provider answered {} with a body that is not JSON ({error})",
                self.status
            ))
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The Retry-After header in seconds (integer or fractional), if present.
    pub fn retry_after(&self) -> Option<Duration> {
        self.headers
            .get(reqwest::header::RETRY_AFTER)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
            .map(Duration::from_secs_f64)
    }
}

/// The shared client: one per server, cloned cheaply.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
    pacer: Arc<Pacer>,
    budgets: Arc<HashMap<ProviderKind, Budget>>,
    retries: Retries,
}

impl Http {
    pub fn new(client: reqwest::Client) -> Http {
        Http {
            client,
            pacer: Arc::new(Pacer::default()),
            budgets: Arc::new(
                ProviderKind::ALL
                    .into_iter()
                    .map(|kind| (kind, Budget::default_for(kind)))
                    .collect(),
            ),
            retries: Retries::default(),
        }
    }

    /// A client with a 30-second timeout per call and no redirects followed.
    pub fn standard() -> Http {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("memvault/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        Http::new(client)
    }

    pub fn with_budget(mut self, kind: ProviderKind, budget: Budget) -> Http {
        Arc::make_mut(&mut self.budgets).insert(kind, budget);
        self
    }

    pub fn with_retries(mut self, retries: Retries) -> Http {
        self.retries = retries;
        self
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Sends the request `build` makes (again on each retry), paced under `key`, and hands
    /// the answer to `judge`, which turns it into the value or the provider's error.
    /// Rate limits are waited out and transient failures retried per [`Retries`].
    pub async fn call<T>(
        &self,
        kind: ProviderKind,
        key: &str,
        build: impl Fn(&reqwest::Client) -> RequestBuilder,
        judge: impl Fn(Answer) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        let budget = self
            .budgets
            .get(&kind)
            .copied()
            .unwrap_or(Budget::default_for(kind));
        let mut limited = 0;
        let mut failed = 0;
        loop {
            self.pacer.wait(key, budget).await;
            let outcome = match self.fetch(build(&self.client)).await {
                Ok(answer) => judge(answer),
                Err(error) => Err(error),
            };
            match outcome {
                Err(ProviderError::RateLimited { retry_after })
                    if limited < self.retries.rate_limits =>
                {
                    let wait = retry_after
                        .unwrap_or_else(|| self.retries.backoff * 2u32.saturating_pow(limited));
                    if wait > self.retries.max_wait {
                        return Err(ProviderError::RateLimited { retry_after });
                    }
                    limited += 1;
                    tracing::debug!(provider = %kind, ?wait, "rate limited; waiting");
                    tokio::time::sleep(wait).await;
                }
                Err(ProviderError::Transient(reason)) if failed < self.retries.transient => {
                    failed += 1;
                    tracing::debug!(provider = %kind, %reason, "provider failed; retrying");
                    tokio::time::sleep(self.retries.backoff * 2u32.saturating_pow(failed - 1))
                        .await;
                }
                other => return other,
            }
        }
    }

    async fn fetch(&self, request: RequestBuilder) -> Result<Answer, ProviderError> {
        let mut response = request
            .send()
            .await
            .map_err(|error| ProviderError::Transient(describe(&error)))?;
        let status = response.status();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| ProviderError::Transient(describe(&error)))?
        {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(ProviderError::Invalid(format!(
                    "the provider's answer is larger than {} MB",
                    MAX_ANSWER_BYTES / (1024 * 1024)
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer {
            status,
            headers,
            body,
        })
    }
}

/// A reqwest error without its URL (a query string may hold a token).
fn describe(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "the request failed"
    };
    let host = error
        .url()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_default();
    if host.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind} ({host})")
    }
}

/// The usual judgement for a provider that answers errors with HTTP status codes: 401
/// unauthorized, 429 rate limited, 5xx transient, other 4xx invalid. Providers with other
/// shapes (Slack's 200 ok:false, Google's 403, Linear's 400) check those first.
pub fn by_status(answer: &Answer) -> Result<(), ProviderError> {
    let status = answer.status;
    if status.is_success() {
        return Ok(());
    }
    let snippet: String = answer.text().chars().take(300).collect();
    match status.as_u16() {
        401 => Err(ProviderError::Unauthorized(format!("HTTP 401: {snippet}"))),
        429 => Err(ProviderError::RateLimited {
            retry_after: answer.retry_after(),
        }),
        500..=599 => Err(ProviderError::Transient(format!(
            "HTTP {status}: {snippet}"
        ))),
        _ => Err(ProviderError::Invalid(format!("HTTP {status}: {snippet}"))),
    }
}
