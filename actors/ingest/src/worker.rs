//! Extraction in a child process: [`serve_worker`] is the child's side, [`Worker`] the
//! parent's. The child lowers its own resource limits before it reads the file, so a bomb,
//! a runaway loop or an allocation the parsers cannot survive ends that process, and the
//! parent turns how it ended into a [`WorkerError`] for that one file.
//!
//! # Protocol (version 1)
//!
//! Request, on the child's stdin: one line of JSON, then the file's raw bytes up to end of
//! input.
//!
//! ```text
//! {"version":1,"filename":"notes.docx","limits":{...Limits...},"process":{"memory_bytes":1073741824,"cpu_seconds":30}}\n
//! <the file's bytes, to EOF>
//! ```
//!
//! The header line is read under a 64 KiB cap before any limit is set; the limits are set
//! before the file's bytes are read. Answer, on the child's stdout: one line of JSON,
//! tagged by `outcome`:
//!
//! - `{"outcome":"extracted","extracted":{...Extracted...}}` (deferred attachments'
//!   bytes in base64);
//! - `{"outcome":"failed","error":{"code":"invalid","kind":"docx","reason":"..."},"message":"..."}`:
//!   an [`IngestError`], whole;
//! - `{"outcome":"panicked","message":"..."}`: a panic that [`crate::extract`] did not catch;
//! - `{"outcome":"out_of_memory","message":"..."}`: the file's bytes did not fit under the
//!   memory limit (an allocation failure anywhere else aborts the child instead);
//! - `{"outcome":"refused","message":"..."}`: a bad request, or limits that could not be set
//!   (the child never parses a file without its limits).
//!
//! The exit status is 0 when an answer was written, except after `refused` (1).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitCode, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rlimit::Resource;
use serde::{Deserialize, Serialize};

use crate::{extract_with, sniff, Engines, Extracted, IngestError, Limits};

/// The protocol version a request carries; a child refuses any other.
pub const PROTOCOL_VERSION: u32 = 1;

/// The longest request header line a child reads.
const MAX_HEADER_BYTES: u64 = 64 * 1024;

/// The largest answer a parent reads: 5 million characters of text, JSON-escaped, plus
/// base64 attachments fit with room to spare. Past it the answer is a protocol error.
pub const MAX_ANSWER_BYTES: u64 = 256 * 1024 * 1024;

/// How much of the child's stderr (its end: where a panic or an abort says why) is kept
/// for an error's reason.
const STDERR_EXCERPT_BYTES: usize = 2048;

/// The limits of one worker process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerLimits {
    /// Address space (`RLIMIT_AS`) the child may map: executable, libraries, the file's
    /// bytes and everything the parsers allocate. Over it an allocation fails and the
    /// child aborts.
    pub memory_bytes: u64,
    /// CPU seconds (`RLIMIT_CPU`) before the kernel stops the child with SIGXCPU (and
    /// SIGKILL one second later).
    pub cpu_seconds: u64,
    /// Real time the parent waits, whatever the child does (sleeping, blocked, starved of
    /// CPU), before it kills the child.
    pub wall_clock: Duration,
}

impl Default for WorkerLimits {
    /// 1 GiB, 30 CPU seconds, 60 seconds: a 10 MB upload of any supported kind needs a
    /// fraction of each.
    fn default() -> Self {
        WorkerLimits {
            memory_bytes: 1024 * 1024 * 1024,
            cpu_seconds: 30,
            wall_clock: Duration::from_secs(60),
        }
    }
}

