//! Tesseract on a machine that does not have it: the pinned Debian bookworm packages,
//! downloaded with `apt-get download` (no root needed), checked against pinned SHA-256
//! sums, unpacked with `dpkg-deb -x` into a folder of the cache, and run from there.
//!
//! - [`locate_tesseract`]: a `tesseract` on `PATH` that runs, else a copy fetched earlier.
//! - [`fetch_tesseract`]: the fetched copy, fetching it first if the cache has none.
//! - [`ensure_tesseract`]: the first, else the second. The server puts the path it
//!   returns in [`crate::Engines::tesseract`].
//! - [`tesseract_command`]: a `Command` for a program either of them returned, with the
//!   environment it needs.
//!
//! A fetched copy is the folder `{cache_dir}/tesseract-5.3.0-2/` (`usr/bin/tesseract`,
//! `usr/lib/x86_64-linux-gnu/`, `usr/share/tesseract-ocr/5/tessdata/eng.traineddata`) with
//! a manifest, [`MANIFEST`], at its root naming every package and its SHA-256. It is built
//! in a temporary folder beside it and renamed into place once it runs, so a folder under
//! that name is always whole. The program runs with `LD_LIBRARY_PATH` at its library
//! folders and `TESSDATA_PREFIX` at its tessdata folder; both are derived from the
//! program's path, so [`crate::Engines`] carries only the path.
//!
//! The four Tesseract packages are pinned by version and SHA-256. The shared libraries
//! they need (libarchive, libcurl, libgomp, libpng, libjpeg, libtiff, libwebp, ICU...) are
//! fetched only when this machine lacks them: `ldd` on the unpacked program lists what is
//! "not found", each missing library is mapped to its Debian package, and those packages
//! are downloaded at the version apt offers (apt checks them against the signed archive
//! index; they are not pinned here because Debian replaces them with every security
//! update) until nothing is missing. [`Dependencies::All`] fetches every one of them
//! instead, for a folder to copy to another bookworm machine.
//!
//! When the system's package lists are missing (a container image cleans them), apt is run
//! with private lists in `{cache_dir}/apt/` (`apt-get update` into them needs no root).
//! Only Debian 12 (bookworm) on x86_64 is pinned.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

/// The Debian version of the fetched Tesseract.
pub const TESSERACT_DEBIAN_VERSION: &str = "5.3.0-2";

/// The file at the root of a fetched copy listing its packages: one
/// `name version sha256 file` line each.
pub const MANIFEST: &str = "memvault-tesseract.txt";

/// One pinned Debian package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedPackage {
    pub name: &'static str,
    pub version: &'static str,
    /// SHA-256 of the `.deb`, hex.
    pub sha256: &'static str,
}

/// The packages of Tesseract itself (Debian bookworm, amd64; the language data is
/// architecture-independent). Measured with `apt-get download` and `sha256sum`.
pub const PINNED_PACKAGES: [PinnedPackage; 4] = [
    PinnedPackage {
        name: "tesseract-ocr",
        version: "5.3.0-2",
        sha256: "311fed91c7311cfee54c28a0f21d700377b8131a9d114628d36d2563f99e1730",
    },
    PinnedPackage {
        name: "libtesseract5",
        version: "5.3.0-2",
        sha256: "19b1719f30235eaf209866b219d4dbdd4dddd813758a8d5b9715c78c40702ff1",
    },
    PinnedPackage {
        name: "liblept5",
        version: "1.82.0-3+b3",
        sha256: "cddc18cffc38bb1839f2b5336822646b34dafc5dd40468b658d26c20e0eb97af",
    },
    PinnedPackage {
        name: "tesseract-ocr-eng",
        version: "1:4.1.0-2",
        sha256: "9242d054563262398f8cf41fbd96fcc72f9dde70db16de18539882a6cff74f9d",
    },
];

