//! Bytes to text: byte-order marks, UTF-16, and a Windows-1252 fallback for legacy 8-bit
//! text; and the test the sniffer uses to call bytes "text" at all.

use encoding_rs::{UTF_16BE, UTF_16LE, WINDOWS_1252};

/// Decodes text that is known to be text: BOM first, then UTF-8, then Windows-1252 (which
/// maps every byte, so nothing is lost and nothing fails).
pub(crate) fn decode_text(bytes: &[u8]) -> String {
    if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        return String::from_utf8_lossy(rest).into_owned();
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return UTF_16LE.decode_without_bom_handling(rest).0.into_owned();
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return UTF_16BE.decode_without_bom_handling(rest).0.into_owned();
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => WINDOWS_1252
            .decode_without_bom_handling(bytes)
            .0
            .into_owned(),
    }
}

/// UTF-8 with replacement characters, for XML and HTML inside containers (which declare
/// UTF-8 in practice); a UTF-8 BOM is dropped.
pub(crate) fn decode_lossy(bytes: &[u8]) -> String {
    let without_bom = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return decode_text(bytes);
    }
    String::from_utf8_lossy(without_bom).into_owned()
}

/// Whether the first bytes look like text: a UTF-16 BOM, or no NUL and few control
/// characters. Only a prefix is examined; a UTF-8 sequence cut by the prefix end is fine.
pub(crate) fn looks_like_text(bytes: &[u8]) -> bool {
    if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return true;
    }
    let prefix = bytes.get(..8192).unwrap_or(bytes);
    if prefix.contains(&0) {
        return false;
    }
    let control_bytes = prefix
        .iter()
        .filter(|&&byte| byte < 0x20 && !matches!(byte, b'\t' | b'\n' | b'\r' | 0x0C | 0x1B))
        .count();
    control_bytes * 20 <= prefix.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_boms_utf8_and_latin1() {
        assert_eq!(decode_text(b"\xEF\xBB\xBFcaf\xC3\xA9"), "café");
        assert_eq!(decode_text(b"\xFF\xFEh\0i\0"), "hi");
        assert_eq!(decode_text(b"\xFE\xFF\0h\0i"), "hi");
        assert_eq!(decode_text(b"caf\xE9 cr\xE8me"), "café crème");
    }

    #[test]
    fn binary_is_not_text() {
        assert!(looks_like_text(b"plain words\n"));
        assert!(!looks_like_text(b"\x00\x01\x02binary"));
        assert!(!looks_like_text(&[1u8; 100]));
    }
}
