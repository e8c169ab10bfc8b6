//! The project's one FFI boundary: Moonshine's C API in `libmoonshine.so`, loaded at run time.
//!
//! The declarations follow the ctypes wrapper shipped in the same wheel
//! (`moonshine_voice/moonshine_api.py` and `transcriber.py`, header version 20000):
//!
//! ```c
//! int32_t moonshine_load_transcriber_from_files(const char *path, uint32_t model_arch,
//!     const transcriber_option_t *options, uint64_t options_count, int32_t moonshine_version);
//! void moonshine_free_transcriber(int32_t handle);
//! int32_t moonshine_transcribe_without_streaming(int32_t handle, const float *audio,
//!     uint64_t audio_length, int32_t sample_rate, uint32_t flags, transcript_t **out);
//! const char *moonshine_error_to_string(int32_t error);
//! ```
//!
//! A negative return is an error code. The transcript written to `out` belongs to the
//! transcriber (the wrapper never frees it; there is no free function); it is read and
//! copied before the next call on the same handle and before the handle is freed.
//!
//! The library is loaded once per process and never unloaded (onnxruntime keeps global
//! state and threads; unloading it is not supported), and calls are serialised by one lock:
//! nothing says the C API is thread-safe.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use libloading::Library;

use crate::SpeechError;

/// `MOONSHINE_HEADER_VERSION` of the wrapper.
const HEADER_VERSION: i32 = 20_000;
/// `ModelArch.TINY`.
pub(crate) const MODEL_ARCH_TINY: u32 = 0;

/// `transcript_line_t`.
#[repr(C)]
struct TranscriptLine {
    text: *const c_char,
    audio_data: *const f32,
    audio_data_count: usize,
    start_time: f32,
    duration: f32,
    id: u64,
    is_complete: i8,
    is_updated: i8,
    is_new: i8,
    has_text_changed: i8,
}

/// `transcript_t`.
#[repr(C)]
struct Transcript {
    lines: *const TranscriptLine,
    line_count: u64,
}

type LoadTranscriber = unsafe extern "C" fn(*const c_char, u32, *const c_void, u64, i32) -> i32;
type FreeTranscriber = unsafe extern "C" fn(i32);
type TranscribeWithoutStreaming =
    unsafe extern "C" fn(i32, *const f32, u64, i32, u32, *mut *mut Transcript) -> i32;
type ErrorToString = unsafe extern "C" fn(i32) -> *const c_char;

/// The entry points, copied out of a library that is never unloaded.
struct Api {
    load_transcriber: LoadTranscriber,
    free_transcriber: FreeTranscriber,
    transcribe_without_streaming: TranscribeWithoutStreaming,
    error_to_string: ErrorToString,
}

/// Libraries loaded in this process, by path; each is leaked so its functions stay valid.
static LOADED: Mutex<Vec<(PathBuf, &'static Api)>> = Mutex::new(Vec::new());
/// Held for every call into the library.
static CALLS: Mutex<()> = Mutex::new(());

fn api(library_path: &Path) -> Result<&'static Api, SpeechError> {
    let mut loaded = LOADED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, api)) = loaded.iter().find(|(path, _)| path == library_path) {
        return Ok(api);
    }
    limit_malloc_arenas();
    // SAFETY: loading runs the library's initialisers (libmoonshine, libstdc++ and
    // onnxruntime constructors). The file is the pinned, hash-checked `libmoonshine.so`
    // from `moonshine-voice==0.0.4`, whose dependencies resolve through its RPATH to the
    // equally pinned libraries next to it; its initialisers only set up globals.
    let library = unsafe { Library::new(library_path) }.map_err(|error| {
        SpeechError::Engine(format!("cannot load {}: {error}", library_path.display()))
    })?;
    let library: &'static Library = Box::leak(Box::new(library));
    let api = Api {
        // SAFETY: the symbol is a function of exactly this signature in the C API (see the
        // module documentation); the library is leaked, so the pointer never dangles.
        load_transcriber: unsafe { symbol(library, b"moonshine_load_transcriber_from_files\0")? },
        // SAFETY: as above.
        free_transcriber: unsafe { symbol(library, b"moonshine_free_transcriber\0")? },
        // SAFETY: as above.
        transcribe_without_streaming: unsafe {
            symbol(library, b"moonshine_transcribe_without_streaming\0")?
        },
        // SAFETY: as above.
        error_to_string: unsafe { symbol(library, b"moonshine_error_to_string\0")? },
    };
    let api: &'static Api = Box::leak(Box::new(api));
    loaded.push((library_path.to_owned(), api));
    Ok(api)
}

/// Makes glibc's malloc use one arena for every thread. onnxruntime runs inference on a
/// thread pool, and each thread's own arena reserves 64 MiB or more of address space that
/// a worker's `RLIMIT_AS` counts in full: measured, one arena takes the peak address space
/// of a 30 s window from about 460 MiB to about 330 MiB, at no measurable cost in speed
/// (the threads allocate little while they compute). Process-wide, so done once, before
/// the library is loaded; a no-op elsewhere than glibc.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn mallopt(parameter: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
        }
        /// `M_ARENA_MAX` in glibc's `malloc.h`.
        const M_ARENA_MAX: std::ffi::c_int = -8;
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: `mallopt` is glibc's documented, thread-safe tuning call; it takes
            // two integers and touches no memory of ours. A failure (0) leaves the default.
            unsafe { mallopt(M_ARENA_MAX, 1) };
        });
    }
}

