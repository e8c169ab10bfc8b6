//! The multipart reader of the file routes (drop, upload, folder, images) must never
//! panic: any body is parts or a client error, and no file part is kept over the limit.
//! The first byte picks the per-file limit (0 to 255 bytes) so both sides of it are hit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memvault_server::api::files::{parse_form, FormPart, Read};

const BOUNDARY: &str = "fuzz-boundary-7f3a";

fuzz_target!(|data: &[u8]| {
    let Some((&limit, body)) = data.split_first() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let parsed = runtime.block_on(parse_form(
        bytes::Bytes::copy_from_slice(body),
        &format!("multipart/form-data; boundary={BOUNDARY}"),
        u64::from(limit),
        1_000,
    ));
    match parsed {
        Ok(parts) => {
            for part in parts {
                if let FormPart::File {
                    read: Read::Whole(bytes),
                    ..
                } = part
                {
                    assert!(bytes.len() as u64 <= u64::from(limit));
                }
            }
        }
        Err(error) => {
            let status = error.status().as_u16();
            assert!((400..500).contains(&status), "status {status}");
        }
    }
});