/// Every shared library the bookworm `tesseract` program loads (its whole `ldd` closure)
/// and the package that ships it; glibc's own libraries are left out, a system always has
/// them.
const LIBRARY_PACKAGES: [(&str, &str); 50] = [
    ("libtesseract.so.5", "libtesseract5"),
    ("liblept.so.5", "liblept5"),
    ("libarchive.so.13", "libarchive13"),
    ("libcurl.so.4", "libcurl4"),
    ("libstdc++.so.6", "libstdc++6"),
    ("libgcc_s.so.1", "libgcc-s1"),
    ("libgomp.so.1", "libgomp1"),
    ("libpng16.so.16", "libpng16-16"),
    ("libjpeg.so.62", "libjpeg62-turbo"),
    ("libgif.so.7", "libgif7"),
    ("libtiff.so.6", "libtiff6"),
    ("libwebpmux.so.3", "libwebpmux3"),
    ("libwebp.so.7", "libwebp7"),
    ("libopenjp2.so.7", "libopenjp2-7"),
    ("libz.so.1", "zlib1g"),
    ("libnettle.so.8", "libnettle8"),
    ("libacl.so.1", "libacl1"),
    ("liblzma.so.5", "liblzma5"),
    ("libzstd.so.1", "libzstd1"),
    ("liblz4.so.1", "liblz4-1"),
    ("libbz2.so.1.0", "libbz2-1.0"),
    ("libxml2.so.2", "libxml2"),
    ("libnghttp2.so.14", "libnghttp2-14"),
    ("libidn2.so.0", "libidn2-0"),
    ("librtmp.so.1", "librtmp1"),
    ("libssh2.so.1", "libssh2-1"),
    ("libpsl.so.5", "libpsl5"),
    ("libssl.so.3", "libssl3"),
    ("libcrypto.so.3", "libssl3"),
    ("libgssapi_krb5.so.2", "libgssapi-krb5-2"),
    ("libldap-2.5.so.0", "libldap-2.5-0"),
    ("liblber-2.5.so.0", "libldap-2.5-0"),
    ("libbrotlidec.so.1", "libbrotli1"),
    ("libbrotlicommon.so.1", "libbrotli1"),
    ("libLerc.so.4", "liblerc4"),
    ("libjbig.so.0", "libjbig0"),
    ("libdeflate.so.0", "libdeflate0"),
    ("libicuuc.so.72", "libicu72"),
    ("libicudata.so.72", "libicu72"),
    ("libunistring.so.2", "libunistring2"),
    ("libgnutls.so.30", "libgnutls30"),
    ("libhogweed.so.6", "libhogweed6"),
    ("libgmp.so.10", "libgmp10"),
    ("libkrb5.so.3", "libkrb5-3"),
    ("libk5crypto.so.3", "libk5crypto3"),
    ("libcom_err.so.2", "libcom-err2"),
    ("libkrb5support.so.0", "libkrb5support0"),
    ("libsasl2.so.2", "libsasl2-2"),
    ("libp11-kit.so.0", "libp11-kit0"),
    ("libtasn1.so.6", "libtasn1-6"),
];

/// Libraries a bookworm system always has (glibc) and so are never fetched.
const SYSTEM_LIBRARIES: [&str; 6] = [
    "libc.so.6",
    "libm.so.6",
    "libresolv.so.2",
    "libpthread.so.0",
    "libdl.so.2",
    "libffi.so.8",
];

/// Which shared libraries a fetch brings besides Tesseract's own packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dependencies {
    /// Only those this machine lacks (`ldd` says "not found"), into
    /// `{cache_dir}/tesseract-5.3.0-2/`.
    Missing,
    /// All of them (glibc aside), into `{cache_dir}/tesseract-5.3.0-2-bundled/`: a folder
    /// that runs on any bookworm system.
    All,
}

impl Dependencies {
    fn folder(self) -> String {
        match self {
            Dependencies::Missing => format!("tesseract-{TESSERACT_DEBIAN_VERSION}"),
            Dependencies::All => format!("tesseract-{TESSERACT_DEBIAN_VERSION}-bundled"),
        }
    }
}

/// Why Tesseract could not be fetched. Every message says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Nothing is pinned for this system.
    #[error(
        "tesseract cannot be fetched here: {0}; install the Debian package tesseract-ocr instead"
    )]
    Unsupported(String),
    /// A program the fetch needs (apt-get, dpkg-deb, ldd, sha256sum) failed or is missing.
    #[error("{program} failed: {reason}")]
    Tool { program: String, reason: String },
    /// A downloaded package is not the pinned one.
    #[error("{file} has SHA-256 {actual}, expected {expected}: refusing it")]
    Checksum {
        file: String,
        expected: String,
        actual: String,
    },
    /// The unpacked program still lacks libraries that no known package provides, or
    /// does not run.
    #[error("the fetched tesseract does not run: {0}")]
    Broken(String),
    /// Reading or writing the cache failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

