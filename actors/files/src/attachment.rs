//! A file attached to a memory, as the memory stores it (`images` entries) and as a read
//! shows it (with a presigned URL).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The stored form of one `images` entry: where the bytes are and what they are. No URL
/// is stored: URLs are presigned on every read and expire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// The file's id; memories made from one file share it.
    pub file_id: String,
    /// The blob's path under the tenant (`files/{file_id}/{name}` or
    /// `uploads/{upload_id}/{name}`).
    pub path: String,
    pub filename: String,
    /// What the bytes are, by content (sniffed), as a MIME type.
    pub content_type: String,
    pub size: u64,
    /// Lowercase hex SHA-256 of the bytes.
    pub sha256: String,
    /// The tenant's own bucket the bytes are in (its store id); absent: the platform's
    /// storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
}

impl Attachment {
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The attachment an `images` entry stores; `None` for an entry of another shape.
    pub fn from_value(value: &Value) -> Option<Self> {
        serde_json::from_value(value.clone()).ok()
    }
}

/// One `images` entry as a read shows it: the attachment without its storage path, plus
/// a URL that downloads the exact bytes without a key until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedAttachment {
    pub file_id: String,
    pub filename: String,
    pub content_type: String,
    pub size: u64,
    pub sha256: String,
    /// `None` when the file cannot be reached now (`detail` says why).
    pub url: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}
