//! The test server, clients and helpers.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use memvault_server::config::Config;
use memvault_server::server;
use memvault_types::clock::{Clock, SystemClock};
use memvault_types::ErrorCode;
use reqwest::blocking::{Client as HttpClient, Response};
use reqwest::Method;
use serde_json::{json, Value};

pub const ADMIN_KEY: &str = "mv_test_admin_key_0123456789abcdef";

/// A server running in this process until the test binary exits.
pub struct TestServer {
    pub base_url: String,
    pub admin_key: String,
    /// Keeps the data dir alive as long as the server.
    _data_dir: tempfile::TempDir,
}

impl TestServer {
    /// The server's data dir.
    pub fn data_dir(&self) -> &Path {
        self._data_dir.path()
    }
}

/// The shared server; started on first use.
pub fn shared() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(|| start_in_process(|_| {}))
}

/// A shared server whose embedding model is a hashed bag of words behind a local
/// OpenAI-compatible `/embeddings` endpoint (the bench's, [`word_embeddings`]): for the
/// tests of bulk machinery (tens of thousands of memories exported and imported, filters
/// over thousands), where the model's answers are not what is tested and the real one
/// would spend minutes of both cores. Word overlap is similarity, so searches still
/// find what shares the query's words.
pub fn word_embedding_server() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(|| start_in_process(word_embeddings))
}

/// Points `config`'s embedding at the bag-of-words endpoint, started on first use.
pub fn word_embeddings(config: &mut Config) {
    static ENDPOINT: OnceLock<String> = OnceLock::new();
    let base_url = ENDPOINT.get_or_init(|| {
        let (sender, receiver) = mpsc::channel();
        std::thread::Builder::new()
            .name("word-embeddings".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async move {
                    let base_url = memvault_tools::bench::fake_embeddings::start()
                        .await
                        .expect("the bag-of-words endpoint starts");
                    sender.send(base_url).expect("send");
                    std::future::pending::<()>().await;
                });
            })
            .expect("spawn the bag-of-words endpoint");
        receiver
            .recv_timeout(Duration::from_secs(30))
            .expect("the bag-of-words endpoint did not start")
    });
    config.embedding.provider = memvault_server::config::EmbeddingProvider::Openai;
    config.embedding.base_url = Some(base_url.clone());
    config.embedding.model = Some(memvault_tools::bench::fake_embeddings::MODEL.to_owned());
    config.embedding.api_key = Some("sk-words".to_owned());
}

/// A server of its own, in this process, with the configuration adjusted by `configure`
/// (it runs until the test binary exits).
pub fn start_in_process(configure: impl FnOnce(&mut Config)) -> TestServer {
    start_in_process_with_clock(configure, Arc::new(SystemClock))
}

/// [`start_in_process`] whose "now" is `clock`: a test that moves a `ManualClock` ages
/// every memory of this server.
pub fn start_in_process_with_clock(
    configure: impl FnOnce(&mut Config),
    clock: Arc<dyn Clock>,
) -> TestServer {
    let data_dir = tempfile::tempdir().expect("temp dir");
    let mut config = Config::default();
    config.server.data_dir = data_dir.path().to_owned();
    config.status.check_interval_secs = 1;
    // Files are read by the real binary in worker mode (this process is the test harness).
    config.files.worker_program = Some(PathBuf::from(env!("CARGO_BIN_EXE_memvault")));
    configure(&mut config);
    let (sender, receiver) = mpsc::channel::<SocketAddr>();
    std::thread::Builder::new()
        .name("test-server".to_owned())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                // Bound first, so presigned file URLs name the real port.
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                let address = listener.local_addr().expect("address");
                if config.server.public_url.is_none() {
                    config.server.public_url = Some(format!("http://{address}"));
                }
                let embedder = server::start_embedder(&config).await.expect("embedder");
                let started = server::start_service_with_clock(
                    &config,
                    embedder,
                    Some(ADMIN_KEY.to_owned()),
                    clock,
                )
                .await
                .expect("service");
                sender.send(address).expect("send address");
                server::serve(
                    listener,
                    started.service,
                    started.state,
                    Box::pin(std::future::pending()),
                )
                .await
                .expect("serve");
            });
        })
        .expect("spawn server thread");
    let address = receiver
        .recv_timeout(Duration::from_secs(600))
        .expect("test server did not start");
    TestServer {
        base_url: format!("http://{address}"),
        admin_key: ADMIN_KEY.to_owned(),
        _data_dir: data_dir,
    }
}

