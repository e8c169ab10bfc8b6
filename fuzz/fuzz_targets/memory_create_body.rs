//! The JSON body of memory create must never panic: any bytes are either a valid memory
//! or a validation error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let _ = memvault_server::api::memories::parse_create_memory(body);
});
