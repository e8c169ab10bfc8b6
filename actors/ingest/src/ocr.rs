//! Tesseract as a subprocess: the image on its stdin, the text from its stdout, one thread
//! each, a deadline, and the end of stderr for the reason when it fails.
//!
//! It runs with `OMP_THREAD_LIMIT=1`: on two cores the default OpenMP threads oversubscribe
//! and a page takes about 7× longer. A Tesseract fetched by [`crate::tesseract_fetch`]
//! also gets its libraries (`LD_LIBRARY_PATH`) and its language data (`TESSDATA_PREFIX`).

use std::io::{self, Read, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::tesseract_fetch::tesseract_command;

/// The most text read from Tesseract's stdout; a page of text is a few kilobytes.
const MAX_OUTPUT_BYTES: u64 = 64 * 1024 * 1024;

/// How much of stderr is kept for a reason.
const STDERR_TAIL_BYTES: usize = 2048;

/// Why OCR gave no text.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OcrError {
    /// Tesseract could not run at all: not startable, or it stopped before it read the
    /// image (its language data missing). Not the image's fault.
    #[error("tesseract could not run: {0}")]
    Unavailable(String),
    /// Tesseract ran and failed on this image (unreadable, truncated, or it crashed).
    #[error("{0}")]
    Unreadable(String),
    /// The deadline passed; Tesseract was killed.
    #[error("OCR did not finish within {} s and was stopped", .0.as_secs())]
    TimedOut(Duration),
}

/// Reads the text of `image` (PNG, JPEG, GIF, WebP, TIFF or BMP bytes) with the `tesseract`
/// program, English, automatic page segmentation. The text is trimmed, lines' trailing
/// spaces removed and runs of blank lines collapsed to one; it is empty for an image
/// without text.
///
/// The caller must have checked that the bytes begin with an image format's magic number:
/// Tesseract reads stdin that is no image as a list of file names to read.
pub(crate) fn recognize(
    image: &[u8],
    tesseract: &Path,
    timeout: Duration,
) -> Result<String, OcrError> {
    let mut command = tesseract_command(tesseract);
    command
        .args(["stdin", "stdout", "-l", "eng", "--psm", "3"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|error| {
        OcrError::Unavailable(format!("cannot start {}: {error}", tesseract.display()))
    })?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        kill_and_reap(&mut child);
        return Err(OcrError::Unavailable(
            "tesseract's standard streams are not piped".to_owned(),
        ));
    };
    let (ending, output, stderr_tail) = thread::scope(|scope| {
        // A Tesseract that stops reading (it failed to start) breaks this pipe; its exit
        // status says why, so the write's own error is not needed.
        scope.spawn(move || {
            let _ = stdin.write_all(image);
        });
        let output_reader = scope.spawn(move || read_capped(stdout, MAX_OUTPUT_BYTES));
        let stderr_reader = scope.spawn(move || read_tail(stderr, STDERR_TAIL_BYTES));
        let ending = wait_with_deadline(&mut child, timeout);
        let output = output_reader
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the output reader panicked")));
        let stderr_tail = stderr_reader.join().unwrap_or_default();
        (ending, output, stderr_tail)
    });
    let status = match ending {
        Ok(Some(status)) => status,
        Ok(None) => return Err(OcrError::TimedOut(timeout)),
        Err(error) => {
            return Err(OcrError::Unavailable(format!(
                "waiting for tesseract failed: {error}"
            )))
        }
    };
    if !status.success() {
        return Err(failure(status, &stderr_tail));
    }
    let output = output
        .map_err(|error| OcrError::Unreadable(format!("cannot read tesseract's text: {error}")))?;
    Ok(normalise(&String::from_utf8_lossy(&output)))
}

/// Why a Tesseract that ran failed: an engine that could not start (language data, a
/// library) is `Unavailable`, anything else (the image) `Unreadable`.
fn failure(status: std::process::ExitStatus, stderr_tail: &str) -> OcrError {
    let reason = last_lines(stderr_tail, 3);
    let engine_problem = [
        "Failed loading language",
        "Could not initialize tesseract",
        "error while loading shared libraries",
    ]
    .iter()
    .any(|marker| stderr_tail.contains(marker));
    if engine_problem {
        return OcrError::Unavailable(reason);
    }
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    #[cfg(not(unix))]
    let signal: Option<i32> = None;
    let how = match (status.code(), signal) {
        (_, Some(signal)) => format!("tesseract was killed by signal {signal}"),
        (Some(code), None) => format!("tesseract exited with status {code}"),
        (None, None) => "tesseract failed".to_owned(),
    };
    if reason.is_empty() {
        OcrError::Unreadable(how)
    } else {
        OcrError::Unreadable(format!("{how}: {reason}"))
    }
}

/// The last `count` non-blank lines of `text`, joined with "; ".
fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let start = lines.len().saturating_sub(count);
    lines.get(start..).unwrap_or_default().join("; ")
}

/// Trims the text, drops Tesseract's page separator (form feed) and trailing spaces, and
/// collapses three or more line breaks to two.
pub(crate) fn normalise(raw: &str) -> String {
    let mut text = String::with_capacity(raw.len());
    let mut blank_run = 0usize;
    for line in raw.replace('\u{c}', "\n").lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank_run += 1;
            continue;
        }
        if !text.is_empty() {
            text.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        text.push_str(line);
    }
    text.trim_start().to_owned()
}

fn read_capped(reader: impl Read, max: u64) -> io::Result<Vec<u8>> {
    let mut limited = reader.take(max);
    let mut bytes = Vec::new();
    limited.read_to_end(&mut bytes)?;
    // Past the cap the rest is drained, so Tesseract is never blocked on a full pipe.
    io::copy(&mut limited.into_inner(), &mut io::sink())?;
    Ok(bytes)
}

/// The last `max` bytes of a stream, lossily decoded.
fn read_tail(mut reader: impl Read, max: usize) -> String {
    let mut tail: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                tail.extend_from_slice(buffer.get(..read).unwrap_or_default());
                if tail.len() > max {
                    tail.drain(..tail.len() - max);
                }
            }
        }
    }
    String::from_utf8_lossy(&tail).into_owned()
}

/// Polls until the child exits (its status) or the deadline passes (`None`, the child
/// killed and reaped).
fn wait_with_deadline(
    child: &mut Child,
    timeout: Duration,
) -> io::Result<Option<std::process::ExitStatus>> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(2);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline {
            kill_and_reap(child);
            return Ok(None);
        }
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

fn kill_and_reap(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_trims_and_collapses_blank_lines() {
        assert_eq!(
            normalise("  Title  \n\n\n\nline one \nline two\n\n\u{c}"),
            "Title\n\nline one\nline two"
        );
        assert_eq!(normalise(" \n\u{c}\n"), "");
    }

    #[test]
    fn last_lines_keeps_the_end() {
        assert_eq!(last_lines("a\n\nb\nc\nd\n", 2), "c; d");
        assert_eq!(last_lines("", 2), "");
    }
}