fn io_error(context: impl Into<String>) -> impl FnOnce(io::Error) -> FetchError {
    let context = context.into();
    move |source| FetchError::Io { context, source }
}

/// The `tesseract` to use without fetching anything: the one on `PATH` when
/// `tesseract --version` runs and `--list-langs` lists English, else a copy fetched
/// earlier into `cache_dir` that does.
pub fn locate_tesseract(cache_dir: &Path) -> Option<PathBuf> {
    if let Some(program) = on_path("tesseract") {
        if tesseract_version(&program).is_some() && runs_with_english(&program) {
            return Some(program);
        }
    }
    [Dependencies::Missing, Dependencies::All]
        .into_iter()
        .map(|dependencies| fetched_program(&cache_dir.join(dependencies.folder())))
        .find(|program| runs_with_english(program))
}

/// [`locate_tesseract`], else [`fetch_tesseract`] with [`Dependencies::Missing`].
///
/// # Errors
///
/// As [`fetch_tesseract`].
pub fn ensure_tesseract(cache_dir: &Path) -> Result<PathBuf, FetchError> {
    match locate_tesseract(cache_dir) {
        Some(program) => Ok(program),
        None => fetch_tesseract(cache_dir, Dependencies::Missing),
    }
}

/// The fetched `tesseract` in `cache_dir`, fetched first when the cache has no working
/// copy, whatever the system has. Takes a few seconds (4.3 MB of packages, more for the
/// libraries a bare system lacks); blocks.
///
/// # Errors
///
/// [`FetchError::Unsupported`] off Debian-style x86_64 Linux; otherwise a tool that
/// failed (no network: `apt-get` says so), a checksum mismatch, a copy that does not
/// run, or the cache not writable.
pub fn fetch_tesseract(
    cache_dir: &Path,
    dependencies: Dependencies,
) -> Result<PathBuf, FetchError> {
    let target = cache_dir.join(dependencies.folder());
    if runs_with_english(&fetched_program(&target)) {
        return Ok(fetched_program(&target));
    }
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return Err(FetchError::Unsupported(
            "only Debian bookworm packages for x86_64 are pinned".to_owned(),
        ));
    }
    fs::create_dir_all(cache_dir)
        .map_err(io_error(format!("cannot create {}", cache_dir.display())))?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or_default();
    let staging = cache_dir.join(format!(
        ".{}.partial-{}-{nanos}",
        dependencies.folder(),
        std::process::id()
    ));
    let built = build(cache_dir, &staging, dependencies);
    let placed = built.and_then(|root| place(&root, &target));
    let _ = fs::remove_dir_all(&staging);
    placed?;
    Ok(fetched_program(&target))
}

/// A `Command` running `program` as OCR wants it: `OMP_THREAD_LIMIT=1` (two cores are
/// 7× slower with OpenMP's default threads), and for a fetched copy its libraries first
/// on `LD_LIBRARY_PATH` and `TESSDATA_PREFIX` at its language data.
pub fn tesseract_command(program: &Path) -> Command {
    let mut command = Command::new(program);
    command.env("OMP_THREAD_LIMIT", "1");
    if let Some(root) = fetched_root(program) {
        let mut library_path = std::env::join_paths(library_dirs(&root)).unwrap_or_default();
        if let Some(existing) = std::env::var_os("LD_LIBRARY_PATH").filter(|path| !path.is_empty())
        {
            library_path.push(":");
            library_path.push(existing);
        }
        command
            .env("LD_LIBRARY_PATH", library_path)
            .env("TESSDATA_PREFIX", tessdata_dir(&root));
    }
    command
}

