//! The edge's part of files: the blob backend from `[blobs]` (with the signing secret of
//! memvault's own presigned URLs, kept in the data dir), the worker program (this binary,
//! `memvault ingest-worker`), and the engines workers drive, located or fetched (pinned)
//! once, on first use.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use memvault_blobs::{BlobBackendConfig, S3Config, UrlSigner};
use memvault_core::BlobBackend;
use memvault_files::{EngineSource, FileSettings, WorkerProgram};
use memvault_ingest::worker::WorkerLimits;
use memvault_ingest::Engines;

use crate::config::Config;

/// The public address: `server.public_url`, else `http://{bind}`.
pub fn public_url(config: &Config) -> String {
    config
        .server
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", config.server.bind))
}

/// The blob store `[blobs]` names, and the signer of memvault's own URLs.
pub fn blob_backend(config: &Config) -> Result<BlobBackend, String> {
    // Several nodes sign and check one another's URLs: the secret comes from the
    // encryption key they share (config validation requires it), not a file of each.
    let secret = match (&config.security.encryption_key, config.cluster.enabled()) {
        (Some(key), true) => {
            use sha2::Digest;
            sha2::Sha256::digest(format!("memvault blob URLs\n{key}").as_bytes()).to_vec()
        }
        _ => load_or_create_secret(&config.server.data_dir.join("blob-url.key"))?,
    };
    let signer = UrlSigner::new(&public_url(config), secret).map_err(|error| error.to_string())?;
    let blobs = &config.blobs;
    let backend = match blobs.backend.as_str() {
        "local" => BlobBackendConfig::Local {
            root: blobs
                .root
                .clone()
                .unwrap_or_else(|| config.server.data_dir.join("blobs")),
        },
        "s3" => BlobBackendConfig::S3(S3Config {
            endpoint_url: blobs.endpoint_url.clone(),
            bucket: blobs
                .bucket
                .clone()
                .ok_or("blobs.bucket is required for s3")?,
            region: blobs.region.clone(),
            access_key: blobs
                .access_key
                .clone()
                .ok_or("blobs.access_key is required for s3")?,
            secret_key: blobs
                .secret_key
                .clone()
                .ok_or("blobs.secret_key is required for s3")?,
            force_path_style: blobs.force_path_style,
        }),
        other => return Err(format!("blobs.backend must be local or s3, got '{other}'")),
    };
    let store = memvault_blobs::open_blob_store(&backend, signer.clone())
        .map_err(|error| error.to_string())?;
    Ok(BlobBackend {
        store,
        signer,
        allow_private_targets: blobs.allow_private_targets,
    })
}

/// 32 random bytes kept in `path` (created on first start, readable by the owner only).
fn load_or_create_secret(path: &Path) -> Result<Vec<u8>, String> {
    if let Ok(text) = std::fs::read_to_string(path) {
        return hex::decode(text.trim()).map_err(|error| format!("{}: {error}", path.display()));
    }
    use rand::RngCore;
    let mut secret = vec![0u8; 32];
    rand::thread_rng().fill_bytes(&mut secret);
    std::fs::write(path, hex::encode(&secret))
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    Ok(secret)
}

/// The file settings: limits from `[files]` and `[blobs]`, this binary as the worker,
/// and the engines.
pub fn file_settings(config: &Config) -> FileSettings {
    let files = &config.files;
    let worker = files
        .worker_program
        .clone()
        .or_else(|| std::env::current_exe().ok())
        .map(|program| WorkerProgram {
            program,
            args: vec!["ingest-worker".to_owned()],
        });
    let cache = files
        .engine_cache_dir
        .clone()
        .or_else(|| config.embedding.cache_dir.clone())
        .unwrap_or_else(memvault_wheels::default_cache_dir);
    FileSettings {
        url_expiry: Duration::from_secs(config.blobs.url_expiry_secs.max(1)),
        workers: files.workers.max(1),
        worker,
        worker_limits: WorkerLimits {
            memory_bytes: files.worker_memory_mib.max(64) * 1024 * 1024,
            cpu_seconds: files.worker_cpu_secs.max(1),
            wall_clock: Duration::from_secs(files.worker_wall_secs.max(1)),
        },
        engines: engine_source(cache, config.embedding.python.clone(), files.fetch_engines),
        item_deadline: Duration::from_secs(files.item_deadline_secs.max(1)),
        transcription: files.transcription_base_url.clone().map(|base_url| {
            memvault_files::TranscriptionEndpoint {
                base_url,
                model: files.transcription_model.clone(),
                api_key: std::env::var(&files.transcription_api_key_env)
                    .ok()
                    .filter(|key| !key.is_empty()),
                timeout: Duration::from_secs(files.worker_wall_secs.max(30)),
            }
        }),
        vision: files
            .vision_base_url
            .clone()
            .map(|base_url| memvault_files::VisionEndpoint {
                base_url,
                model: files.vision_model.clone(),
                api_key: std::env::var(&files.vision_api_key_env)
                    .ok()
                    .filter(|key| !key.is_empty()),
                timeout: Duration::from_secs(120),
            }),
        ..FileSettings::default()
    }
}

/// Finds each engine once (fetching the pinned ones when allowed) and remembers what it
/// found; a failed fetch is logged once and not retried until restart.
fn engine_source(cache: PathBuf, python: String, fetch: bool) -> EngineSource {
    let found: Arc<Mutex<Option<Engines>>> = Arc::new(Mutex::new(None));
    Arc::new(move || {
        let mut slot = found.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(engines) = slot.as_ref() {
            return engines.clone();
        }
        let engines = locate_engines(&cache, &python, fetch);
        *slot = Some(engines.clone());
        engines
    })
}

fn locate_engines(cache: &Path, python: &str, fetch: bool) -> Engines {
    let pdfium = if fetch {
        memvault_ingest::fetch::ensure_pdfium(cache, python)
            .map_err(|error| tracing::warn!(%error, "pdfium is not available; PDFs are read by the pure-Rust fallback"))
            .ok()
    } else {
        None
    };
    let tesseract = if fetch {
        memvault_ingest::tesseract_fetch::ensure_tesseract(cache)
            .map_err(|error| tracing::warn!(%error, "Tesseract is not available; images and scanned pages are stored without OCR"))
            .ok()
    } else {
        memvault_ingest::tesseract_fetch::locate_tesseract(cache)
    };
    let moonshine = if fetch {
        memvault_speech::ensure_moonshine(cache, python)
            .map_err(|error| tracing::warn!(%error, "the Moonshine model is not available; audio is stored without a transcript"))
            .ok()
    } else {
        None
    };
    tracing::info!(?pdfium, ?tesseract, ?moonshine, "file engines located");
    Engines {
        pdfium,
        tesseract,
        moonshine,
    }
}
