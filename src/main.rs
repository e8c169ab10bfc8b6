//! The `memvault` binary: the command line (`memvault-cli`) over the server
//! (`memvault-server`) and the operator's tools (`memvault-tools`).
//!
//! This crate is compiled without optimisation (see `[profile.release.package.memvault]`):
//! `main` only calls into the libraries, where everything the binary runs is compiled
//! optimised (the global allocator too); what the optimiser would work on here is the
//! black-box tests.

fn main() -> std::process::ExitCode {
    memvault_cli::run()
}
