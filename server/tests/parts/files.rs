use bytes::Bytes;
use proptest::prelude::*;

use memvault_server::api::files::*;
use memvault_server::error::ApiResult;

const BOUNDARY: &str = "fuzz-boundary-7f3a";

fn parse(body: Vec<u8>, limit: u64) -> ApiResult<Vec<FormPart>> {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(parse_form(
            Bytes::from(body),
            &format!("multipart/form-data; boundary={BOUNDARY}"),
            limit,
            64,
        ))
}

fn part(headers: &str, body: &[u8]) -> Vec<u8> {
    let mut bytes = format!("--{BOUNDARY}\r\n{headers}\r\n\r\n").into_bytes();
    bytes.extend_from_slice(body);
    bytes.extend_from_slice(b"\r\n");
    bytes
}

fn end() -> Vec<u8> {
    format!("--{BOUNDARY}--\r\n").into_bytes()
}

#[test]
fn files_fields_and_a_file_over_the_limit_are_told_apart() {
    let mut body = part(
        "Content-Disposition: form-data; name=\"text\"",
        b"the memory's text",
    );
    body.extend(part(
        "Content-Disposition: form-data; name=\"files\"; filename=\"a.txt\"\r\n\
         Content-Type: text/plain",
        b"small",
    ));
    body.extend(part(
        "Content-Disposition: form-data; name=\"files\"; filename=\"big.bin\"",
        &[7u8; 40],
    ));
    body.extend(part(
        "Content-Disposition: form-data; name=\"other\"; filename=\"named.txt\"",
        b"only files and file are file parts",
    ));
    body.extend(end());
    let parts = parse(body, 32).unwrap();
    assert_eq!(parts.len(), 4, "{parts:?}");
    assert!(
        matches!(&parts[0], FormPart::Field { name, text } if name == "text" && text == "the memory's text")
    );
    assert!(matches!(
        &parts[1],
        FormPart::File { filename, declared: Some(declared), read: Read::Whole(bytes) }
            if filename == "a.txt" && declared == "text/plain" && bytes.as_ref() == b"small"
    ));
    assert!(matches!(
        &parts[2],
        FormPart::File {
            read: Read::TooLarge(40),
            ..
        }
    ));
    // A file name does not make a part a file: it is a field, which no form takes.
    assert!(matches!(&parts[3], FormPart::Field { name, .. } if name == "other"));
}

#[test]
fn malformed_bodies_are_client_errors() {
    for body in [
        b"not multipart at all".to_vec(),
        format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nno end")
            .into_bytes(),
        part("Content-Type: text/plain", b"a part with no disposition"),
        Vec::new(),
    ] {
        match parse(body.clone(), 1024) {
            Ok(_) => {}
            Err(error) => {
                let status = error.status().as_u16();
                assert!(
                    (400..500).contains(&status),
                    "{status} for {:?}",
                    String::from_utf8_lossy(&body)
                );
            }
        }
    }
    // A field that is not UTF-8 is read lossily, not refused.
    let mut body = part(
        "Content-Disposition: form-data; name=\"text\"",
        &[b'o', b'k', 0xff],
    );
    body.extend(end());
    let parts = parse(body, 1024).unwrap();
    assert!(matches!(&parts[0], FormPart::Field { text, .. } if text.starts_with("ok")));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Any bytes after a boundary: parts or a 4xx, never a panic or a 5xx, and no
    /// file kept over the limit.
    #[test]
    fn the_reader_never_panics_and_never_keeps_more_than_the_limit(
        noise in prop::collection::vec(any::<u8>(), 0..512),
        headers in "[ -~]{0,80}",
        limit in 0u64..64,
    ) {
        let mut body = format!("--{BOUNDARY}\r\n{headers}\r\n\r\n").into_bytes();
        body.extend_from_slice(&noise);
        match parse(body, limit) {
            Ok(parts) => {
                for part in parts {
                    if let FormPart::File { read: Read::Whole(bytes), .. } = part {
                        prop_assert!(bytes.len() as u64 <= limit);
                    }
                }
            }
            Err(error) => {
                let status = error.status().as_u16();
                prop_assert!((400..500).contains(&status), "{}", status);
            }
        }
    }
}