/// An HTTP client bound to one key (or none).
#[derive(Clone)]
pub struct Client {
    http: HttpClient,
    base_url: String,
    key: Option<String>,
}

impl Client {
    pub fn new(base_url: &str, key: Option<&str>) -> Self {
        Self {
            http: HttpClient::builder()
                .timeout(Duration::from_secs(120))
                .build()
                .expect("http client"),
            base_url: base_url.to_owned(),
            key: key.map(str::to_owned),
        }
    }

    pub fn anonymous() -> Self {
        Self::new(&shared().base_url, None)
    }

    pub fn admin() -> Self {
        Self::new(&shared().base_url, Some(&shared().admin_key))
    }

    pub fn key(&self) -> &str {
        self.key.as_deref().unwrap_or_default()
    }

    pub fn request(&self, method: Method, path: &str) -> reqwest::blocking::RequestBuilder {
        let builder = self
            .http
            .request(method, format!("{}{path}", self.base_url));
        match &self.key {
            Some(key) => builder.bearer_auth(key),
            None => builder,
        }
    }

    pub fn get(&self, path: &str) -> Response {
        self.request(Method::GET, path).send().expect("request")
    }

    pub fn delete(&self, path: &str) -> Response {
        self.request(Method::DELETE, path).send().expect("request")
    }

    pub fn post(&self, path: &str, body: &Value) -> Response {
        self.request(Method::POST, path)
            .json(body)
            .send()
            .expect("request")
    }

    pub fn put(&self, path: &str, body: &Value) -> Response {
        self.request(Method::PUT, path)
            .json(body)
            .send()
            .expect("request")
    }

    pub fn patch(&self, path: &str, body: &Value) -> Response {
        self.request(Method::PATCH, path)
            .json(body)
            .send()
            .expect("request")
    }

    pub fn post_raw(&self, path: &str, body: &[u8], content_type: &str) -> Response {
        self.request(Method::POST, path)
            .header("content-type", content_type)
            .body(body.to_vec())
            .send()
            .expect("request")
    }
}

/// A fresh tenant on a server of its own; its client.
pub fn tenant_on(server: &TestServer) -> Client {
    let admin = Client::new(&server.base_url, Some(&server.admin_key));
    let name = unique("tenant");
    let body = expect_status(
        admin.post(
            "/v1/memory/admin/tenants",
            &json!({"name": name, "email": format!("{name}@example.com")}),
        ),
        201,
    );
    Client::new(&server.base_url, body["api_key"].as_str())
}

/// A fresh tenant on the shared server; its client.
pub fn new_tenant() -> Client {
    tenant_on(shared())
}

pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid_like()[..12])
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or_default();
    format!(
        "{:x}{:04x}",
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed) % 0xffff
    )
    .chars()
    .rev()
    .collect()
}

/// Asserts the status and returns the JSON body (Null when there is none).
#[track_caller]
pub fn expect_status(response: Response, status: u16) -> Value {
    let actual = response.status().as_u16();
    let text = response.text().unwrap_or_default();
    assert_eq!(actual, status, "unexpected status; body: {text}");
    if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("body is not JSON: {text}"))
    }
}

/// Asserts an error status with a `{"detail": string, "code": string}` body whose code is
/// in the code table with this status; returns the detail.
#[track_caller]
pub fn expect_error(response: Response, status: u16) -> String {
    let body = expect_status(response, status);
    let code = body["code"]
        .as_str()
        .unwrap_or_else(|| panic!("error body without a string code: {body}"));
    let listed = ErrorCode::ALL
        .iter()
        .find(|listed| listed.as_str() == code)
        .unwrap_or_else(|| panic!("error code {code} is not in the code table: {body}"));
    assert_eq!(listed.status(), status, "{code} has another status: {body}");
    body["detail"]
        .as_str()
        .unwrap_or_else(|| panic!("error body without a string detail: {body}"))
        .to_owned()
}