/// The first line of `program --version` ("tesseract 5.3.0"), when it runs.
pub fn tesseract_version(program: &Path) -> Option<String> {
    let output = tesseract_command(program)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    // Tesseract 4 printed its version on stderr, 5 on stdout.
    let text = if output.stdout.is_empty() {
        output.stderr
    } else {
        output.stdout
    };
    String::from_utf8_lossy(&text)
        .lines()
        .next()
        .map(|line| line.trim().to_owned())
        .filter(|line| line.starts_with("tesseract"))
}

/// The root of a fetched copy when `program` is its `usr/bin/tesseract`.
fn fetched_root(program: &Path) -> Option<PathBuf> {
    let root = program.parent()?.parent()?.parent()?;
    root.join(MANIFEST).is_file().then(|| root.to_path_buf())
}

fn fetched_program(root: &Path) -> PathBuf {
    root.join("usr/bin/tesseract")
}

fn tessdata_dir(root: &Path) -> PathBuf {
    root.join("usr/share/tesseract-ocr/5/tessdata")
}

/// The library folders of an unpacked tree: `usr/lib/<triplet>`, `lib/<triplet>`, then
/// `usr/lib` and `lib`, those that exist.
fn library_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for base in ["usr/lib", "lib"] {
        let base = root.join(base);
        let Ok(entries) = fs::read_dir(&base) else {
            continue;
        };
        let mut triplets: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| {
                path.is_dir()
                    && path
                        .file_name()
                        .and_then(|name| name.to_str())
                        .is_some_and(|name| name.contains("-linux-gnu"))
            })
            .collect();
        triplets.sort();
        dirs.extend(triplets);
    }
    dirs.extend(
        ["usr/lib", "lib"]
            .into_iter()
            .map(|base| root.join(base))
            .filter(|path| path.is_dir()),
    );
    dirs
}

/// True when `program --list-langs` runs and lists English.
fn runs_with_english(program: &Path) -> bool {
    if !program.is_file() {
        return false;
    }
    let Ok(output) = tesseract_command(program)
        .arg("--list-langs")
        .stdin(Stdio::null())
        .output()
    else {
        return false;
    };
    output.status.success()
        && String::from_utf8_lossy(&output.stdout)
            .lines()
            .any(|line| line.trim() == "eng")
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| fs::metadata(candidate).is_ok_and(|metadata| is_executable(&metadata)))
}

