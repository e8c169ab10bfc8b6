//! memvault-s3-test-server, for tests: a real S3-compatible server, [s3s] with its
//! file-system backend [s3s_fs] over a temporary directory, on `127.0.0.1:0`, with
//! SigV4 verification on (one fixed access key, [`ACCESS_KEY`]/[`SECRET_KEY`]). Requests
//! and presigned URLs with a wrong, tampered or expired signature are refused the way S3
//! refuses them.
//!
//! The server runs on a thread and runtime of its own, so blocking tests and tests with
//! their own runtimes can both use it; it stops when the value is dropped.
//!
//! ```ignore
//! let server = S3TestServer::start();
//! let bucket = server.bucket("memvault"); // created; its address and credentials
//! // an S3 client (memvault's `S3Config`) with path-style addressing takes it from here
//! ```

use std::net::SocketAddr;
use std::path::Path;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnectionBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tokio::sync::oneshot;

/// A bucket of the server, as a client (path style) needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    /// `http://127.0.0.1:{port}`.
    pub endpoint_url: String,
    pub bucket: String,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
}

/// The one access key the server accepts.
pub const ACCESS_KEY: &str = "memvault-test-access";
/// Its secret.
pub const SECRET_KEY: &str = "memvault-test-secret-0123456789abcdef";
/// The region configs name (s3s takes the one a request is signed for).
pub const REGION: &str = "us-east-1";

/// A running server; stopped on drop (its directory removed).
pub struct S3TestServer {
    endpoint: String,
    root: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl S3TestServer {
    /// Starts a server over a fresh temporary directory, with no bucket yet.
    ///
    /// # Panics
    /// When the directory, the runtime or the listener cannot be made (a test setup
    /// failure).
    pub fn start() -> Self {
        let root = tempfile::tempdir().expect("a temporary directory for the S3 server");
        let filesystem = s3s_fs::FileSystem::new(root.path()).expect("the S3 server's root");
        let service = {
            let mut builder = S3ServiceBuilder::new(filesystem);
            builder.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
            builder.build()
        };
        let (address_sender, address_receiver) = mpsc::channel::<SocketAddr>();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("s3-test-server".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .expect("the S3 server's runtime");
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                        .await
                        .expect("the S3 server's listener");
                    address_sender
                        .send(listener.local_addr().expect("the S3 server's address"))
                        .expect("the address is awaited");
                    let connections = ConnectionBuilder::new(TokioExecutor::new());
                    let mut stopped = std::pin::pin!(stopped);
                    loop {
                        let socket = tokio::select! {
                            accepted = listener.accept() => match accepted {
                                Ok((socket, _)) => socket,
                                Err(_) => continue,
                            },
                            _ = stopped.as_mut() => break,
                        };
                        let connection = connections
                            .serve_connection(TokioIo::new(socket), service.clone())
                            .into_owned();
                        tokio::spawn(async move {
                            let _ = connection.await;
                        });
                    }
                });
                // Open connections are cut; file writes in flight get a moment to finish.
                runtime.shutdown_timeout(Duration::from_secs(2));
            })
            .expect("the S3 server's thread");
        let address = address_receiver
            .recv_timeout(Duration::from_secs(30))
            .expect("the S3 server did not start");
        Self {
            endpoint: format!("http://{address}"),
            root,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:{port}`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The directory the server keeps its buckets in (`{root}/{bucket}/{key}`).
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// Creates bucket `name` (idempotent) and returns it with the server's credentials.
    ///
    /// # Panics
    /// When the bucket's directory cannot be made.
    pub fn bucket(&self, name: &str) -> Bucket {
        // s3s-fs keeps a bucket as a directory of its root.
        std::fs::create_dir_all(self.root.path().join(name)).expect("the bucket's directory");
        self.config(name, SECRET_KEY)
    }

    /// `bucket` on this server, signed with `secret_key` (a wrong one to test refusals).
    pub fn config(&self, bucket: &str, secret_key: &str) -> Bucket {
        Bucket {
            endpoint_url: self.endpoint.clone(),
            bucket: bucket.to_owned(),
            region: REGION.to_owned(),
            access_key: ACCESS_KEY.to_owned(),
            secret_key: secret_key.to_owned(),
        }
    }
}

impl Drop for S3TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for S3TestServer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("S3TestServer")
            .field("endpoint", &self.endpoint)
            .field("root", &self.root.path())
            .finish()
    }
}