/// How extraction in a worker failed. Every message is lowercase and says why; only
/// [`WorkerError::Spawn`] and [`WorkerError::Protocol`] point at the server rather than
/// at the file.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The worker program could not be started.
    #[error("the extraction worker could not be started: {0}")]
    Spawn(#[source] io::Error),
    /// The wall clock ran out; the child was killed.
    #[error("extraction did not finish within {} s and was stopped", .after.as_secs_f64())]
    TimedOut { after: Duration },
    /// The kernel stopped the child at its CPU-time limit (SIGXCPU).
    #[error("extraction used more than {limit_seconds} s of CPU time and was stopped")]
    CpuTimeExceeded { limit_seconds: u64 },
    /// An allocation failed under the memory limit and the child aborted.
    #[error("extraction needed more than {limit_bytes} bytes of memory and was stopped")]
    OutOfMemory { limit_bytes: u64 },
    /// The child died otherwise: a signal (named in the reason), a panic, or a non-zero
    /// exit, with the end of its stderr.
    #[error("the extraction worker crashed: {reason}")]
    Crashed { reason: String },
    /// The child would not run the request (bad header, limits it could not set).
    #[error("the extraction worker refused the request: {reason}")]
    Refused { reason: String },
    /// A clean extraction failure: the same error [`crate::extract`] gives in process.
    #[error(transparent)]
    Failed(IngestError),
    /// The child exited normally but its answer is missing, too large or not an answer.
    #[error("the extraction worker's answer is unreadable: {0}")]
    Protocol(String),
}

impl WorkerError {
    /// A stable snake_case code per outcome; a clean failure gives its
    /// [`IngestError::code`].
    pub fn code(&self) -> &'static str {
        match self {
            WorkerError::Spawn(_) => "worker_spawn",
            WorkerError::TimedOut { .. } => "timed_out",
            WorkerError::CpuTimeExceeded { .. } => "cpu_time_exceeded",
            WorkerError::OutOfMemory { .. } => "out_of_memory",
            WorkerError::Crashed { .. } => "worker_crashed",
            WorkerError::Refused { .. } => "worker_refused",
            WorkerError::Failed(error) => error.code(),
            WorkerError::Protocol(_) => "worker_protocol",
        }
    }
}

/// The header line of a request.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    version: u32,
    filename: Option<String>,
    limits: Limits,
    process: ProcessLimits,
    /// The engines PDF, images and audio may use (absent: none).
    #[serde(default)]
    engines: Engines,
}

/// The limits a child sets on itself: the part of [`WorkerLimits`] the kernel enforces.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProcessLimits {
    memory_bytes: u64,
    cpu_seconds: u64,
}

/// The answer line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
enum Answer {
    Extracted { extracted: Extracted },
    Failed { error: IngestError, message: String },
    Panicked { message: String },
    OutOfMemory { message: String },
    Refused { message: String },
}

/// The child's side: reads one request from `input`, sets its limits, sniffs and extracts
/// the file, and writes one answer to `output` (see the module's protocol). Call it first
/// thing in a process of its own, before any runtime or thread starts, with stdin and
/// stdout, and exit with what it returns:
///
/// ```no_run
/// let code = memvault_ingest::worker::serve_worker(std::io::stdin().lock(), std::io::stdout().lock());
/// # let _ = code;
/// ```
///
/// The limits it sets apply to the whole process and cannot be raised again.
pub fn serve_worker(input: impl Read, output: impl Write) -> ExitCode {
    serve_worker_with(input, output, |bytes, filename, limits, engines| {
        let kind = sniff(bytes, filename);
        extract_with(kind, bytes, limits, engines)
    })
}

