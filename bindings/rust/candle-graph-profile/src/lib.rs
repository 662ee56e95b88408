//! candle-graph runtime profiler for Candle programs.
//!
//! The seed's API (`ProfileConfig`, `ProfileSession`, `TimedOperation`) over the C++ library's C
//! ABI (`include/candle_graph_profile.h`), so code written against the seed's `profile.rs` keeps
//! compiling, plus interned handles for the hot path:
//!
//! ```no_run
//! use candle_graph_profile::{ProfileConfig, ProfileSession};
//! let session = ProfileSession::open("target/trace.jsonl", ProfileConfig::train("model::train_step"))?;
//! let matmul = session.op("operation:train:...:3", "matmul", &[])?;
//! {
//!     let _scope = matmul.scope(); // a clock read and a store into a per-thread buffer
//! }
//! session.finish()?;
//! # Ok::<(), candle_graph_profile::Error>(())
//! ```
//!
//! Traces are `candle-graph/runtime/4` JSONL by default (`runtime/3`, the seed's format, on
//! request); see `docs/runtime-4.md` in the repository.

use std::ffi::CStr;
use std::fmt;
use std::path::{Path, PathBuf};

mod ffi {
    use std::os::raw::{c_char, c_int};

    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct Str {
        pub ptr: *const c_char,
        pub len: usize,
    }

    impl Str {
        pub fn of(s: &str) -> Self {
            Str {
                ptr: s.as_ptr().cast(),
                len: s.len(),
            }
        }
        pub const NONE: Str = Str {
            ptr: std::ptr::null(),
            len: 0,
        };
    }

    #[repr(C)]
    pub struct Config {
        pub entrypoint: Str,
        pub phase: c_int,
        pub profile: Str,
        pub cargo_features: *const Str,
        pub cargo_features_len: usize,
        pub analysis_id: Str,
        pub build_id: Str,
        pub format: c_int,
        pub backpressure: c_int,
        pub buffer_records_per_thread: u64,
    }

    #[repr(C)]
    pub struct Session {
        _private: [u8; 0],
    }

    pub const EVENT_ID_MAX: usize = 64;

    extern "C" {
        pub fn cgp_session_open(path: Str, config: *const Config, out: *mut *mut Session) -> c_int;
        pub fn cgp_session_step(session: *const Session) -> u64;
        pub fn cgp_session_set_step(session: *mut Session, step: u64);
        pub fn cgp_session_op(
            session: *mut Session,
            static_id: Str,
            op: Str,
            inputs: *const Str,
            inputs_len: usize,
            out: *mut u32,
        ) -> c_int;
        pub fn cgp_op_begin(session: *mut Session, op: u32);
        pub fn cgp_op_end(session: *mut Session, op: u32);
        pub fn cgp_begin_operation(
            session: *mut Session,
            static_id: Str,
            op: Str,
            inputs: *const Str,
            inputs_len: usize,
            id_buf: *mut c_char,
            id_buf_len: usize,
            id_len: *mut usize,
        ) -> c_int;
        pub fn cgp_end_operation(
            session: *mut Session,
            event_id: Str,
            output: *const Str,
            duration_ns: *mut u64,
        ) -> c_int;
        pub fn cgp_record_edge_timing(session: *mut Session, from: Str, to: Str, ns: u64) -> c_int;
        pub fn cgp_session_flush(session: *mut Session) -> c_int;
        pub fn cgp_session_finish(session: *mut Session) -> c_int;
        pub fn cgp_session_free(session: *mut Session);
        pub fn cgp_last_error() -> *const c_char;
    }
}

/// Train or inference, as in event ids (`train-op-0-1`) and `meta.phase`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecutionPhase {
    Train,
    Infer,
}

impl ExecutionPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Train => "train",
            Self::Infer => "infer",
        }
    }
}

