//! Audio bytes to 16 kHz mono `f32`: symphonia demuxes and decodes (WAV, MP3, MP4/M4A and
//! ADTS AAC, Ogg Vorbis, FLAC), channels are averaged, and a windowed-sinc resampler
//! brings any rate to 16 kHz as the packets arrive (so a long 48 kHz file never sits in
//! memory at its own rate).

use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};

use symphonia::core::audio::SampleBuffer;
use symphonia::core::codecs::{DecoderOptions, CODEC_TYPE_NULL};
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::FormatOptions;
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::probe::Hint;

use crate::SpeechError;

/// The rate Moonshine expects and [`decode`] produces.
pub const SAMPLE_RATE: u32 = 16_000;
/// The cap the ingest worker uses: 30 minutes of audio.
pub const DEFAULT_MAX_SECONDS: u32 = 30 * 60;
/// Packets that fail to decode before the file is called corrupt (a few bad frames in a
/// long MP3 are skipped; a file of garbage is not).
const MAX_BAD_PACKETS: usize = 100;

/// Decoded audio, ready for [`crate::transcribe`].
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// 16 kHz mono samples in -1.0..=1.0.
    pub samples: Vec<f32>,
    /// The file's own sample rate and channel count.
    pub source_rate: u32,
    pub source_channels: usize,
    /// True when the audio was longer than `max_seconds` and was cut there.
    pub truncated: bool,
    /// Packets that failed to decode and were skipped.
    pub skipped_packets: usize,
}

impl Decoded {
    /// The decoded length in seconds.
    pub fn seconds(&self) -> f64 {
        self.samples.len() as f64 / f64::from(SAMPLE_RATE)
    }
}

/// Decodes an audio file to 16 kHz mono, keeping at most `max_seconds` of it.
/// `extension_hint` (`"mp3"`, `"m4a"`, ...) helps the probe; the content decides.
///
/// # Errors
///
/// [`SpeechError::Decode`] when the bytes are no supported audio, have no audio track, or
/// are corrupt throughout; [`SpeechError::DecoderPanicked`] when symphonia panics (caught).
pub fn decode(
    bytes: &[u8],
    extension_hint: Option<&str>,
    max_seconds: u32,
) -> Result<Decoded, SpeechError> {
    catch_unwind(AssertUnwindSafe(|| {
        decode_unguarded(bytes, extension_hint, max_seconds)
    }))
    .unwrap_or(Err(SpeechError::DecoderPanicked))
}