pub fn memories_path(collection: &str) -> String {
    format!("/v1/memory/collections/{collection}/memories")
}

#[track_caller]
pub fn create_memory(client: &Client, collection: &str, body: Value) -> Value {
    expect_status(client.post(&memories_path(collection), &body), 201)
}

#[track_caller]
pub fn list_ids(client: &Client, collection: &str, query: &str) -> Vec<String> {
    let body = expect_status(
        client.get(&format!("{}{query}", memories_path(collection))),
        200,
    );
    body.as_array()
        .expect("array")
        .iter()
        .map(|memory| memory["id"].as_str().expect("id").to_owned())
        .collect()
}

/// The real binary, run as a child process with its own data dir; killed on drop.
pub struct ServerProcess {
    pub child: Child,
    pub base_url: String,
    /// Everything the process printed on stdout until it was listening.
    pub stdout_lines: Vec<String>,
}

impl ServerProcess {
    pub fn start(data_dir: &Path, environment: &[(&str, &str)]) -> Result<Self, String> {
        Self::start_on(data_dir, "127.0.0.1:0", environment)
    }

    /// [`Self::start`] listening on `bind`.
    pub fn start_on(
        data_dir: &Path,
        bind: &str,
        environment: &[(&str, &str)],
    ) -> Result<Self, String> {
        Self::start_with_log(data_dir, bind, environment, Stdio::inherit())
    }

    /// [`Self::start_on`] with the log (stderr) sent to `log` (a file the test reads).
    pub fn start_with_log(
        data_dir: &Path,
        bind: &str,
        environment: &[(&str, &str)],
        log: Stdio,
    ) -> Result<Self, String> {
        let mut command = Command::new(env!("CARGO_BIN_EXE_memvault"));
        command
            .args(["serve", "--bind", bind, "--data-dir"])
            .arg(data_dir)
            .env_remove("MEMVAULT_BOOTSTRAP_KEY")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        for (name, value) in environment {
            command.env(name, value);
        }
        let mut child = command.spawn().map_err(|error| error.to_string())?;
        let stdout = child.stdout.take().expect("stdout");
        let (sender, receiver) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    // Keep draining so the child never blocks on a full pipe.
                    continue;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(600);
        let mut stdout_lines = Vec::new();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "server exited with {status}; stdout: {stdout_lines:?}"
                ));
            }
            match receiver.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    if let Some(url) = line.strip_prefix("memvault listening on ") {
                        let base_url = url.trim().to_owned();
                        stdout_lines.push(line);
                        return Ok(Self {
                            child,
                            base_url,
                            stdout_lines,
                        });
                    }
                    stdout_lines.push(line);
                }
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // Stdout closed: the process is exiting; report how it ended.
                    let status = child.wait().map_err(|error| error.to_string())?;
                    return Err(format!(
                        "server exited with {status}; stdout: {stdout_lines:?}"
                    ));
                }
                Err(error) => {
                    let _ = child.kill();
                    return Err(format!(
                        "server did not start: {error}; stdout: {stdout_lines:?}"
                    ));
                }
            }
        }
    }

    pub fn client(&self, key: &str) -> Client {
        Client::new(&self.base_url, Some(key))
    }

    /// SIGTERM, then wait for the graceful shutdown to finish.
    pub fn stop_gracefully(&mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(status.success());
        let exit = self.child.wait().expect("wait");
        assert!(exit.success(), "graceful shutdown exited with {exit}");
    }

    pub fn kill_hard(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("wait");
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A loopback port free a moment ago (for a process that must know its address before it
/// starts, such as a cluster node's `advertise_url`).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port()
}

pub fn temp_data_dir() -> (tempfile::TempDir, PathBuf) {
    let directory = tempfile::tempdir().expect("temp dir");
    let path = directory.path().join("data");
    (directory, path)
}

/// Serves `app` (a local fake of an outside API) on 127.0.0.1 in a thread of its own for
/// the rest of the test process; its address.
pub fn serve_fake(app: axum::Router) -> SocketAddr {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the fake");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("a port for the fake");
            sender
                .send(listener.local_addr().expect("its address"))
                .expect("the test waits");
            axum::serve(listener, app).await.expect("the fake serves");
        });
    });
    receiver.recv().expect("the fake started")
}