/// Trace schema to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceFormat {
    /// `candle-graph/runtime/4`: start times, threads, parents and an `end` record.
    #[default]
    RuntimeV4,
    /// `candle-graph/runtime/3`, line for line what the seed writes.
    RuntimeV3,
    /// `candle-graph/runtime/4-compact/1`: runtime/4's records with each static id written once
    /// in a `def` record and repeated fields left out (under 60 bytes per operation).
    RuntimeV4Compact,
}

/// What a thread does when its buffer is full because the writer fell behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backpressure {
    /// Wait for space; no event is lost.
    #[default]
    Block,
    /// Discard the event and count it in the `end` record's `dropped`.
    Drop,
}

/// Configuration for a profiling session started alongside train or inference.
#[derive(Debug, Clone)]
pub struct ProfileConfig {
    pub entrypoint: String,
    pub phase: ExecutionPhase,
    pub profile: String,
    pub cargo_features: Vec<String>,
    pub analysis_id: Option<String>,
    pub build_id: Option<String>,
    pub format: TraceFormat,
    pub backpressure: Backpressure,
    /// 0: the library default (65,536 records of 64 bytes per producing thread).
    pub buffer_records_per_thread: usize,
}

impl ProfileConfig {
    fn new(entrypoint: String, phase: ExecutionPhase) -> Self {
        Self {
            entrypoint,
            phase,
            profile: "release".into(),
            cargo_features: Vec::new(),
            analysis_id: None,
            build_id: None,
            format: TraceFormat::default(),
            backpressure: Backpressure::default(),
            buffer_records_per_thread: 0,
        }
    }

    pub fn train(entrypoint: impl Into<String>) -> Self {
        Self::new(entrypoint.into(), ExecutionPhase::Train)
    }

    pub fn infer(entrypoint: impl Into<String>) -> Self {
        Self::new(entrypoint.into(), ExecutionPhase::Infer)
    }
}

/// Why a profiler call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Io,
    UnknownOperation,
    InvalidArgument,
    Finished,
    Unbalanced,
}

#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn check(status: i32) -> Result<()> {
    if status == 0 {
        return Ok(());
    }
    let kind = match status {
        2 => ErrorKind::UnknownOperation,
        3 => ErrorKind::InvalidArgument,
        4 => ErrorKind::Finished,
        5 => ErrorKind::Unbalanced,
        _ => ErrorKind::Io,
    };
    // SAFETY: cgp_last_error returns a NUL-terminated thread-local string that stays valid until
    // the next call into the library on this thread; it is copied at once.
    let message = unsafe { CStr::from_ptr(ffi::cgp_last_error()) }
        .to_string_lossy()
        .into_owned();
    Err(Error { kind, message })
}

fn strs(items: &[String]) -> Vec<ffi::Str> {
    items.iter().map(|s| ffi::Str::of(s)).collect()
}

/// Calls `body` with `items` as C string views, on the stack for up to 8 (no allocation).
fn with_strs<R>(items: &[String], body: impl FnOnce(&[ffi::Str]) -> R) -> R {
    if items.len() <= 8 {
        let mut views = [ffi::Str::NONE; 8];
        for (view, item) in views.iter_mut().zip(items) {
            *view = ffi::Str::of(item);
        }
        body(&views[..items.len()])
    } else {
        body(&strs(items))
    }
}

/// Streaming profiler session (runtime/4 by default, or the seed's runtime/3).
///
/// All methods take `&self` and are thread-safe; the seed's `&mut self` call sites compile
/// unchanged.
pub struct ProfileSession {
    raw: *mut ffi::Session,
    path: PathBuf,
    phase: ExecutionPhase,
}

// SAFETY: the C++ session is internally synchronized: every entry point may be called from any
// thread (per-thread buffers, a mutex for the string API's open-operation table).
unsafe impl Send for ProfileSession {}
unsafe impl Sync for ProfileSession {}

