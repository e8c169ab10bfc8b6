//! Tenant-scoped blob keys. A key is `{tenant}/{path}`; the validation here is what keeps
//! every key inside its tenant (no `..`, no absolute path, no empty segment, no control
//! character), whatever the backend does with the bytes of a name.

use std::fmt;

use memvault_storage::TenantId;
use object_store::path::{Path as ObjectPath, PathPart};
use percent_encoding::percent_decode_str;

use crate::error::{BlobError, Result};

/// The longest relative path a key may have, in bytes: S3's 1024-byte key limit minus
/// room for the tenant id and its separator.
pub const MAX_PATH_LEN: usize = 960;

/// A validated blob key: a tenant and a relative path under it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobKey {
    tenant: TenantId,
    path: String,
}

impl BlobKey {
    /// The key of `path` (e.g. `files/2026/report.pdf`) under `tenant`.
    pub fn new(tenant: &TenantId, path: &str) -> Result<Self> {
        check_tenant(tenant)?;
        if path.is_empty() {
            return Err(BlobError::invalid_key("path is empty"));
        }
        check_relative_path(path)?;
        Ok(Self {
            tenant: tenant.clone(),
            path: path.to_owned(),
        })
    }

    /// Parses a full key, `{tenant}/{path}`, as [`BlobKey::as_string`] writes it (the HTTP
    /// layer reads it back from a presigned URL's path).
    pub fn parse(full: &str) -> Result<Self> {
        let Some((tenant, path)) = full.split_once('/') else {
            return Err(BlobError::invalid_key("key has no path after the tenant"));
        };
        Self::new(&TenantId::from_stored(tenant), path)
    }

    pub fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    /// The path relative to the tenant.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The full key, `{tenant}/{path}`.
    pub fn as_string(&self) -> String {
        format!("{}/{}", self.tenant, self.path)
    }

    /// The key's location in an object store. Each segment is percent-encoded by
    /// object_store, so a name with `#`, `%` or `?` round-trips on every backend.
    pub(crate) fn object_path(&self) -> ObjectPath {
        segments_to_path(self.tenant.as_str(), &self.path)
    }

    /// The key stored at `location`, which must have come from a listing under a
    /// tenant's prefix.
    pub(crate) fn from_object_path(location: &ObjectPath) -> Result<Self> {
        let mut segments = Vec::new();
        for part in location.parts() {
            let decoded = percent_decode_str(part.as_ref())
                .decode_utf8()
                .map_err(|error| {
                    BlobError::Backend(format!("stored name is not UTF-8: {error}"))
                })?;
            segments.push(decoded.into_owned());
        }
        let Some((tenant, path)) = segments.split_first() else {
            return Err(BlobError::Backend("stored name is empty".to_owned()));
        };
        Self::new(&TenantId::from_stored(tenant.as_str()), &path.join("/"))
    }
}

impl fmt::Display for BlobKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.tenant, self.path)
    }
}

/// What [`crate::BlobStore::list`] looks under: a tenant's whole space, or one folder of
/// it. Segments match whole: the prefix `docs` sees `docs/a` but not `docs-old/a`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobPrefix {
    tenant: TenantId,
    path: String,
}

impl BlobPrefix {
    /// Every blob of `tenant`.
    pub fn tenant(tenant: &TenantId) -> Result<Self> {
        Self::new(tenant, "")
    }

    /// The blobs under the folder `path` of `tenant`; an empty `path` is the whole tenant.
    pub fn new(tenant: &TenantId, path: &str) -> Result<Self> {
        check_tenant(tenant)?;
        if !path.is_empty() {
            check_relative_path(path)?;
        }
        Ok(Self {
            tenant: tenant.clone(),
            path: path.to_owned(),
        })
    }

    pub(crate) fn object_path(&self) -> ObjectPath {
        segments_to_path(self.tenant.as_str(), &self.path)
    }
}

fn segments_to_path(tenant: &str, path: &str) -> ObjectPath {
    let relative = path.split('/').filter(|segment| !segment.is_empty());
    std::iter::once(tenant)
        .chain(relative)
        .map(PathPart::from)
        .collect()
}

fn check_tenant(tenant: &TenantId) -> Result<()> {
    let raw = tenant.as_str();
    if raw.contains('/') {
        return Err(BlobError::invalid_key("tenant id contains '/'"));
    }
    check_segment(raw).map_err(|reason| BlobError::invalid_key(format!("tenant id {reason}")))
}

fn check_relative_path(path: &str) -> Result<()> {
    if path.len() > MAX_PATH_LEN {
        return Err(BlobError::invalid_key(format!(
            "path is longer than {MAX_PATH_LEN} bytes"
        )));
    }
    if path.starts_with('/') {
        return Err(BlobError::invalid_key("path is absolute"));
    }
    for segment in path.split('/') {
        check_segment(segment)
            .map_err(|reason| BlobError::invalid_key(format!("path segment {reason}")))?;
    }
    Ok(())
}

/// Why one `/`-free segment is refused, if it is.
fn check_segment(segment: &str) -> Result<(), &'static str> {
    if segment.is_empty() {
        return Err("is empty");
    }
    if segment == "." || segment == ".." {
        return Err("is '.' or '..'");
    }
    if segment.chars().any(char::is_control) {
        return Err("contains a control character");
    }
    // A separator on Windows; refused everywhere so a key means the same on every host.
    if segment.contains('\\') {
        return Err("contains '\\'");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant() -> TenantId {
        TenantId::from_stored("ten_abc")
    }

    #[test]
    fn a_plain_path_is_accepted_and_prints_under_its_tenant() {
        let key = BlobKey::new(&tenant(), "files/2026/report.pdf").unwrap();
        assert_eq!(key.as_string(), "ten_abc/files/2026/report.pdf");
        assert_eq!(BlobKey::parse(&key.as_string()).unwrap(), key);
    }

    #[test]
    fn escapes_and_odd_segments_are_refused() {
        for path in [
            "",
            "/etc/passwd",
            "../other/secret",
            "a/../../b",
            "a/./b",
            "a//b",
            "a/",
            "a\\b",
            "a\nb",
            "a\u{0}b",
            "a\u{85}b",
        ] {
            assert!(
                matches!(
                    BlobKey::new(&tenant(), path),
                    Err(BlobError::InvalidKey { .. })
                ),
                "{path:?} was accepted"
            );
        }
        assert!(BlobKey::new(&tenant(), &"a".repeat(MAX_PATH_LEN + 1)).is_err());
    }

    #[test]
    fn a_tenant_id_that_could_escape_is_refused() {
        for raw in ["", "..", "ten/other", "ten\u{7f}"] {
            assert!(
                BlobKey::new(&TenantId::from_stored(raw), "a").is_err(),
                "tenant {raw:?} was accepted"
            );
        }
    }

    #[test]
    fn special_characters_round_trip_through_the_object_path() {
        let key = BlobKey::new(&tenant(), "dir/a #1 [draft] 100%?.txt").unwrap();
        let location = key.object_path();
        assert_eq!(BlobKey::from_object_path(&location).unwrap(), key);
    }

    #[test]
    fn an_empty_prefix_is_the_whole_tenant_and_others_are_checked() {
        assert!(BlobPrefix::tenant(&tenant()).is_ok());
        assert!(BlobPrefix::new(&tenant(), "docs/2026").is_ok());
        assert!(BlobPrefix::new(&tenant(), "../x").is_err());
    }
}
