//! Where the Moonshine model and library come from.
//!
//! Model hubs are not reachable where memvault runs, but package registries are: Moonshine
//! AI's own wheel `moonshine-voice==0.0.4` carries the tiny-en model (`.ort` files and the
//! tokenizer), `libmoonshine.so` with its C API, and the libraries it needs (onnxruntime,
//! the TEN voice-activity detector). `memvault-wheels` fetches it with a hash pin and
//! unzips the members below at their paths in the wheel (the library's RPATH,
//! `$ORIGIN/../moonshine_voice.libs`, finds its neighbours that way), each checked against
//! its pinned SHA-256, into a cache folder that appears whole by one rename.

use std::path::{Path, PathBuf};

use memvault_wheels::{ensure_wheel_members, FetchError, WheelArtifact, WheelMember};

use crate::SpeechError;

/// SHA-256 of `moonshine_voice-0.0.4-py3-none-manylinux_2_17_x86_64.manylinux_2_35_x86_64.whl`.
pub const WHEEL_SHA256: &str = "cf8bdc1706380af4a48294526651c9393af6bf369f117a68b1ffee3e708dc21b";
/// The cache sub-folder, named after the wheel's hash so a new pin never reuses old files.
pub const CACHE_ENTRY: &str = "moonshine-tiny-en-cf8bdc17";

pub(crate) const LIBRARY: &str = "moonshine_voice/libmoonshine.so";
pub(crate) const MODEL: &str = "moonshine_voice/assets/tiny-en";

/// The wheel and what is taken from it (the platform flag makes pip pick the one x86-64
/// wheel whatever the host's glibc is; the hash pin refuses anything else).
pub(crate) const MOONSHINE: WheelArtifact = WheelArtifact {
    requirement: "moonshine-voice==0.0.4",
    wheel_sha256: WHEEL_SHA256,
    platform: Some("manylinux_2_35_x86_64"),
    arch: Some("x86_64"),
    python_abi: None,
    members: &[
        WheelMember {
            path_in_wheel: LIBRARY,
            file_name: LIBRARY,
            sha256: "4b42f4bc045d4eea30401d40fde5d21844af50af8a3e648285540fd4173d56fe",
        },
        WheelMember {
            path_in_wheel: "moonshine_voice.libs/libbin-tokenizer-cd6f7ee3.so",
            file_name: "moonshine_voice.libs/libbin-tokenizer-cd6f7ee3.so",
            sha256: "8b2bf1b40a8309cc75c1ecee85efda84dfbb9878bcb54d0e9c5872e63e98aa2d",
        },
        WheelMember {
            path_in_wheel: "moonshine_voice.libs/libmoonshine-utils-9aea7953.so",
            file_name: "moonshine_voice.libs/libmoonshine-utils-9aea7953.so",
            sha256: "3e06928508d02cf112d7de190f3f6cc5a62f8cb48d9f0cdb7298d9f1dfa36384",
        },
        WheelMember {
            path_in_wheel: "moonshine_voice.libs/libonnxruntime-13ab8084.so.1",
            file_name: "moonshine_voice.libs/libonnxruntime-13ab8084.so.1",
            sha256: "be933252dc03856d95fa23cddf31551f92792aa0770eed90b46a6f156f4bdf9e",
        },
        WheelMember {
            path_in_wheel: "moonshine_voice.libs/libort-utils-2f3f7114.so",
            file_name: "moonshine_voice.libs/libort-utils-2f3f7114.so",
            sha256: "4180c3f349ae1c7b1f1e505099cc68562d94044d6df7c38b93ac1c5d6e9a3f2f",
        },
        WheelMember {
            path_in_wheel: "moonshine_voice.libs/libten_vad-8eeefc7c.so",
            file_name: "moonshine_voice.libs/libten_vad-8eeefc7c.so",
            sha256: "2a05ad760f47fbaf04e16cd3e9af8efcc02fd462e20df7fb9963ab6168fd21bc",
        },
        WheelMember {
            path_in_wheel: "moonshine_voice/assets/tiny-en/encoder_model.ort",
            file_name: "moonshine_voice/assets/tiny-en/encoder_model.ort",
            sha256: "e091ae52fc2a912197af8f7b7ae2e8365b656ff58463313e0660cce59d9e81d3",
        },
        WheelMember {
            path_in_wheel: "moonshine_voice/assets/tiny-en/decoder_model_merged.ort",
            file_name: "moonshine_voice/assets/tiny-en/decoder_model_merged.ort",
            sha256: "b40193912d8f4af041f2f3e9f7ff23d45b63a1c15a9c7d35fcbebeab3c4273b2",
        },
        WheelMember {
            path_in_wheel: "moonshine_voice/assets/tiny-en/tokenizer.bin",
            file_name: "moonshine_voice/assets/tiny-en/tokenizer.bin",
            sha256: "6884b35fd6377d4c4d32336a0bc152f36b64d1e45b6503683cdc238250a8472d",
        },
        WheelMember {
            path_in_wheel: "moonshine_voice-0.0.4.dist-info/licenses/LICENSE",
            file_name: "moonshine_voice-0.0.4.dist-info/licenses/LICENSE",
            sha256: "5da20e09cad096fb153b6c80b26c270027f9601285c498e571fc74fee5ab7157",
        },
    ],
    cache_entry: CACHE_ENTRY,
};

/// Returns `{cache_dir}/moonshine-tiny-en-cf8bdc17`, holding the Moonshine library and the
/// tiny-en model, downloading and verifying them on first use with `python -m pip`.
///
/// # Errors
///
/// [`SpeechError::Fetch`] when pip cannot be run or fails (no network, no registry), a
/// member is missing from the wheel or does not match its pinned hash, or the cache folder
/// cannot be written. Nothing partial is left in the cache.
pub fn ensure_moonshine(cache_dir: &Path, python: &str) -> Result<PathBuf, SpeechError> {
    ensure_wheel_members(&MOONSHINE, cache_dir, python).map_err(fetch_error)
}

/// Every member is present (hashes were checked when the folder was made; a rename made
/// it appear whole).
pub(crate) fn check_complete(root: &Path) -> Result<(), SpeechError> {
    memvault_wheels::check_complete(&MOONSHINE, root).map_err(fetch_error)
}

fn fetch_error(error: FetchError) -> SpeechError {
    SpeechError::Fetch(error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_python_is_a_clear_fetch_error_and_leaves_nothing() {
        let directory = tempfile::tempdir().unwrap();
        let error = ensure_moonshine(directory.path(), "/nonexistent/python").unwrap_err();
        if std::env::consts::ARCH != "x86_64" {
            return;
        }
        assert!(error.to_string().contains("/nonexistent/python"), "{error}");
        let left: Vec<_> = std::fs::read_dir(directory.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn an_incomplete_folder_is_not_complete() {
        let directory = tempfile::tempdir().unwrap();
        let error = check_complete(directory.path()).unwrap_err();
        assert!(error.to_string().contains("libmoonshine.so"), "{error}");
    }
}