impl ProfileSession {
    /// Open (or truncate) a JSONL profile trace at `path`, creating parent directories.
    pub fn open(path: impl AsRef<Path>, config: ProfileConfig) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let path_text = path.to_string_lossy().into_owned();
        let features = strs(&config.cargo_features);
        let opt = |s: &Option<String>| s.as_deref().map_or(ffi::Str::NONE, ffi::Str::of);
        let raw_config = ffi::Config {
            entrypoint: ffi::Str::of(&config.entrypoint),
            phase: match config.phase {
                ExecutionPhase::Train => 0,
                ExecutionPhase::Infer => 1,
            },
            profile: ffi::Str::of(&config.profile),
            cargo_features: features.as_ptr(),
            cargo_features_len: features.len(),
            analysis_id: opt(&config.analysis_id),
            build_id: opt(&config.build_id),
            format: match config.format {
                TraceFormat::RuntimeV4 => 0,
                TraceFormat::RuntimeV3 => 1,
                TraceFormat::RuntimeV4Compact => 2,
            },
            backpressure: match config.backpressure {
                Backpressure::Block => 0,
                Backpressure::Drop => 1,
            },
            buffer_records_per_thread: config.buffer_records_per_thread as u64,
        };
        let mut raw = std::ptr::null_mut();
        // SAFETY: every pointer in raw_config borrows data that outlives the call.
        check(unsafe { ffi::cgp_session_open(ffi::Str::of(&path_text), &raw_config, &mut raw) })?;
        Ok(Self {
            raw,
            path,
            phase: config.phase,
        })
    }

    pub fn phase(&self) -> ExecutionPhase {
        self.phase
    }

    pub fn step(&self) -> u64 {
        // SAFETY: raw is a live session until finish/drop.
        unsafe { ffi::cgp_session_step(self.raw) }
    }

    pub fn set_step(&self, step: u64) {
        // SAFETY: as above; the step is an atomic in the library.
        unsafe { ffi::cgp_session_set_step(self.raw, step) }
    }

    /// Begin timing an operation; returns an `event_id` for [`Self::end_operation`].
    ///
    /// The static id is interned once per session (the library caches it by address, then by
    /// content), so a call copies nothing but the returned id.
    pub fn begin_operation(
        &self,
        static_id: impl Into<String>,
        op: impl Into<String>,
        inputs: &[String],
    ) -> Result<String> {
        let (static_id, op) = (static_id.into(), op.into());
        with_strs(inputs, |inputs| {
            let mut buf = [0u8; ffi::EVENT_ID_MAX];
            let mut len = 0usize;
            // SAFETY: buf has EVENT_ID_MAX bytes, which the header guarantees suffice.
            check(unsafe {
                ffi::cgp_begin_operation(
                    self.raw,
                    ffi::Str::of(&static_id),
                    ffi::Str::of(&op),
                    inputs.as_ptr(),
                    inputs.len(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    &mut len,
                )
            })?;
            // Event ids are ASCII (`{phase}-op-{step}-{counter}`): one allocation, no re-coding.
            Ok(String::from_utf8(buf[..len].to_vec())
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
        })
    }

    /// End a timed operation and emit its `operation` record; returns its duration in ns.
    pub fn end_operation(&self, event_id: &str, output: Option<String>) -> Result<u64> {
        let output_str = output.as_deref().map(ffi::Str::of);
        let output_ptr = output_str
            .as_ref()
            .map_or(std::ptr::null(), |s| s as *const ffi::Str);
        let mut duration = 0u64;
        // SAFETY: output_ptr is null or points at output_str, alive for the call.
        check(unsafe {
            ffi::cgp_end_operation(self.raw, ffi::Str::of(event_id), output_ptr, &mut duration)
        })?;
        Ok(duration)
    }

    /// Record an edge timing between two static tensor/operation ids.
    pub fn record_edge_timing(
        &self,
        from_static_id: impl Into<String>,
        to_static_id: impl Into<String>,
        duration_ns: u64,
    ) -> Result<()> {
        let (from, to) = (from_static_id.into(), to_static_id.into());
        // SAFETY: both strings outlive the call.
        check(unsafe {
            ffi::cgp_record_edge_timing(
                self.raw,
                ffi::Str::of(&from),
                ffi::Str::of(&to),
                duration_ns,
            )
        })
    }

    /// Intern an operation for the fast path (`begin`/`end` or `scope` on the handle).
    pub fn op(&self, static_id: &str, op: &str, inputs: &[String]) -> Result<OpHandle<'_>> {
        let inputs = strs(inputs);
        let mut id = 0u32;
        // SAFETY: all borrowed data outlives the call.
        check(unsafe {
            ffi::cgp_session_op(
                self.raw,
                ffi::Str::of(static_id),
                ffi::Str::of(op),
                inputs.as_ptr(),
                inputs.len(),
                &mut id,
            )
        })?;
        Ok(OpHandle { session: self, id })
    }

    /// Wait until everything recorded so far is written to the file.
    pub fn flush(&self) -> Result<()> {
        // SAFETY: raw is live.
        check(unsafe { ffi::cgp_session_flush(self.raw) })
    }

    /// Drain, write the `end` record (runtime/4), close the file; returns its path or the first
    /// sticky error (I/O, or a handle ended where it was not open).
    pub fn finish(mut self) -> Result<PathBuf> {
        let raw = std::mem::replace(&mut self.raw, std::ptr::null_mut());
        // SAFETY: raw is live; cgp_session_finish frees it in every case.
        check(unsafe { ffi::cgp_session_finish(raw) })?;
        Ok(std::mem::take(&mut self.path))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ProfileSession {
    fn drop(&mut self) {
        if !self.raw.is_null() {
            // SAFETY: raw is live and owned by self.
            unsafe { ffi::cgp_session_free(self.raw) }
        }
    }
}

/// An interned operation: `begin`/`end` cost a clock read and a store into a per-thread buffer.
/// Scopes nest per thread; `end` closes this handle's innermost open scope on the calling thread.
#[derive(Clone, Copy)]
pub struct OpHandle<'s> {
    session: &'s ProfileSession,
    id: u32,
}

impl<'s> OpHandle<'s> {
    #[inline]
    pub fn begin(&self) {
        // SAFETY: the borrow keeps the session alive.
        unsafe { ffi::cgp_op_begin(self.session.raw, self.id) }
    }
    #[inline]
    pub fn end(&self) {
        // SAFETY: as above.
        unsafe { ffi::cgp_op_end(self.session.raw, self.id) }
    }
    /// Begins now and ends when the returned guard is dropped.
    pub fn scope(&self) -> OpScope<'s> {
        self.begin();
        OpScope { handle: *self }
    }
}