#[cfg(unix)]
fn is_executable(metadata: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;

    metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(metadata: &fs::Metadata) -> bool {
    metadata.is_file()
}

/// Downloads, checks and unpacks everything into `{staging}/root`, which runs when this
/// returns it.
fn build(
    cache_dir: &Path,
    staging: &Path,
    dependencies: Dependencies,
) -> Result<PathBuf, FetchError> {
    let debs = staging.join("debs");
    let root = staging.join("root");
    for dir in [&debs, &root] {
        fs::create_dir_all(dir).map_err(io_error(format!("cannot create {}", dir.display())))?;
    }
    let apt = Apt::new(cache_dir);
    let pinned: Vec<String> = PINNED_PACKAGES
        .iter()
        .map(|package| format!("{}={}", package.name, package.version))
        .collect();
    apt.download(&pinned, &debs)?;
    let mut manifest = String::new();
    for package in PINNED_PACKAGES {
        let deb = find_deb(&debs, package.name)?;
        let actual = sha256(&deb)?;
        if actual != package.sha256 {
            return Err(FetchError::Checksum {
                file: file_name(&deb),
                expected: package.sha256.to_owned(),
                actual,
            });
        }
        unpack(&deb, &root)?;
        let _ = writeln!(
            manifest,
            "{} {} {actual} {}",
            package.name,
            package.version,
            file_name(&deb)
        );
    }
    let mut fetched: Vec<&str> = PINNED_PACKAGES.iter().map(|package| package.name).collect();
    // Each round fetches the packages of the libraries ldd cannot find; a library found
    // only now can need others, hence rounds.
    for round in 0..8 {
        let wanted: Vec<&str> = if dependencies == Dependencies::All && round == 0 {
            LIBRARY_PACKAGES
                .iter()
                .map(|(_, package)| *package)
                .collect()
        } else {
            let missing = missing_libraries(&root)?;
            if missing.is_empty() {
                break;
            }
            let mut packages = Vec::new();
            for library in &missing {
                let package = LIBRARY_PACKAGES
                    .iter()
                    .find(|(soname, _)| soname == library)
                    .map(|(_, package)| *package)
                    .ok_or_else(|| {
                        FetchError::Broken(format!(
                            "{library} is missing and no known package provides it"
                        ))
                    })?;
                packages.push(package);
            }
            packages
        };
        let mut new: Vec<&str> = wanted
            .into_iter()
            .filter(|package| !fetched.contains(package))
            .collect();
        new.sort_unstable();
        new.dedup();
        if new.is_empty() {
            let missing = missing_libraries(&root)?;
            return Err(FetchError::Broken(format!(
                "still missing after fetching their packages: {}",
                missing.join(", ")
            )));
        }
        let names: Vec<String> = new.iter().map(|package| (*package).to_owned()).collect();
        apt.download(&names, &debs)?;
        for package in &new {
            let deb = find_deb(&debs, package)?;
            let hash = sha256(&deb)?;
            unpack(&deb, &root)?;
            let version = deb_version(&deb);
            let _ = writeln!(manifest, "{package} {version} {hash} {}", file_name(&deb));
        }
        fetched.extend(new);
    }
    let missing = missing_libraries(&root)?;
    if !missing.is_empty() {
        return Err(FetchError::Broken(format!(
            "libraries still missing: {}",
            missing.join(", ")
        )));
    }
    let manifest_path = root.join(MANIFEST);
    fs::write(&manifest_path, manifest).map_err(io_error(format!(
        "cannot write {}",
        manifest_path.display()
    )))?;
    let program = fetched_program(&root);
    if !runs_with_english(&program) {
        let reason = tesseract_command(&program)
            .arg("--list-langs")
            .stdin(Stdio::null())
            .output()
            .map(|output| String::from_utf8_lossy(&output.stderr).trim().to_owned())
            .unwrap_or_else(|error| error.to_string());
        return Err(FetchError::Broken(format!(
            "`tesseract --list-langs` does not list eng: {reason}"
        )));
    }
    Ok(root)
}

/// Renames the built tree to `target`; a working copy another process placed first wins.
fn place(root: &Path, target: &Path) -> Result<(), FetchError> {
    if target.exists() {
        if runs_with_english(&fetched_program(target)) {
            return Ok(());
        }
        fs::remove_dir_all(target).map_err(io_error(format!(
            "cannot remove the broken {}",
            target.display()
        )))?;
    }
    match fs::rename(root, target) {
        Ok(()) => Ok(()),
        Err(_) if runs_with_english(&fetched_program(target)) => Ok(()),
        Err(error) => Err(io_error(format!(
            "cannot move the fetched tesseract to {}",
            target.display()
        ))(error)),
    }
}

/// `apt-get`, with the system's package lists or, when those lack a package, private ones
/// in the cache.
struct Apt {
    private: PathBuf,
}

impl Apt {
    fn new(cache_dir: &Path) -> Self {
        Apt {
            private: cache_dir.join("apt"),
        }
    }

    fn private_options(&self) -> Vec<String> {
        vec![
            "-o".to_owned(),
            format!("Dir::State::Lists={}", self.private.join("lists").display()),
            "-o".to_owned(),
            format!("Dir::Cache={}", self.private.join("cache").display()),
        ]
    }

    /// `apt-get download` of `packages` into `dir`: with the system's lists, else with
    /// private lists (refreshed by `apt-get update` when they are missing or lack a
    /// package).
    fn download(&self, packages: &[String], dir: &Path) -> Result<(), FetchError> {
        let download = |private: bool| {
            let mut command = Command::new("apt-get");
            if private {
                command.args(self.private_options());
            }
            run(command.arg("download").args(packages).current_dir(dir)).map(|_| ())
        };
        let system_error = match download(false) {
            Ok(()) => return Ok(()),
            Err(error) => error,
        };
        if self.private.join("lists/lock").exists() && download(true).is_ok() {
            return Ok(());
        }
        self.update().map_err(|update_error| FetchError::Tool {
            program: "apt-get".to_owned(),
            reason: format!(
                "download with the system's package lists: {system_error}; update of private lists: {update_error}"
            ),
        })?;
        download(true)
    }

    fn update(&self) -> Result<(), FetchError> {
        for dir in [
            self.private.join("lists/partial"),
            self.private.join("cache/archives/partial"),
        ] {
            fs::create_dir_all(&dir)
                .map_err(io_error(format!("cannot create {}", dir.display())))?;
        }
        run(Command::new("apt-get")
            .args(self.private_options())
            .arg("update"))
        .map(|_| ())
    }
}

/// Runs a tool; its stderr's end is the reason when it fails.
fn run(command: &mut Command) -> Result<Output, FetchError> {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|error| FetchError::Tool {
            program: program.clone(),
            reason: format!("cannot run it: {error}"),
        })?;
    if output.status.success() {
        return Ok(output);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let reason: Vec<&str> = stderr
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with("W: "))
        .collect();
    let start = reason.len().saturating_sub(3);
    Err(FetchError::Tool {
        program,
        reason: format!(
            "{} ({})",
            reason.get(start..).unwrap_or_default().join("; "),
            output.status
        ),
    })
}

