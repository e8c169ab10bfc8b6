//! `cargo run --release -p memvault-speech --example transcribe_file -- FILE [MODEL_CACHE]`:
//! fetches the model if needed, decodes and transcribes FILE, and prints the transcript
//! and timings, and the process's peak address space and resident size (what a worker's
//! `RLIMIT_AS` and the machine's memory must hold).

use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut arguments = std::env::args().skip(1);
    let file = PathBuf::from(
        arguments
            .next()
            .ok_or("usage: transcribe_file FILE [CACHE]")?,
    );
    let cache = arguments
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("memvault-models"));
    let model = memvault_speech::ensure_moonshine(&cache, "python3")?;
    let bytes = std::fs::read(&file)?;
    let hint = file.extension().and_then(|extension| extension.to_str());
    let started = Instant::now();
    let decoded = memvault_speech::decode(&bytes, hint, memvault_speech::DEFAULT_MAX_SECONDS)?;
    let decoding = started.elapsed();
    let started = Instant::now();
    let text = memvault_speech::transcribe(&decoded.samples, &model)?;
    let transcribing = started.elapsed();
    println!("{text}");
    eprintln!(
        "audio {:.1} s ({} Hz, {} channels{}), decoded in {:.2} s, transcribed in {:.2} s",
        decoded.seconds(),
        decoded.source_rate,
        decoded.source_channels,
        if decoded.truncated { ", truncated" } else { "" },
        decoding.as_secs_f64(),
        transcribing.as_secs_f64()
    );
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    for line in status.lines() {
        if line.starts_with("VmPeak") || line.starts_with("VmHWM") {
            eprintln!("{}", line.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    Ok(())
}
