//! Samples to text: windows of at most [`MAX_WINDOW_SECONDS`], cut at quiet points, each
//! transcribed by Moonshine, the lines joined.

use std::ops::Range;
use std::path::Path;

use crate::decode::SAMPLE_RATE;
use crate::fetch::{LIBRARY, MODEL};
use crate::ffi::{Transcriber, MODEL_ARCH_TINY};
use crate::SpeechError;

/// The longest window given to Moonshine in one call. Moonshine's decoder emits a bounded
/// number of tokens per second of audio and was trained on utterances under 30 s; its own
/// voice-activity detection splits a window further at pauses.
pub const MAX_WINDOW_SECONDS: u32 = 30;
/// Windows transcribed by one transcriber before it is freed and the model loaded again.
/// A transcriber's memory grows with the audio it has transcribed (measured: about 37 MB per
/// minute of audio, 1.3 GB of resident memory after 30 minutes); a fresh one every few
/// minutes keeps a long file within a worker's address-space limit, for the price of one
/// model load (about 0.3 s of CPU) per two minutes of audio.
const WINDOWS_PER_LOAD: usize = 4;
/// A window is cut at the quietest point at least this far into it.
const MIN_WINDOW_SECONDS: u32 = 20;
/// The span over which loudness is measured when looking for a quiet cut.
const FRAME: usize = SAMPLE_RATE as usize / 10;

/// Transcribes 16 kHz mono samples with the Moonshine tiny-en model in `model_dir` (a
/// folder made by [`crate::ensure_moonshine`]). The text has one line per utterance Moonshine
/// found, with its own capitals and punctuation; silence gives an empty string.
///
/// # Errors
///
/// [`SpeechError::Engine`] when the library or the model cannot be loaded, or a call
/// fails.
pub fn transcribe(samples_16k_mono: &[f32], model_dir: &Path) -> Result<String, SpeechError> {
    crate::fetch::check_complete(model_dir)
        .map_err(|error| SpeechError::Engine(format!("not a Moonshine folder: {error}")))?;
    let load = || {
        Transcriber::load(
            &model_dir.join(LIBRARY),
            &model_dir.join(MODEL),
            MODEL_ARCH_TINY,
        )
    };
    let mut transcriber = load()?;
    let mut lines = Vec::new();
    for (index, window) in windows(samples_16k_mono).into_iter().enumerate() {
        let Some(samples) = samples_16k_mono.get(window) else {
            continue;
        };
        if index > 0 && index % WINDOWS_PER_LOAD == 0 {
            // Free the old transcriber first: two are never alive at once.
            drop(transcriber);
            transcriber = load()?;
        }
        for line in transcriber.transcribe(samples, SAMPLE_RATE)? {
            let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
            if !line.is_empty() {
                lines.push(line);
            }
        }
    }
    Ok(lines.join("\n"))
}

/// Splits `samples` into consecutive windows of at most [`MAX_WINDOW_SECONDS`]; each but
/// the last ends at the quietest 100 ms between [`MIN_WINDOW_SECONDS`] and the maximum.
pub(crate) fn windows(samples: &[f32]) -> Vec<Range<usize>> {
    let max = (MAX_WINDOW_SECONDS * SAMPLE_RATE) as usize;
    let min = (MIN_WINDOW_SECONDS * SAMPLE_RATE) as usize;
    let mut windows = Vec::new();
    let mut start = 0;
    while samples.len() - start > max {
        let mut best = (f32::INFINITY, start + max);
        let mut frame_start = start + min;
        while frame_start + FRAME <= start + max {
            let energy: f32 = samples
                .get(frame_start..frame_start + FRAME)
                .unwrap_or_default()
                .iter()
                .map(|sample| sample * sample)
                .sum();
            if energy < best.0 {
                best = (energy, frame_start + FRAME / 2);
            }
            frame_start += FRAME / 2;
        }
        windows.push(start..best.1);
        start = best.1;
    }
    if start < samples.len() {
        windows.push(start..samples.len());
    }
    windows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_audio_is_one_window() {
        assert_eq!(windows(&[0.1; 16_000]), vec![0..16_000]);
        assert!(windows(&[]).is_empty());
    }

    #[test]
    fn long_audio_is_cut_at_its_quiet_points() {
        let rate = SAMPLE_RATE as usize;
        // 70 s of noise-like sound with silences at 25 s and 47 s.
        let mut samples: Vec<f32> = (0..70 * rate)
            .map(|n| if n % 7 < 3 { 0.3 } else { -0.2 })
            .collect();
        for second in [25, 47] {
            samples[second * rate..second * rate + rate / 5].fill(0.0);
        }
        let windows = windows(&samples);
        assert_eq!(windows.len(), 3, "{windows:?}");
        for window in &windows {
            assert!(window.len() <= 30 * rate, "{window:?}");
        }
        assert!(
            windows[0].end.abs_diff(25 * rate + rate / 10) <= rate / 10,
            "{windows:?}"
        );
        assert!(
            windows[1].end.abs_diff(47 * rate + rate / 10) <= rate / 10,
            "{windows:?}"
        );
        assert_eq!(windows[2].end, samples.len());
    }

    #[test]
    fn a_folder_without_the_model_is_an_engine_error() {
        let directory = tempfile::tempdir().unwrap();
        let error = transcribe(&[0.0; 16_000], directory.path()).unwrap_err();
        assert!(matches!(error, SpeechError::Engine(_)), "{error:?}");
    }
}
