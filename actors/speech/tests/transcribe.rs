//! End to end: the pinned Moonshine wheel fetched into the model cache (once), the JFK clip
//! and copies of it in every supported format (made once with ffmpeg 5.1 and committed
//! under `tests/fixtures/`) decoded and transcribed, corrupt input refused without a panic.
//!
//! The cache is `$XDG_CACHE_HOME/memvault/models` (else `~/.cache/memvault/models`), as for
//! the embedding model; the first run downloads the 67 MB wheel from PyPI.

use std::path::PathBuf;
use std::sync::OnceLock;

use memvault_speech::{decode, ensure_moonshine, transcribe, SpeechError, CACHE_ENTRY};
use unicode_normalization::UnicodeNormalization;

/// The phrases of `jfk.wav` in the shared test-file manifest.
const PHRASES: [&str; 3] = [
    "fellow Americans",
    "what your country can do for you",
    "ask what you can do for your country",
];

fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("memvault").join("models")
}

fn model() -> &'static PathBuf {
    static MODEL: OnceLock<PathBuf> = OnceLock::new();
    MODEL.get_or_init(|| ensure_moonshine(&cache_dir(), "python3").expect("the Moonshine model"))
}

fn fixture(name: &str) -> Vec<u8> {
    let path = fixture_path(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn jfk_wav_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/files/jfk.wav")
}

fn jfk_wav() -> Vec<u8> {
    let path = jfk_wav_path();
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

/// The transcript of a fixture, made in a fresh process as the ingest worker makes it: this
/// test binary run again for [`transcribe_one_file_in_this_process`] alone. The library
/// keeps state across calls in one process (its voice-activity detector is a process-wide
/// singleton), so a file transcribed after others can come out slightly differently
/// ("fellow-american" for "fellow Americans"); one file per process is deterministic.
fn transcript_of(path: &std::path::Path, hint: &str) -> String {
    model();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "transcribe_one_file_in_this_process",
            "--nocapture",
        ])
        .env(CHILD_FILE, path)
        .env(CHILD_HINT, hint)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{hint}: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let transcript = stdout
        .split_once(TRANSCRIPT_START)
        .and_then(|(_, rest)| rest.split_once(TRANSCRIPT_END))
        .map(|(transcript, _)| transcript)
        .unwrap_or_else(|| panic!("{hint}: no transcript in {stdout}"));
    normalize(transcript)
}

const CHILD_FILE: &str = "MEMVAULT_SPEECH_TEST_FILE";
const CHILD_HINT: &str = "MEMVAULT_SPEECH_TEST_HINT";
const TRANSCRIPT_START: &str = "<<<transcript\n";
const TRANSCRIPT_END: &str = "\ntranscript>>>";

/// The child half of [`transcript_of`]; does nothing in a normal test run.
#[test]
fn transcribe_one_file_in_this_process() {
    let (Some(path), Some(hint)) = (std::env::var_os(CHILD_FILE), std::env::var(CHILD_HINT).ok())
    else {
        return;
    };
    let decoded = decode(&std::fs::read(path).unwrap(), Some(&hint), 600).expect("decodes");
    assert!(!decoded.truncated);
    assert!(
        (10.5..11.5).contains(&decoded.seconds()),
        "{hint}: {} s",
        decoded.seconds()
    );
    let text = transcribe(&decoded.samples, model()).expect("transcribes");
    println!("{TRANSCRIPT_START}{text}{TRANSCRIPT_END}");
}

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn the_wav_and_flac_transcripts_hold_every_manifest_phrase() {
    for (path, hint) in [(jfk_wav_path(), "wav"), (fixture_path("jfk.flac"), "flac")] {
        let text = transcript_of(&path, hint);
        for phrase in PHRASES {
            assert!(
                text.contains(&normalize(phrase)),
                "{hint}: {phrase:?} in {text:?}"
            );
        }
    }
}

