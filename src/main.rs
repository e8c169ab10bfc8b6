//! The `memvault` binary: the command line (`cli`) over the server (`memvault-server`) and
//! the operator's tools (`memvault-tools`).

mod cli;

/// mimalloc keeps freed tensor buffers for reuse; with the system allocator every large
/// tensor of a forward pass is a fresh mmap and a round of page faults.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::run()
}
