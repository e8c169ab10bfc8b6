//! The extraction worker of this crate's tests: [`serve_worker`] on stdin and stdout, as
//! `memvault ingest-worker` runs it, plus faults on demand. A binary of this package
//! only, which `cargo test` builds for its tests; the server depends on the library and
//! never builds it.
//!
//! `--fault NAME` picks a fault (an argument, so a test's [`Worker`] carries it in its
//! `args` and no environment is shared between tests). It is injected in place of the
//! extraction, so after the request is read and the limits are set, as a hostile file
//! would hit them:
//!
//! [`Worker`]: memvault_ingest::worker::Worker
//!
//! - `panic`: panics; `abort`: aborts (SIGABRT); `overflow`: recurses until the stack
//!   overflows;
//! - `hang`: sleeps forever (only the wall clock stops it); `spin`: burns CPU forever (the
//!   CPU limit stops it);
//! - `allocate`: allocates and touches memory until the memory limit stops it;
//! - `garbage`: writes something that is not an answer, without reading the request.

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Duration;

use memvault_ingest::worker::{serve_worker, serve_worker_with};
use memvault_ingest::{Extracted, IngestError};

/// A way for the worker to fail.
#[derive(Clone, Copy)]
enum Fault {
    Panic,
    Abort,
    Overflow,
    Hang,
    Spin,
    Allocate,
}

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let fault_name = match arguments.as_slice() {
        [] => "",
        [flag, name] if flag == "--fault" => name.as_str(),
        _ => {
            eprintln!("usage: memvault-ingest-worker [--fault NAME]");
            return ExitCode::from(2);
        }
    };
    let input = io::stdin().lock();
    let mut output = io::stdout().lock();
    let fault = match fault_name {
        "" => return serve_worker(input, output),
        "garbage" => {
            let _ = writeln!(output, "this is not an answer");
            return ExitCode::SUCCESS;
        }
        "panic" => Fault::Panic,
        "abort" => Fault::Abort,
        "overflow" => Fault::Overflow,
        "hang" => Fault::Hang,
        "spin" => Fault::Spin,
        "allocate" => Fault::Allocate,
        unknown => {
            eprintln!("unknown fault {unknown:?}");
            return ExitCode::from(2);
        }
    };
    serve_worker_with(input, output, |_, _, _, _| inject(fault))
}

fn inject(fault: Fault) -> Result<Extracted, IngestError> {
    match fault {
        Fault::Panic => panic!("injected panic"),
        Fault::Abort => std::process::abort(),
        Fault::Overflow => {
            let depth = recurse(std::hint::black_box(0));
            panic!("the stack did not overflow by depth {depth}")
        }
        Fault::Hang => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        Fault::Spin => {
            let mut counter: u64 = 0;
            loop {
                counter = std::hint::black_box(counter.wrapping_add(1));
            }
        }
        Fault::Allocate => {
            let mut blocks: Vec<Vec<u8>> = Vec::new();
            loop {
                // Filled, so the pages are real, not only reserved.
                blocks.push(vec![1_u8; 64 * 1024 * 1024]);
                std::hint::black_box(&blocks);
            }
        }
    }
}

/// Recurses until the stack overflows (the bound is never reached); the array keeps every
/// frame large and the addition keeps the call from becoming a loop.
fn recurse(depth: u64) -> u64 {
    if depth == u64::MAX {
        return depth;
    }
    let frame = std::hint::black_box([depth; 64]);
    recurse(depth + 1).wrapping_add(frame[0])
}
