//! pdfium from its pinned PyPI wheel, fetched once into the cache by the parent process
//! (a worker only uses the path it is given, see [`crate::Engines`]); how a pinned wheel
//! is fetched and checked is `memvault-wheels`'.

use std::path::{Path, PathBuf};

pub use memvault_wheels::{default_cache_dir, FetchError};
use memvault_wheels::{ensure_wheel_members, WheelArtifact, WheelMember};

/// pdfium, Google's PDF library (Apache-2.0, with BSD-3-Clause parts; the wheel's
/// `dist-info/licenses` lists the bundled third-party notices: FreeType, ICU, libjpeg-turbo,
/// libpng, OpenJPEG, lcms, zlib...), as `libpdfium.so` (8.3 MB, pdfium build 159.0.8149,
/// a pypdfium2 "sourcebuild") from the manylinux x86_64 wheel of `pypdfium2==5.15.2`
/// (4.0 MB; pypdfium2 itself is Apache-2.0/BSD-3-Clause). Bound at run time by
/// `pdfium-render` (API 8125; text and rendering checked against this build).
pub const PDFIUM: WheelArtifact = WheelArtifact {
    requirement: "pypdfium2==5.15.2",
    wheel_sha256: "dc31aea5b0fb9fefc9b537a65f4113980b2c40798445736a7e6565bc85161e37",
    platform: Some("manylinux_2_17_x86_64"),
    arch: Some("x86_64"),
    python_abi: None,
    members: &[WheelMember {
        path_in_wheel: "pypdfium2_raw/libpdfium.so",
        file_name: PDFIUM_LIBRARY,
        sha256: "c76dc0f7839644bfa7c3e3107a6068df714e339c861bb7d4519907b821d427f9",
    }],
    cache_entry: "pdfium-c76dc0f7",
};

/// The file name of pdfium in [`PDFIUM`]'s cache folder.
pub const PDFIUM_LIBRARY: &str = "libpdfium.so";

/// `libpdfium.so` in `cache_dir`, fetched from [`PDFIUM`] on first use: the path to put in
/// [`crate::Engines::pdfium`].
///
/// # Errors
///
/// As [`ensure_wheel_members`].
pub fn ensure_pdfium(cache_dir: &Path, python: &str) -> Result<PathBuf, FetchError> {
    Ok(ensure_wheel_members(&PDFIUM, cache_dir, python)?.join(PDFIUM_LIBRARY))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_complete_cache_entry_is_used_without_fetching() {
        let cache =
            std::env::temp_dir().join(format!("memvault-pdfium-fetch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&cache);
        let entry = cache.join(PDFIUM.cache_entry);
        std::fs::create_dir_all(&entry).unwrap();
        std::fs::write(entry.join(PDFIUM_LIBRARY), b"not really").unwrap();
        if std::env::consts::ARCH == "x86_64" {
            let path = ensure_pdfium(&cache, "/nonexistent/python").unwrap();
            assert_eq!(path, entry.join(PDFIUM_LIBRARY));
        }
        std::fs::remove_dir_all(&cache).unwrap();
    }
}