/// The `.deb` of `package` in `dir` (`{package}_{version}_{arch}.deb`).
fn find_deb(dir: &Path, package: &str) -> Result<PathBuf, FetchError> {
    let prefix = format!("{package}_");
    let entries = fs::read_dir(dir).map_err(io_error(format!("cannot list {}", dir.display())))?;
    entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| {
            let name = file_name(path);
            name.starts_with(&prefix) && name.ends_with(".deb")
        })
        .ok_or_else(|| FetchError::Tool {
            program: "apt-get download".to_owned(),
            reason: format!("it gave no .deb for {package}"),
        })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The version in a `.deb`'s name, with the epoch's `%3a` decoded.
fn deb_version(deb: &Path) -> String {
    file_name(deb)
        .split('_')
        .nth(1)
        .unwrap_or_default()
        .replace("%3a", ":")
}

fn sha256(path: &Path) -> Result<String, FetchError> {
    let output = run(Command::new("sha256sum").arg(path))?;
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .map(str::to_owned)
        .ok_or_else(|| FetchError::Tool {
            program: "sha256sum".to_owned(),
            reason: "no sum in its output".to_owned(),
        })
}

fn unpack(deb: &Path, root: &Path) -> Result<(), FetchError> {
    run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(root)).map(|_| ())
}

/// The libraries `ldd` cannot find for the unpacked program, with its library folders
/// on `LD_LIBRARY_PATH`; glibc's are never reported missing.
fn missing_libraries(root: &Path) -> Result<Vec<String>, FetchError> {
    let library_path = std::env::join_paths(library_dirs(root)).unwrap_or_default();
    let output = run(Command::new("ldd")
        .arg(fetched_program(root))
        .env("LD_LIBRARY_PATH", library_path))?;
    let mut missing: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.contains("=> not found"))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|soname| !SYSTEM_LIBRARIES.contains(soname))
        .map(str::to_owned)
        .collect();
    missing.sort();
    missing.dedup();
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fetched_program_is_known_by_its_manifest() {
        let dir = std::env::temp_dir().join(format!("memvault-fetch-root-{}", std::process::id()));
        let program = fetched_program(&dir);
        assert_eq!(fetched_root(&program), None);
        fs::create_dir_all(dir.join("usr/lib/x86_64-linux-gnu")).unwrap();
        fs::write(dir.join(MANIFEST), "").unwrap();
        assert_eq!(fetched_root(&program), Some(dir.clone()));
        assert_eq!(
            library_dirs(&dir),
            vec![dir.join("usr/lib/x86_64-linux-gnu"), dir.join("usr/lib")]
        );
        let command = tesseract_command(&program);
        let envs: Vec<_> = command.get_envs().collect();
        assert!(envs.iter().any(|(key, _)| *key == "TESSDATA_PREFIX"));
        assert!(envs.iter().any(|(key, _)| *key == "OMP_THREAD_LIMIT"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn deb_versions_decode_the_epoch() {
        assert_eq!(
            deb_version(Path::new("/x/tesseract-ocr-eng_1%3a4.1.0-2_all.deb")),
            "1:4.1.0-2"
        );
    }
}