/// [`serve_worker`] with another extraction in place of `sniff` + `extract`: a worker for
/// other kinds (PDF, OCR) can speak the same protocol under the same limits, and the
/// crate's tests inject faults through it.
pub fn serve_worker_with<F>(input: impl Read, mut output: impl Write, extraction: F) -> ExitCode
where
    F: FnOnce(&[u8], Option<&str>, &Limits, &Engines) -> Result<Extracted, IngestError>,
{
    let answer = match read_request(input) {
        Ok((request, bytes)) => run_extraction(extraction, &request, &bytes),
        Err(RequestProblem::Refused(message)) => Answer::Refused { message },
        Err(RequestProblem::OutOfMemory(message)) => Answer::OutOfMemory { message },
    };
    let refused = matches!(answer, Answer::Refused { .. });
    if let Err(error) = write_answer(&mut output, &answer) {
        eprintln!("memvault ingest worker: cannot write the answer: {error}");
        return ExitCode::FAILURE;
    }
    if refused {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Why a request was not run.
enum RequestProblem {
    Refused(String),
    OutOfMemory(String),
}

/// Reads the header, sets the process limits it names, then reads the file's bytes.
fn read_request(input: impl Read) -> Result<(Request, Vec<u8>), RequestProblem> {
    let mut reader = BufReader::new(input);
    let request = read_header(&mut reader).map_err(RequestProblem::Refused)?;
    apply_process_limits(&request.process).map_err(RequestProblem::Refused)?;
    let mut bytes = Vec::new();
    // read_to_end reserves fallibly: a file over the memory limit is an error here, not an
    // abort.
    reader.read_to_end(&mut bytes).map_err(|error| {
        let message = format!("cannot read the file: {error}");
        if error.kind() == io::ErrorKind::OutOfMemory {
            RequestProblem::OutOfMemory(message)
        } else {
            RequestProblem::Refused(message)
        }
    })?;
    Ok((request, bytes))
}

fn read_header(reader: &mut impl BufRead) -> Result<Request, String> {
    let mut header = Vec::new();
    reader
        .take(MAX_HEADER_BYTES)
        .read_until(b'\n', &mut header)
        .map_err(|error| format!("cannot read the request header: {error}"))?;
    if header.last() != Some(&b'\n') {
        return Err(format!(
            "the request header is not a line of at most {MAX_HEADER_BYTES} bytes"
        ));
    }
    let request: Request = serde_json::from_slice(&header)
        .map_err(|error| format!("the request header is not valid: {error}"))?;
    if request.version != PROTOCOL_VERSION {
        return Err(format!(
            "protocol version {} is not supported (this worker speaks {PROTOCOL_VERSION})",
            request.version
        ));
    }
    Ok(request)
}

/// Lowers this process's limits: no core dumps (a killed worker is expected, not a bug to
/// dump), address space, CPU time. A limit is never raised above what the process already
/// has.
fn apply_process_limits(limits: &ProcessLimits) -> Result<(), String> {
    if limits.memory_bytes == 0 || limits.cpu_seconds == 0 {
        return Err("memory_bytes and cpu_seconds must be positive".to_owned());
    }
    lower_limit(Resource::CORE, 0, 0)?;
    lower_limit(Resource::AS, limits.memory_bytes, limits.memory_bytes)?;
    // The soft limit sends SIGXCPU, which the parent names; the hard one a SIGKILL a second
    // later, should SIGXCPU ever be caught.
    lower_limit(
        Resource::CPU,
        limits.cpu_seconds,
        limits.cpu_seconds.saturating_add(1),
    )
}

fn lower_limit(resource: Resource, soft: u64, hard: u64) -> Result<(), String> {
    let describe = |error: io::Error| format!("cannot set {}: {error}", resource.as_name());
    let (_, current_hard) = rlimit::getrlimit(resource).map_err(describe)?;
    let hard = hard.min(current_hard);
    let soft = soft.min(hard);
    rlimit::setrlimit(resource, soft, hard).map_err(describe)
}

fn run_extraction<F>(extraction: F, request: &Request, bytes: &[u8]) -> Answer
where
    F: FnOnce(&[u8], Option<&str>, &Limits, &Engines) -> Result<Extracted, IngestError>,
{
    let filename = request.filename.as_deref();
    // The extraction is pure; nothing it touched is used after a panic.
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        extraction(bytes, filename, &request.limits, &request.engines)
    }));
    match outcome {
        Ok(Ok(extracted)) => Answer::Extracted { extracted },
        Ok(Err(error)) => Answer::Failed {
            message: error.to_string(),
            error,
        },
        Err(payload) => Answer::Panicked {
            message: panic_message(payload.as_ref()),
        },
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        return (*message).to_owned();
    }
    if let Some(message) = payload.downcast_ref::<String>() {
        return message.clone();
    }
    "a panic without a message".to_owned()
}

fn write_answer(output: &mut impl Write, answer: &Answer) -> io::Result<()> {
    // serde_json writes in small pieces, and stdout is line-buffered with a 1 KiB buffer:
    // a larger buffer spares a syscall per kilobyte of a long text.
    let mut buffered = io::BufWriter::with_capacity(64 * 1024, &mut *output);
    serde_json::to_writer(&mut buffered, answer)?;
    buffered.write_all(b"\n")?;
    // Flushes the buffer, then `output`.
    buffered.flush()
}