pub struct OpScope<'s> {
    handle: OpHandle<'s>,
}

impl Drop for OpScope<'_> {
    fn drop(&mut self) {
        self.handle.end();
    }
}

/// Convenience RAII guard for [`ProfileSession::begin_operation`] /
/// [`ProfileSession::end_operation`], as in the seed.
pub struct TimedOperation<'a> {
    session: &'a ProfileSession,
    event_id: String,
}

impl<'a> TimedOperation<'a> {
    pub fn begin(
        session: &'a ProfileSession,
        static_id: impl Into<String>,
        op: impl Into<String>,
        inputs: &[String],
    ) -> Result<Self> {
        let event_id = session.begin_operation(static_id, op, inputs)?;
        Ok(Self { session, event_id })
    }

    pub fn event_id(&self) -> &str {
        &self.event_id
    }
}

impl Drop for TimedOperation<'_> {
    fn drop(&mut self) {
        let _ = self.session.end_operation(&self.event_id, None);
    }
}

#[doc(hidden)]
pub mod test_support {
    extern "C" {
        fn cgp_test_c_abi_smoke(path: *const std::os::raw::c_char) -> std::os::raw::c_int;
    }

    /// Runs csrc/abi_smoke.c (the C ABI driven from C); 0 means every step behaved.
    pub fn c_abi_smoke(path: &std::ffi::CStr) -> i32 {
        // SAFETY: path is a valid NUL-terminated string.
        unsafe { cgp_test_c_abi_smoke(path.as_ptr()) }
    }
}