fn decode_unguarded(
    bytes: &[u8],
    extension_hint: Option<&str>,
    max_seconds: u32,
) -> Result<Decoded, SpeechError> {
    let source = MediaSourceStream::new(Box::new(Cursor::new(bytes.to_vec())), Default::default());
    let mut hint = Hint::new();
    if let Some(extension) = extension_hint {
        hint.with_extension(extension);
    }
    let probed = symphonia::default::get_probe()
        .format(
            &hint,
            source,
            &FormatOptions::default(),
            &MetadataOptions::default(),
        )
        .map_err(|error| decode_error("not a supported audio file", &error))?;
    let mut format = probed.format;
    let track = format
        .tracks()
        .iter()
        .find(|track| track.codec_params.codec != CODEC_TYPE_NULL)
        .ok_or_else(|| SpeechError::Decode("the file has no audio track".to_owned()))?;
    let track_id = track.id;
    let mut decoder = symphonia::default::get_codecs()
        .make(&track.codec_params, &DecoderOptions::default())
        .map_err(|error| decode_error("unsupported audio codec", &error))?;
    let mut source_rate = track.codec_params.sample_rate.unwrap_or(0);
    let mut source_channels = track.codec_params.channels.map_or(0, |c| c.count());

    let mut resampler: Option<Resampler> = None;
    let mut samples = Vec::new();
    let mut mono = Vec::new();
    let mut buffer: Option<SampleBuffer<f32>> = None;
    let mut frames_read: u64 = 0;
    let mut truncated = false;
    let mut skipped_packets = 0;
    let mut last_error = None;
    loop {
        let packet = match format.next_packet() {
            Ok(packet) => packet,
            Err(SymphoniaError::IoError(error))
                if error.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                break
            }
            Err(SymphoniaError::ResetRequired) => break,
            Err(error) => {
                // A demuxer error mid-file: keep what was decoded, if anything.
                last_error = Some(error.to_string());
                break;
            }
        };
        if packet.track_id() != track_id {
            continue;
        }
        let audio = match decoder.decode(&packet) {
            Ok(audio) => audio,
            Err(SymphoniaError::DecodeError(error)) => {
                skipped_packets += 1;
                last_error = Some(error.to_owned());
                if skipped_packets > MAX_BAD_PACKETS {
                    return Err(SpeechError::Decode(format!(
                        "corrupt audio: more than {MAX_BAD_PACKETS} packets fail to decode ({error})"
                    )));
                }
                continue;
            }
            Err(SymphoniaError::IoError(error))
                if error.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                break
            }
            Err(error) => return Err(decode_error("corrupt audio", &error)),
        };
        let spec = *audio.spec();
        let channels = spec.channels.count().max(1);
        let frames = audio.frames();
        if frames == 0 {
            continue;
        }
        if spec.rate == 0 {
            return Err(SpeechError::Decode(
                "corrupt audio: a sample rate of 0".to_owned(),
            ));
        }
        let resampler = match &mut resampler {
            Some(resampler) if resampler.input_rate == spec.rate => resampler,
            _ => {
                // First packet, or the rate changed mid-stream (chained Ogg): flush and
                // start a resampler for the new rate.
                if let Some(previous) = resampler.take() {
                    previous.finish(&mut samples);
                }
                source_rate = spec.rate;
                source_channels = channels;
                resampler.insert(Resampler::new(spec.rate, SAMPLE_RATE))
            }
        };
        let buffer = match &mut buffer {
            Some(buffer) if buffer.capacity() >= frames * channels => buffer,
            _ => buffer.insert(SampleBuffer::new(frames as u64, spec)),
        };
        buffer.copy_interleaved_ref(audio);
        mono.clear();
        mono.extend(
            buffer
                .samples()
                .chunks_exact(channels)
                .map(|frame| frame.iter().sum::<f32>() / channels as f32),
        );
        let limit = u64::from(max_seconds) * u64::from(spec.rate);
        let room = limit.saturating_sub(frames_read);
        if (mono.len() as u64) > room {
            mono.truncate(usize::try_from(room).unwrap_or(usize::MAX));
            truncated = true;
        }
        frames_read += mono.len() as u64;
        resampler.push(&mono, &mut samples);
        if truncated {
            break;
        }
    }
    if let Some(resampler) = resampler {
        resampler.finish(&mut samples);
    }
    if samples.is_empty() {
        return Err(SpeechError::Decode(match last_error {
            Some(error) => format!("corrupt audio: no sound could be decoded ({error})"),
            None => "the file holds no audio samples".to_owned(),
        }));
    }
    // Decoders may overshoot full scale slightly; keep the model's input in range.
    for sample in &mut samples {
        *sample = if sample.is_finite() {
            sample.clamp(-1.0, 1.0)
        } else {
            0.0
        };
    }
    Ok(Decoded {
        samples,
        source_rate,
        source_channels,
        truncated,
        skipped_packets,
    })
}

fn decode_error(what: &str, error: &SymphoniaError) -> SpeechError {
    SpeechError::Decode(format!("{what} ({error})"))
}

/// Zero crossings of the sinc on each side of the centre (at the lower of the two rates).
const ZERO_CROSSINGS: usize = 8;
/// Table resolution: kernel values per unit of (scaled) distance.
const TABLE_STEPS: usize = 512;
/// The low-pass cut-off as a fraction of the lower Nyquist frequency.
const ROLL_OFF: f64 = 0.94;

/// A streaming windowed-sinc (Blackman) resampler for one channel.
struct Resampler {
    input_rate: u32,
    /// Input samples per output sample.
    step: f64,
    /// The sinc's time scale: min(1, out/in) times the roll-off.
    scale: f64,
    /// Input samples on each side of an output sample's position that reach it.
    reach: usize,
    /// The kernel, `TABLE_STEPS` values per unit of scaled distance, from 0 outwards.
    table: Vec<f32>,
    /// Input not yet consumed; `pending[0]` is input sample number `offset`.
    pending: Vec<f32>,
    offset: u64,
    /// The next output sample to produce.
    next_output: u64,
    passthrough: bool,
}

impl Resampler {
    fn new(input_rate: u32, output_rate: u32) -> Self {
        let step = f64::from(input_rate) / f64::from(output_rate);
        let scale = (f64::from(output_rate) / f64::from(input_rate)).min(1.0) * ROLL_OFF;
        let reach = (ZERO_CROSSINGS as f64 / scale).ceil() as usize + 1;
        let table = (0..=ZERO_CROSSINGS * TABLE_STEPS + 1)
            .map(|index| {
                let distance = index as f64 / TABLE_STEPS as f64;
                let sinc = if index == 0 {
                    1.0
                } else {
                    (std::f64::consts::PI * distance).sin() / (std::f64::consts::PI * distance)
                };
                let position = distance / ZERO_CROSSINGS as f64;
                let window = if position >= 1.0 {
                    0.0
                } else {
                    let angle = std::f64::consts::PI * (1.0 + position);
                    0.42 - 0.5 * angle.cos() + 0.08 * (2.0 * angle).cos()
                };
                (scale * sinc * window) as f32
            })
            .collect();
        Resampler {
            input_rate,
            step,
            scale,
            reach,
            table,
            pending: Vec::new(),
            offset: 0,
            next_output: 0,
            passthrough: input_rate == output_rate,
        }
    }

