//! memvault-tools: the commands that measure and follow a server rather than serve.
//!
//! - [`bench`]: `memvault bench`, measurements of a real server process over HTTP.
//! - [`eval`]: `memvault eval [PATH]`, retrieval quality of every search mode on the
//!   public evaluation sets (BEIR MS MARCO, BEIR business reports, LoCoMo).
//! - [`reembed`]: `memvault reembed`, follows a server's re-embedding with a progress bar.
//!
//! Apart from the server library (`memvault-server`) so that what only an operator's
//! command needs (progress bars, the evaluation sets' readers, the load generators) is not
//! in the library the server is built from; the `memvault` binary carries both.

pub mod bench;
pub mod eval;
pub mod reembed;
