//! Audio through `extract_with` and through the worker process: the JFK clip and its copies
//! in every supported format (`actors/speech/tests/fixtures/`) are sniffed and transcribed
//! offline with Moonshine tiny-en; without the model the file still succeeds, with a note;
//! a corrupt file is `Invalid`.
//!
//! The model comes from the model cache (`$XDG_CACHE_HOME/memvault/models`, else
//! `~/.cache/memvault/models`), fetched from PyPI on first use by `memvault-speech`.
//!
//! Exact phrases are checked in worker processes only: the Moonshine library keeps state
//! across calls in one process, and the worker, like production, transcribes one file per
//! process.

#![cfg(unix)]

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use memvault_ingest::worker::{Worker, WorkerError, WorkerLimits};
use memvault_ingest::{extract_with, sniff, AudioFormat, Engines, IngestError, Kind, Limits};
use unicode_normalization::UnicodeNormalization;

const WORKER: &str = env!("CARGO_BIN_EXE_memvault-ingest-worker");

/// The phrases of `jfk.wav` in the shared test-file manifest.
const PHRASES: [&str; 3] = [
    "fellow Americans",
    "what your country can do for you",
    "ask what you can do for your country",
];

fn model() -> PathBuf {
    static MODEL: OnceLock<PathBuf> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let base = std::env::var_os("XDG_CACHE_HOME")
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
                .unwrap_or_else(std::env::temp_dir);
            memvault_speech::ensure_moonshine(&base.join("memvault").join("models"), "python3")
                .expect("the Moonshine model")
        })
        .clone()
}

fn engines() -> Engines {
    Engines {
        moonshine: Some(model()),
        ..Default::default()
    }
}