/// # Safety
///
/// `T` must be the exact function pointer type of the symbol `name`.
unsafe fn symbol<T: Copy>(library: &'static Library, name: &[u8]) -> Result<T, SpeechError> {
    // SAFETY: the caller guarantees `T` is the symbol's type.
    let symbol = unsafe { library.get::<T>(name) }.map_err(|error| {
        SpeechError::Engine(format!(
            "libmoonshine.so lacks {}: {error}",
            String::from_utf8_lossy(name.strip_suffix(b"\0").unwrap_or(name))
        ))
    })?;
    Ok(*symbol)
}

/// A loaded model: a transcriber handle, freed on drop.
pub(crate) struct Transcriber {
    api: &'static Api,
    handle: i32,
}

impl Transcriber {
    /// Loads the model in `model_dir` (`encoder_model.ort`, `decoder_model_merged.ort`,
    /// `tokenizer.bin`) with the library at `library_path`.
    pub(crate) fn load(
        library_path: &Path,
        model_dir: &Path,
        model_arch: u32,
    ) -> Result<Self, SpeechError> {
        let api = api(library_path)?;
        let path = CString::new(model_dir.as_os_str().as_encoded_bytes()).map_err(|_| {
            SpeechError::Engine(format!("{} contains a NUL byte", model_dir.display()))
        })?;
        let _guard = CALLS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // SAFETY: `path` is a NUL-terminated string alive for the call; no options are
        // passed (a null pointer with a count of 0, as the Python wrapper does); the
        // function returns a handle or a negative error code and keeps no pointer to `path`
        // that outlives the call (it reads the files during the call).
        let handle = unsafe {
            (api.load_transcriber)(
                path.as_ptr(),
                model_arch,
                std::ptr::null(),
                0,
                HEADER_VERSION,
            )
        };
        if handle < 0 {
            return Err(SpeechError::Engine(format!(
                "cannot load the model in {}: {}",
                model_dir.display(),
                error_message(api, handle)
            )));
        }
        Ok(Transcriber { api, handle })
    }

    /// Transcribes `samples` (mono, `sample_rate` Hz, -1.0..=1.0): the text of each line,
    /// in order.
    pub(crate) fn transcribe(
        &self,
        samples: &[f32],
        sample_rate: u32,
    ) -> Result<Vec<String>, SpeechError> {
        let rate = i32::try_from(sample_rate)
            .map_err(|_| SpeechError::Engine(format!("a sample rate of {sample_rate}")))?;
        let mut transcript: *mut Transcript = std::ptr::null_mut();
        let _guard = CALLS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // SAFETY: `self.handle` is a live transcriber (freed only in `drop`); `samples` is
        // a valid slice of `samples.len()` floats, only read during the call; `transcript`
        // is a valid place for the library to write one pointer.
        let code = unsafe {
            (self.api.transcribe_without_streaming)(
                self.handle,
                samples.as_ptr(),
                samples.len() as u64,
                rate,
                0,
                &mut transcript,
            )
        };
        if code < 0 {
            return Err(SpeechError::Engine(format!(
                "transcription failed: {}",
                error_message(self.api, code)
            )));
        }
        if transcript.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: on success `transcript` points to a `transcript_t` owned by the
        // transcriber, valid until the next call on this handle or its release; both wait
        // for `_guard`, and everything is copied out before it is dropped.
        let transcript = unsafe { &*transcript };
        if transcript.lines.is_null() || transcript.line_count == 0 {
            return Ok(Vec::new());
        }
        let count = usize::try_from(transcript.line_count).map_err(|_| {
            SpeechError::Engine(format!("a transcript of {} lines", transcript.line_count))
        })?;
        // SAFETY: `lines` points to `line_count` consecutive `transcript_line_t` (the
        // wrapper indexes it the same way), valid as above.
        let lines = unsafe { std::slice::from_raw_parts(transcript.lines, count) };
        let mut texts = Vec::with_capacity(count);
        for line in lines {
            if line.text.is_null() {
                continue;
            }
            // SAFETY: a non-null `text` is a NUL-terminated UTF-8 string owned by the
            // transcript (the wrapper reads it with `ctypes.string_at`), valid as above;
            // it is copied at once.
            let text = unsafe { CStr::from_ptr(line.text) };
            texts.push(text.to_string_lossy().into_owned());
        }
        Ok(texts)
    }
}

impl Drop for Transcriber {
    fn drop(&mut self) {
        let _guard = CALLS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // SAFETY: `self.handle` came from a successful load and is freed exactly once,
        // here; no transcript of it is referenced any more (they are copied under the lock).
        unsafe { (self.api.free_transcriber)(self.handle) };
    }
}

fn error_message(api: &Api, code: i32) -> String {
    // SAFETY: `moonshine_error_to_string` takes any code and returns null or a pointer to a
    // static NUL-terminated string ("Invalid handle", "Unknown error", ...).
    let message = unsafe { (api.error_to_string)(code) };
    if message.is_null() {
        return format!("error {code}");
    }
    // SAFETY: non-null: a static NUL-terminated string, as above.
    let text = unsafe { CStr::from_ptr(message) }.to_string_lossy();
    format!("{text} (error {code})")
}