    fn push(&mut self, input: &[f32], output: &mut Vec<f32>) {
        if self.passthrough {
            output.extend_from_slice(input);
            return;
        }
        self.pending.extend_from_slice(input);
        self.produce(output, false);
    }

    fn finish(mut self, output: &mut Vec<f32>) {
        if !self.passthrough {
            self.produce(output, true);
        }
    }

    /// Writes every output sample whose kernel lies inside the input seen so far (all of
    /// them up to the end of the input when `last`), then drops input no longer needed.
    fn produce(&mut self, output: &mut Vec<f32>, last: bool) {
        let available_end = self.offset + self.pending.len() as u64;
        loop {
            let position = self.next_output as f64 * self.step;
            if last {
                if position >= available_end as f64 {
                    break;
                }
            } else if position.floor() as u64 + self.reach as u64 >= available_end {
                break;
            }
            output.push(self.interpolate(position));
            self.next_output += 1;
        }
        let position = self.next_output as f64 * self.step;
        let keep_from = (position.floor() as u64).saturating_sub(self.reach as u64);
        if keep_from > self.offset {
            let drop = usize::try_from(keep_from - self.offset)
                .unwrap_or(usize::MAX)
                .min(self.pending.len());
            self.pending.drain(..drop);
            self.offset += drop as u64;
        }
    }

    fn interpolate(&self, position: f64) -> f32 {
        let centre = position.floor() as i64;
        let first = (centre - self.reach as i64 + 1).max(self.offset as i64);
        let last = centre + self.reach as i64;
        let mut sum = 0.0f32;
        for index in first..=last {
            let Some(&sample) = usize::try_from(index - self.offset as i64)
                .ok()
                .and_then(|local| self.pending.get(local))
            else {
                break;
            };
            let distance = (position - index as f64).abs() * self.scale * TABLE_STEPS as f64;
            let slot = distance as usize;
            let fraction = (distance - slot as f64) as f32;
            let (Some(&low), Some(&high)) = (self.table.get(slot), self.table.get(slot + 1)) else {
                continue;
            };
            sum += sample * (low + (high - low) * fraction);
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(rate: u32, frequency: f64, seconds: f64) -> Vec<f32> {
        let count = (f64::from(rate) * seconds) as usize;
        (0..count)
            .map(|n| {
                (2.0 * std::f64::consts::PI * frequency * n as f64 / f64::from(rate)).sin() as f32
                    * 0.5
            })
            .collect()
    }

    fn resample_in_pieces(input: &[f32], rate: u32, piece: usize) -> Vec<f32> {
        let mut resampler = Resampler::new(rate, SAMPLE_RATE);
        let mut output = Vec::new();
        for chunk in input.chunks(piece) {
            resampler.push(chunk, &mut output);
        }
        resampler.finish(&mut output);
        output
    }

    #[test]
    fn a_tone_keeps_its_length_and_level_across_rates() {
        for rate in [8_000, 22_050, 44_100, 48_000] {
            let input = tone(rate, 440.0, 2.0);
            let output = resample_in_pieces(&input, rate, 1_000);
            let expected = 2 * SAMPLE_RATE as usize;
            assert!(
                output.len().abs_diff(expected) <= 2,
                "{rate}: {}",
                output.len()
            );
            let reference = tone(SAMPLE_RATE, 440.0, 2.0);
            // Away from the edges the result matches a tone generated at 16 kHz.
            let error = output[1_000..30_000]
                .iter()
                .zip(&reference[1_000..30_000])
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(error < 0.01, "{rate}: max error {error}");
        }
    }

    #[test]
    fn frequencies_above_8_khz_are_filtered_out() {
        let input = tone(48_000, 12_000.0, 1.0);
        let output = resample_in_pieces(&input, 48_000, 4_096);
        let peak = output[500..15_000]
            .iter()
            .fold(0.0f32, |m, s| m.max(s.abs()));
        assert!(peak < 0.01, "aliased peak {peak}");
    }

    #[test]
    fn piece_sizes_do_not_change_the_result() {
        let input = tone(44_100, 1_000.0, 1.0);
        let whole = resample_in_pieces(&input, 44_100, input.len());
        let pieces = resample_in_pieces(&input, 44_100, 37);
        assert_eq!(whole, pieces);
    }

    #[test]
    fn garbage_is_a_decode_error() {
        for bytes in [
            &b""[..],
            b"RIFF\x10\0\0\0WAVEfmt ",
            b"ID3\x03\0\0\0\0\0\x10garbage",
            &[0xFF; 64],
        ] {
            let error = decode(bytes, Some("mp3"), 60).unwrap_err();
            assert!(matches!(error, SpeechError::Decode(_)), "{error:?}");
        }
    }
}
