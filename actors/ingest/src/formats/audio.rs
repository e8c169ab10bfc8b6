//! Audio (WAV, MP3, M4A, ADTS AAC, Ogg Vorbis, FLAC): decoded to 16 kHz mono and
//! transcribed offline with Moonshine tiny-en (`memvault-speech`), in the worker process.
//!
//! The file is always decoded, so a corrupt file fails ([`IngestError::Invalid`]) whether or
//! not the model is there. Without the model ([`Engines::moonshine`] is `None`) or when the
//! engine fails, the extraction succeeds with no text and a note saying why: a missing
//! engine is not the file's fault. Audio past [`memvault_speech::DEFAULT_MAX_SECONDS`]
//! (30 minutes) is cut there with a note.

use memvault_speech::{SpeechError, DEFAULT_MAX_SECONDS};

use crate::engines::Engines;
use crate::error::IngestError;
use crate::extracted::{Extracted, TextBuilder};
use crate::kind::Kind;
use crate::limits::Limits;

pub(crate) fn extract(
    kind: Kind,
    bytes: &[u8],
    limits: &Limits,
    engines: &Engines,
) -> Result<Extracted, IngestError> {
    let decoded = memvault_speech::decode(bytes, Some(kind.name()), DEFAULT_MAX_SECONDS).map_err(
        |error| match error {
            SpeechError::DecoderPanicked => IngestError::ParserPanicked { kind },
            other => IngestError::invalid(kind, other.to_string()),
        },
    )?;
    let mut builder = TextBuilder::new(limits.max_chars);
    let duration = clock(decoded.seconds());
    if decoded.truncated {
        builder.note(format!(
            "audio longer than {}: only the first {} were transcribed",
            clock(f64::from(DEFAULT_MAX_SECONDS)),
            clock(f64::from(DEFAULT_MAX_SECONDS))
        ));
    }
    if decoded.skipped_packets > 0 {
        builder.note(format!(
            "{} damaged audio packets skipped",
            decoded.skipped_packets
        ));
    }
    let Some(model_dir) = &engines.moonshine else {
        builder.note(
            "transcription skipped: the Moonshine model is not available (the server fetches \
             it from PyPI, moonshine-voice 0.0.4, when transcription is enabled)",
        );
        builder.note(format!("audio {duration}, not transcribed"));
        return Ok(builder.finish(kind, None));
    };
    match memvault_speech::transcribe(&decoded.samples, model_dir) {
        Ok(text) => {
            builder.block(&text);
            builder.note(format!(
                "audio {duration}, transcribed offline with Moonshine tiny-en"
            ));
            if text.is_empty() {
                builder.note("no speech was recognised");
            }
        }
        Err(error) => {
            builder.note(format!("transcription failed: {error}"));
            builder.note(format!("audio {duration}, not transcribed"));
        }
    }
    Ok(builder.finish(kind, None))
}

/// `M:SS` (or `H:MM:SS` from an hour up), rounded to the second.
fn clock(seconds: f64) -> String {
    let total = seconds.max(0.0).round() as u64;
    let (hours, minutes, seconds) = (total / 3600, total / 60 % 60, total % 60);
    if hours > 0 {
        format!("{hours}:{minutes:02}:{seconds:02}")
    } else {
        format!("{minutes}:{seconds:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::AudioFormat;

    #[test]
    fn durations_read_as_a_clock() {
        assert_eq!(clock(0.4), "0:00");
        assert_eq!(clock(11.0), "0:11");
        assert_eq!(clock(1800.0), "30:00");
        assert_eq!(clock(3725.0), "1:02:05");
    }

    #[test]
    fn garbage_is_invalid_with_or_without_the_model() {
        let kind = Kind::Audio(AudioFormat::Mp3);
        let error = extract(kind, b"not audio", &Limits::default(), &Engines::default());
        assert!(
            matches!(error, Err(IngestError::Invalid { .. })),
            "{error:?}"
        );
    }
}