/// The parent's side: runs one extraction per call in a fresh child process.
#[derive(Debug, Clone)]
pub struct Worker {
    /// The executable that serves the protocol (`memvault`, re-executed).
    pub program: PathBuf,
    /// Arguments that put it in worker mode (`["ingest-worker"]`).
    pub args: Vec<String>,
    /// What each child may use.
    pub limits: WorkerLimits,
    /// The engines each child may drive (PDF, OCR, speech).
    pub engines: Engines,
}

/// How waiting for the child ended.
enum Ending {
    Exited(ExitStatus),
    /// The wall clock ran out and the child was killed.
    TimedOut,
}

/// What the reader threads collected.
struct ChildOutput {
    /// stdout, at most [`MAX_ANSWER_BYTES`]; why not, when it was longer or unreadable.
    answer: Result<Vec<u8>, String>,
    /// The end of stderr, lossily decoded.
    stderr_tail: String,
}

impl Worker {
    pub fn new(program: impl Into<PathBuf>, args: Vec<String>, limits: WorkerLimits) -> Self {
        Worker {
            program: program.into(),
            args,
            limits,
            engines: Engines::default(),
        }
    }

    /// The same worker, driving `engines`.
    pub fn with_engines(mut self, engines: Engines) -> Self {
        self.engines = engines;
        self
    }

    /// Sniffs and extracts `bytes` in a child process under [`Worker::limits`]; the result
    /// is what [`crate::sniff`] and [`crate::extract`] give in process, or why the child
    /// did not give it. Blocks the calling thread for up to the wall clock (run it on a
    /// blocking thread in async code); the child is always reaped before it returns.
    ///
    /// # Errors
    ///
    /// [`WorkerError::Failed`] for a clean extraction failure; the other variants for a
    /// child that was stopped, crashed or answered nonsense.
    pub fn extract(
        &self,
        bytes: &[u8],
        filename: Option<&str>,
        limits: &Limits,
    ) -> Result<Extracted, WorkerError> {
        let request = Request {
            version: PROTOCOL_VERSION,
            filename: filename.map(str::to_owned),
            limits: limits.clone(),
            process: ProcessLimits {
                memory_bytes: self.limits.memory_bytes,
                cpu_seconds: self.limits.cpu_seconds,
            },
            engines: self.engines.clone(),
        };
        let mut header = serde_json::to_vec(&request).map_err(|error| {
            WorkerError::Protocol(format!("cannot encode the request: {error}"))
        })?;
        header.push(b'\n');
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(WorkerError::Spawn)?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            kill_and_reap(&mut child);
            return Err(WorkerError::Spawn(io::Error::other(
                "the worker's standard streams are not piped",
            )));
        };
        let (ending, output) = thread::scope(|scope| {
            // A child that stops reading (it crashed, or it answers before reading) makes
            // this write fail with a broken pipe: how the child ended says why, so the
            // write's own error is not needed.
            scope.spawn(move || {
                let _ = stdin
                    .write_all(&header)
                    .and_then(|()| stdin.write_all(bytes));
            });
            let answer_reader = scope.spawn(move || read_answer(stdout));
            let stderr_reader = scope.spawn(move || read_tail(stderr, STDERR_EXCERPT_BYTES));
            let ending = wait_with_deadline(&mut child, self.limits.wall_clock);
            // Both pipes close when the child is gone, so both threads end.
            let answer = answer_reader
                .join()
                .unwrap_or_else(|_| Err("the answer reader panicked".to_owned()));
            let stderr_tail = stderr_reader.join().unwrap_or_default();
            (
                ending,
                ChildOutput {
                    answer,
                    stderr_tail,
                },
            )
        });
        match ending {
            Ok(Ending::TimedOut) => Err(WorkerError::TimedOut {
                after: self.limits.wall_clock,
            }),
            Ok(Ending::Exited(status)) => self.interpret(status, output),
            Err(error) => Err(WorkerError::Crashed {
                reason: format!("waiting for the worker failed: {error}"),
            }),
        }
    }

    /// Maps how the child exited and what it wrote to the call's result.
    fn interpret(&self, status: ExitStatus, output: ChildOutput) -> Result<Extracted, WorkerError> {
        use std::os::unix::process::ExitStatusExt;

        if let Some(signal) = status.signal() {
            return Err(self.killed_by(signal, &output.stderr_tail));
        }
        let answer = output.answer.map_err(WorkerError::Protocol)?;
        let parsed = parse_answer(&answer);
        if !status.success() {
            // A refusal exits non-zero on purpose and says why on stdout.
            if let Ok(Answer::Refused { message }) = parsed {
                return Err(WorkerError::Refused { reason: message });
            }
            return Err(WorkerError::Crashed {
                reason: with_stderr(format!("exited with {status}"), &output.stderr_tail),
            });
        }
        match parsed.map_err(WorkerError::Protocol)? {
            Answer::Extracted { extracted } => Ok(extracted),
            Answer::Failed { error, .. } => Err(WorkerError::Failed(error)),
            Answer::Panicked { message } => Err(WorkerError::Crashed {
                reason: format!("panicked: {message}"),
            }),
            Answer::OutOfMemory { .. } => Err(WorkerError::OutOfMemory {
                limit_bytes: self.limits.memory_bytes,
            }),
            Answer::Refused { message } => Err(WorkerError::Refused { reason: message }),
        }
    }

    /// Names a fatal signal and, where the child's last words say more, its cause.
    fn killed_by(&self, signal: i32, stderr_tail: &str) -> WorkerError {
        if stderr_tail.contains("memory allocation of") {
            return WorkerError::OutOfMemory {
                limit_bytes: self.limits.memory_bytes,
            };
        }
        if signal == libc::SIGXCPU {
            return WorkerError::CpuTimeExceeded {
                limit_seconds: self.limits.cpu_seconds,
            };
        }
        let stack_overflow = stderr_tail.contains("has overflowed its stack");
        let what = match signal {
            _ if stack_overflow => format!("stack overflow ({})", signal_name(signal)),
            libc::SIGKILL => format!(
                "killed by SIGKILL (the CPU-time hard limit of {} s, or the kernel's \
                 out-of-memory killer)",
                self.limits.cpu_seconds.saturating_add(1)
            ),
            libc::SIGSEGV => "segmentation fault (SIGSEGV)".to_owned(),
            libc::SIGABRT => "aborted (SIGABRT)".to_owned(),
            libc::SIGBUS => "bus error (SIGBUS)".to_owned(),
            libc::SIGILL => "illegal instruction (SIGILL)".to_owned(),
            libc::SIGFPE => "arithmetic exception (SIGFPE)".to_owned(),
            other => format!("killed by {}", signal_name(other)),
        };
        WorkerError::Crashed {
            reason: with_stderr(what, stderr_tail),
        }
    }
}

fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        other => return format!("signal {other}"),
    };
    name.to_owned()
}

fn with_stderr(what: String, stderr_tail: &str) -> String {
    let stderr_tail = stderr_tail.trim();
    if stderr_tail.is_empty() {
        return what;
    }
    format!("{what}; stderr: {stderr_tail}")
}

fn parse_answer(answer: &[u8]) -> Result<Answer, String> {
    if answer.iter().all(u8::is_ascii_whitespace) {
        return Err("the worker wrote no answer".to_owned());
    }
    serde_json::from_slice(answer).map_err(|error| {
        let start = answer.get(..120).unwrap_or(answer);
        format!(
            "{error}; the output began {:?}",
            String::from_utf8_lossy(start)
        )
    })
}

/// Polls the child until it exits or the wall clock runs out, then kills it. Polling (a
/// few milliseconds at first, 50 ms at most) needs no SIGCHLD handler, which would clash
/// with an async runtime's in the server.
fn wait_with_deadline(child: &mut Child, wall_clock: Duration) -> io::Result<Ending> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(Ending::Exited(status)),
            Ok(None) => {}
            Err(error) => {
                kill_and_reap(child);
                return Err(error);
            }
        }
        let elapsed = started.elapsed();
        if elapsed >= wall_clock {
            kill_and_reap(child);
            return Ok(Ending::TimedOut);
        }
        thread::sleep(pause.min(wall_clock - elapsed));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

fn kill_and_reap(child: &mut Child) {
    // Either may fail only because the child is already gone, which is the goal.
    let _ = child.kill();
    let _ = child.wait();
}