fn jfk_wav() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/files/jfk.wav");
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../speech/tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// NFKC, whitespace collapsed, lowercase; punctuation stays as the model writes it.
fn normalize(text: &str) -> String {
    text.nfkc()
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn worker() -> Worker {
    Worker::new(WORKER, Vec::new(), WorkerLimits::default()).with_engines(engines())
}

#[test]
fn every_fixture_is_sniffed_as_its_audio_format() {
    for (name, format) in [
        ("jfk.mp3", AudioFormat::Mp3),
        ("jfk.m4a", AudioFormat::M4a),
        ("jfk.aac", AudioFormat::Aac),
        ("jfk.ogg", AudioFormat::Ogg),
        ("jfk.flac", AudioFormat::Flac),
    ] {
        assert_eq!(sniff(&fixture(name), None), Kind::Audio(format), "{name}");
    }
    assert_eq!(sniff(&jfk_wav(), None), Kind::Audio(AudioFormat::Wav));
}

#[test]
fn the_worker_transcribes_the_wav_with_every_manifest_phrase() {
    let extracted = worker()
        .extract(&jfk_wav(), Some("jfk.wav"), &Limits::default())
        .expect("transcribed");
    assert_eq!(extracted.kind, Kind::Audio(AudioFormat::Wav));
    let text = normalize(&extracted.text);
    for phrase in PHRASES {
        assert!(text.contains(&normalize(phrase)), "{phrase:?} in {text:?}");
    }
    assert_eq!(
        extracted.notes,
        ["audio 0:11, transcribed offline with Moonshine tiny-en"]
    );
    assert!(!extracted.truncated);
}

/// Lossy copies: tiny-en hears "fellow America(n)(s)" depending on the codec's artefacts,
/// so that phrase is checked to its stem.
#[test]
fn the_worker_transcribes_every_format() {
    let worker = worker();
    for name in ["jfk.mp3", "jfk.m4a", "jfk.aac", "jfk.ogg", "jfk.flac"] {
        let extracted = worker
            .extract(&fixture(name), Some(name), &Limits::default())
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        let text = normalize(&extracted.text);
        assert!(text.contains("fellow america"), "{name}: {text:?}");
        for phrase in &PHRASES[1..] {
            assert!(
                text.contains(&normalize(phrase)),
                "{name}: {phrase:?} in {text:?}"
            );
        }
    }
}

#[test]
fn a_corrupt_file_fails_in_the_worker_and_in_process() {
    // An MP3 frame header over garbage, and a WAV header with no samples.
    let mut mp3 = vec![0xFF, 0xFB, 0x90, 0x64];
    mp3.extend(std::iter::repeat_n(0x55, 4_000));
    let wav = jfk_wav();
    for (bytes, name) in [(mp3, "broken.mp3"), (wav[..44].to_vec(), "empty.wav")] {
        let kind = sniff(&bytes, Some(name));
        assert!(matches!(kind, Kind::Audio(_)), "{name}: {kind:?}");
        let in_process = extract_with(kind, &bytes, &Limits::default(), &Engines::default());
        assert!(
            matches!(in_process, Err(IngestError::Invalid { .. })),
            "{name}: {in_process:?}"
        );
        match worker().extract(&bytes, Some(name), &Limits::default()) {
            Err(WorkerError::Failed(IngestError::Invalid { kind: failed, .. })) => {
                assert_eq!(failed, kind)
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn without_the_model_the_file_succeeds_with_a_note() {
    let kind = Kind::Audio(AudioFormat::Ogg);
    let extracted = extract_with(
        kind,
        &fixture("jfk.ogg"),
        &Limits::default(),
        &Engines::default(),
    )
    .unwrap();
    assert_eq!(extracted.text, "");
    assert!(
        extracted.notes[0]
            .starts_with("transcription skipped: the Moonshine model is not available ("),
        "{:?}",
        extracted.notes
    );
    assert_eq!(extracted.notes[1], "audio 0:11, not transcribed");
}

#[test]
fn a_model_folder_that_is_not_one_is_a_note_not_a_failure() {
    let folder = tempfile_dir();
    let engines = Engines {
        moonshine: Some(folder.clone()),
        ..Default::default()
    };
    let kind = Kind::Audio(AudioFormat::Wav);
    let extracted = extract_with(kind, &jfk_wav(), &Limits::default(), &engines).unwrap();
    assert_eq!(extracted.text, "");
    assert!(
        extracted.notes[0].starts_with("transcription failed: the Moonshine engine failed"),
        "{:?}",
        extracted.notes
    );
    std::fs::remove_dir_all(folder).unwrap();
}

fn tempfile_dir() -> PathBuf {
    let path = std::env::temp_dir().join(format!("memvault-audio-test-{}", std::process::id()));
    std::fs::create_dir_all(&path).unwrap();
    path
}

#[test]
fn the_character_cap_applies_to_transcripts() {
    let limits = Limits {
        max_chars: 20,
        ..Limits::default()
    };
    let extracted = worker()
        .extract(&fixture("jfk.ogg"), Some("jfk.ogg"), &limits)
        .unwrap();
    assert_eq!(extracted.text.chars().count(), 20);
    assert!(extracted.truncated);
}

/// Ten megabytes of 16 kHz 16-bit mono WAV (5:12: the JFK clip 26 times with a second of
/// silence between) in a worker with room to spare (120 CPU seconds). Run with `--ignored` to measure (`--nocapture` prints the figures). Measured on 2 cores:
/// 22.9 s of CPU and 320 MB peak RSS, inside the default 30 CPU seconds and 1 GiB (the
/// same 5:12 as a 128 kbit/s MP3 takes the same; 10 MB of such an MP3, 10:25, needs about
/// 47 s, and the 30-minute cap about 137 s and 528 MB).
#[test]
#[ignore = "a measurement: about 30 s of CPU"]
fn ten_megabytes_of_speech_under_the_worker_limits() {
    let wav = jfk_wav();
    let data = wav.windows(4).position(|window| window == b"data").unwrap() + 8;
    let samples = &wav[data..];
    let mut body = Vec::new();
    while body.len() + samples.len() + 32_000 < 10_000_000 {
        body.extend_from_slice(samples);
        body.extend(std::iter::repeat_n(0u8, 32_000));
    }
    let file = wav_16k_mono(&body);
    let limits = WorkerLimits {
        memory_bytes: 1024 * 1024 * 1024,
        cpu_seconds: 120,
        wall_clock: Duration::from_secs(180),
    };
    let started = std::time::Instant::now();
    let extracted = Worker::new(WORKER, Vec::new(), limits)
        .with_engines(engines())
        .extract(&file, Some("long.wav"), &Limits::default())
        .expect("transcribed");
    println!(
        "{} bytes, notes {:?}, {:.1} s wall, {} characters",
        file.len(),
        extracted.notes,
        started.elapsed().as_secs_f64(),
        extracted.text.len()
    );
    let phrase = normalize(PHRASES[2]);
    assert!(normalize(&extracted.text).matches(&phrase).count() >= 25);
}

/// A canonical 44-byte WAV header (16 kHz, mono, 16-bit PCM) over `body`.
fn wav_16k_mono(body: &[u8]) -> Vec<u8> {
    let mut file = Vec::with_capacity(44 + body.len());
    file.extend_from_slice(b"RIFF");
    file.extend_from_slice(&(36 + body.len() as u32).to_le_bytes());
    file.extend_from_slice(b"WAVEfmt ");
    file.extend_from_slice(&16u32.to_le_bytes());
    file.extend_from_slice(&1u16.to_le_bytes()); // PCM
    file.extend_from_slice(&1u16.to_le_bytes()); // mono
    file.extend_from_slice(&16_000u32.to_le_bytes());
    file.extend_from_slice(&32_000u32.to_le_bytes()); // bytes per second
    file.extend_from_slice(&2u16.to_le_bytes()); // block align
    file.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    file.extend_from_slice(b"data");
    file.extend_from_slice(&(body.len() as u32).to_le_bytes());
    file.extend_from_slice(body);
    file
}