/// Lossy copies: tiny-en hears "fellow America", "American" or "Americans" depending on
/// the codec's artefacts (ffmpeg's own decoding of the same files gives the same), so the
/// first phrase is checked to its stem; the other two must be exact.
#[test]
fn lossy_copies_transcribe_too() {
    for (name, hint) in [
        ("jfk.mp3", "mp3"),
        ("jfk.m4a", "m4a"),
        ("jfk.aac", "aac"),
        ("jfk.ogg", "ogg"),
    ] {
        let text = transcript_of(&fixture_path(name), hint);
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
fn the_fixtures_decode_at_their_own_rates_and_channels() {
    for (name, rate, channels) in [
        ("jfk.mp3", 44_100, 2),
        ("jfk.m4a", 44_100, 1),
        ("jfk.aac", 16_000, 1),
        ("jfk.ogg", 48_000, 1),
        ("jfk.flac", 22_050, 1),
    ] {
        let decoded = decode(&fixture(name), None, 600).expect(name);
        assert_eq!(
            (decoded.source_rate, decoded.source_channels),
            (rate, channels),
            "{name}"
        );
        assert_eq!(decoded.skipped_packets, 0, "{name}");
        let peak = decoded.samples.iter().fold(0.0f32, |m, s| m.max(s.abs()));
        assert!(peak > 0.1 && peak <= 1.0, "{name}: peak {peak}");
    }
}

#[test]
fn long_audio_is_transcribed_window_by_window() {
    let speech = decode(&jfk_wav(), Some("wav"), 600).unwrap().samples;
    // Four copies with a second of silence between: 48 s, so two windows.
    let mut samples = Vec::new();
    for _ in 0..4 {
        samples.extend_from_slice(&speech);
        samples.extend(std::iter::repeat_n(0.0, 16_000));
    }
    let text = normalize(&transcribe(&samples, model()).unwrap());
    let phrase = normalize(PHRASES[2]);
    assert!(text.matches(&phrase).count() >= 3, "{text:?}");
}

#[test]
fn the_duration_cap_truncates() {
    let decoded = decode(&fixture("jfk.ogg"), Some("ogg"), 5).unwrap();
    assert!(decoded.truncated);
    assert_eq!(decoded.samples.len().abs_diff(5 * 16_000), 0);
}

#[test]
fn silence_gives_no_text() {
    let text = transcribe(&vec![0.0; 5 * 16_000], model()).unwrap();
    assert_eq!(text, "");
}

#[test]
fn corrupt_audio_is_an_error_never_a_panic() {
    let garbage = decode(b"this is not audio at all", Some("mp3"), 600).unwrap_err();
    assert!(matches!(garbage, SpeechError::Decode(_)), "{garbage:?}");
    // A WAV header over nothing.
    let wav = jfk_wav();
    let header_only = decode(&wav[..44], Some("wav"), 600).unwrap_err();
    assert!(
        matches!(header_only, SpeechError::Decode(_)),
        "{header_only:?}"
    );
    // Every fixture cut short and with bytes overwritten: an answer either way (a damaged
    // file may still give some audio), and no panic escapes.
    for name in ["jfk.mp3", "jfk.m4a", "jfk.aac", "jfk.ogg", "jfk.flac"] {
        let bytes = fixture(name);
        let _ = decode(&bytes[..bytes.len() / 3], None, 600);
        for seed in 0..16usize {
            let mut damaged = bytes.clone();
            let mut position = seed * 7919 % damaged.len();
            for _ in 0..64 {
                damaged[position] = damaged[position].wrapping_mul(31).wrapping_add(seed as u8);
                position = (position * 131 + 17) % damaged.len();
            }
            match decode(&damaged, None, 600) {
                Ok(decoded) => assert!(decoded.samples.iter().all(|s| s.is_finite())),
                Err(SpeechError::Decode(_) | SpeechError::DecoderPanicked) => {}
                Err(other) => panic!("{name}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_second_fetch_is_a_no_op() {
    let first = model().clone();
    assert!(first.ends_with(CACHE_ENTRY));
    // No Python to download with: only the cache can answer.
    let second = ensure_moonshine(&cache_dir(), "/nonexistent/python").unwrap();
    assert_eq!(second, first);
}