/// Reads stdout up to [`MAX_ANSWER_BYTES`]; past that, keeps draining so the child is not
/// blocked on a full pipe, and reports the overflow.
fn read_answer(mut stdout: ChildStdout) -> Result<Vec<u8>, String> {
    let mut answer = Vec::new();
    (&mut stdout)
        .take(MAX_ANSWER_BYTES + 1)
        .read_to_end(&mut answer)
        .map_err(|error| format!("cannot read the answer: {error}"))?;
    if answer.len() as u64 > MAX_ANSWER_BYTES {
        let _ = io::copy(&mut stdout, &mut io::sink());
        return Err(format!(
            "the answer is larger than {MAX_ANSWER_BYTES} bytes"
        ));
    }
    Ok(answer)
}

/// Reads stderr to its end and keeps the last `keep` bytes.
fn read_tail(mut stderr: ChildStderr, keep: usize) -> String {
    let mut tail: Vec<u8> = Vec::new();
    let mut buffer = [0_u8; 4096];
    loop {
        match stderr.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => {
                tail.extend_from_slice(buffer.get(..read).unwrap_or_default());
                if tail.len() > 2 * keep {
                    tail.drain(..tail.len() - keep);
                }
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if tail.len() > keep {
        tail.drain(..tail.len() - keep);
    }
    String::from_utf8_lossy(&tail).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kind;

    fn request_bytes(header: &str, body: &[u8]) -> Vec<u8> {
        let mut bytes = header.as_bytes().to_vec();
        bytes.push(b'\n');
        bytes.extend_from_slice(body);
        bytes
    }

    fn answer_of(input: &[u8]) -> (Answer, ExitCode) {
        let mut output = Vec::new();
        let code = serve_worker_with(input, &mut output, |bytes, _, _, _| {
            Ok(Extracted {
                kind: Kind::Text,
                text: String::from_utf8_lossy(bytes).into_owned(),
                title: None,
                sections: Vec::new(),
                notes: Vec::new(),
                truncated: false,
                deferred: Vec::new(),
                image: None,
            })
        });
        assert_eq!(output.last(), Some(&b'\n'));
        (serde_json::from_slice(&output).unwrap(), code)
    }

    #[test]
    fn a_bad_header_is_refused_before_any_limit_is_set() {
        for header in [
            "not json",
            r#"{"version":2,"filename":null,"limits":{},"process":{"memory_bytes":1,"cpu_seconds":1}}"#,
            r#"{"version":1,"filename":null,"limits":{},"process":{"memory_bytes":0,"cpu_seconds":0}}"#,
        ] {
            let (answer, code) = answer_of(&request_bytes(header, b"hello"));
            assert!(
                matches!(answer, Answer::Refused { .. }),
                "{header}: {answer:?}"
            );
            assert_eq!(code, ExitCode::FAILURE);
        }
        let (answer, _) = answer_of(b"no newline at all");
        let Answer::Refused { message } = answer else {
            panic!("{answer:?}")
        };
        assert!(message.contains("not a line"), "{message}");
    }

    #[test]
    fn a_panic_in_the_extraction_is_an_answer() {
        // run_extraction, not serve_worker: the limits must not be set on the test process.
        let mut output = Vec::new();
        let request = Request {
            version: PROTOCOL_VERSION,
            filename: None,
            limits: Limits::default(),
            process: ProcessLimits {
                memory_bytes: 1,
                cpu_seconds: 1,
            },
            engines: Engines::default(),
        };
        let answer = run_extraction(|_, _, _, _| panic!("boom"), &request, b"");
        write_answer(&mut output, &answer).unwrap();
        let parsed = parse_answer(&output).unwrap();
        assert!(matches!(parsed, Answer::Panicked { message } if message == "boom"));
    }

    #[test]
    fn signals_are_named() {
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
        assert_eq!(signal_name(libc::SIGXCPU), "SIGXCPU");
        assert_eq!(signal_name(200), "signal 200");
    }

    #[test]
    fn garbage_is_a_protocol_error_with_an_excerpt() {
        let error = parse_answer(b"hello from a confused worker").unwrap_err();
        assert!(error.contains("hello from a confused worker"), "{error}");
        assert_eq!(
            parse_answer(b"\n").unwrap_err(),
            "the worker wrote no answer"
        );
    }
}
