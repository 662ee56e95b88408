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
//!
//! # Module scopes and the global session
//!
//! A Candle module's constructor knows its VarBuilder path (`vb.prefix()`, e.g.
//! `model.layers.3.self_attn`); the model IR's module tree is built from the same strings. Time
//! each module instance under that path:
//!
//! ```no_run
//! use candle_graph_profile::{install_global, module_scope, ProfileConfig};
//! // Once, at the start of main (an exit hook finishes the trace, also after process::exit):
//! install_global("target/trace.jsonl", ProfileConfig::infer("model::forward"))?;
//!
//! struct Attention { cg_path: String /* vb.prefix() in `new` */ }
//! impl Attention {
//!     fn forward(&self) {
//!         let _cg_scope = candle_graph_profile::module_scope(&self.cg_path); // None, free, without a global session
//!         // ... tensor ops ...
//!     }
//! }
//! # Ok::<(), candle_graph_profile::Error>(())
//! ```
//!
//! With a session at hand, `session.module_scope(&path)` gives the same guard and
//! `session.time_module(&path, || self.attn.forward(x))` wraps a call in place and returns its
//! value. Durations are host-side unless the config has a device-synchronise callback
//! ([`ProfileConfig::device_synchronize`], for CUDA/Metal).

use std::ffi::CStr;
use std::fmt;
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

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
        pub device_sync: Option<unsafe extern "C" fn(*mut std::ffi::c_void)>,
        pub device_sync_user: *mut std::ffi::c_void,
    }

    #[repr(C)]
    pub struct OpenOptions {
        pub struct_size: usize,
        pub max_distinct_ids: u32,
        pub stats_every: u64,
        pub stats_on_non_finite: u32,
    }

    #[repr(C)]
    pub struct TensorStats {
        pub struct_size: usize,
        pub of: u32,
        pub reason: u32,
        pub index: u64,
        pub dtype: Str,
        pub shape: *const u64,
        pub rank: usize,
        pub nan: u64,
        pub pos_inf: u64,
        pub neg_inf: u64,
        pub zeros: u64,
        pub has_finite: u32,
        pub min: f64,
        pub max: f64,
        pub mean: f64,
        pub rms: f64,
        pub abs_max: f64,
    }

    #[repr(C)]
    pub struct Session {
        _private: [u8; 0],
    }

    pub const EVENT_ID_MAX: usize = 64;

    extern "C" {
        pub fn cgp_session_open_with(
            path: Str,
            config: *const Config,
            options: *const OpenOptions,
            out: *mut *mut Session,
        ) -> c_int;
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
        pub fn cgp_session_stats_due(session: *const Session) -> c_int;
        pub fn cgp_record_stats(
            session: *mut Session,
            path: Str,
            stats: *const TensorStats,
        ) -> c_int;
        pub fn cgp_record_child_stats(
            session: *mut Session,
            parent: Str,
            child: Str,
            stats: *const TensorStats,
        ) -> c_int;
        pub fn cgp_session_flush(session: *mut Session) -> c_int;
        pub fn cgp_session_close(session: *mut Session) -> c_int;
        pub fn cgp_module_begin(session: *mut Session, path: Str, out: *mut u64) -> c_int;
        pub fn cgp_module_end(session: *mut Session, scope: u64);
        pub fn cgp_module_begin_child(
            session: *mut Session,
            parent: Str,
            child: Str,
            out: *mut u64,
        ) -> c_int;
        pub fn atexit(callback: extern "C" fn()) -> c_int;
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

/// A device-synchronise callback (e.g. `move || device.synchronize().unwrap()`), run before the
/// clock read at every module scope's begin and end so that durations include the device's work.
#[derive(Clone)]
pub struct DeviceSync(pub Arc<dyn Fn() + Send + Sync>);

impl DeviceSync {
    pub fn new(f: impl Fn() + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }
}

impl fmt::Debug for DeviceSync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DeviceSync(..)")
    }
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
    /// Called before the clock read at each module scope's begin and end (CUDA/Metal: a host
    /// timestamp measures only a kernel's launch); `meta` then ends with `"device_sync":true`.
    /// `None`: module durations are host-side.
    pub device_synchronize: Option<DeviceSync>,
    /// Distinct static ids (with op and inputs), edges and module paths the session interns; 0:
    /// the library's limit and default, 4,194,304. Past it a new id is refused
    /// ([`ErrorKind::InvalidArgument`]) and counted in the `end` record's `errors`.
    pub max_distinct_ids: u32,
    /// Tensor statistics schedule ([`ProfileSession::stats_due`]): every `stats_every` steps (0:
    /// never on schedule). Written to `meta` when set. [`install_global`] lets the environment
    /// override it: `CANDLE_GRAPH_STATS_EVERY=N`.
    pub stats_every: u64,
    /// Also record a tensor's statistics whenever it holds a NaN or ±Inf (the program counts the
    /// non-finite elements on every call: one reduction). Override:
    /// `CANDLE_GRAPH_STATS_ON_NON_FINITE=1`.
    pub stats_on_non_finite: bool,
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
            device_synchronize: None,
            max_distinct_ids: 0,
            stats_every: 0,
            stats_on_non_finite: false,
        }
    }

    /// Sets [`Self::device_synchronize`].
    pub fn with_device_sync(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.device_synchronize = Some(DeviceSync::new(f));
        self
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
    match items {
        [] => return body(&[]),
        [one] => return body(&[ffi::Str::of(one)]),
        _ => {}
    }
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
    // The device-sync callback the library calls through `sync_trampoline` (boxed: its address is
    // the callback's user pointer and must not move).
    _sync: Option<Box<Arc<dyn Fn() + Send + Sync>>>,
    // finish(): done once, its result kept for later calls.
    finished: Mutex<Option<Result<PathBuf>>>,
}

/// The name the module-scope documentation uses.
pub type Session = ProfileSession;

unsafe extern "C" fn sync_trampoline(user: *mut c_void) {
    // SAFETY: user is the address of the session's boxed Arc, alive as long as the session.
    let f = unsafe { &*(user as *const Arc<dyn Fn() + Send + Sync>) };
    // A panic must not unwind into C++.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f()));
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
            device_sync: None,
            device_sync_user: std::ptr::null_mut(),
        };
        let mut raw_config = raw_config;
        let sync: Option<Box<Arc<dyn Fn() + Send + Sync>>> = config
            .device_synchronize
            .as_ref()
            .map(|d| Box::new(d.0.clone()));
        if let Some(f) = &sync {
            raw_config.device_sync = Some(sync_trampoline);
            raw_config.device_sync_user = &**f as *const Arc<dyn Fn() + Send + Sync> as *mut c_void;
        }
        let mut raw = std::ptr::null_mut();
        // SAFETY: every pointer in raw_config borrows data that outlives the call.
        let options = ffi::OpenOptions {
            struct_size: std::mem::size_of::<ffi::OpenOptions>(),
            max_distinct_ids: config.max_distinct_ids,
            stats_every: config.stats_every,
            stats_on_non_finite: u32::from(config.stats_on_non_finite),
        };
        check(unsafe {
            ffi::cgp_session_open_with(ffi::Str::of(&path_text), &raw_config, &options, &mut raw)
        })?;
        Ok(Self {
            raw,
            path,
            phase: config.phase,
            _sync: sync,
            finished: Mutex::new(None),
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
    /// content), so a call copies nothing but the returned id. `static_id` and `op` take anything
    /// the seed's `impl Into<String>` took in practice (`String`, `&str`, `&String`, `Cow<str>`)
    /// but are only borrowed: passing `"matmul"` allocates nothing.
    pub fn begin_operation(
        &self,
        static_id: impl AsRef<str>,
        op: impl AsRef<str>,
        inputs: &[String],
    ) -> Result<String> {
        let (static_id, op) = (static_id.as_ref(), op.as_ref());
        with_strs(inputs, |inputs| {
            // The library writes the id into a buffer on the stack; the returned String is then
            // one allocation of exactly the id's length (the one allocation the seed's `-> String`
            // shape makes any implementation pay), filled by one copy: no formatting machinery,
            // no UTF-8 validation pass, one FFI call.
            let mut buf = std::mem::MaybeUninit::<[u8; ffi::EVENT_ID_MAX]>::uninit();
            let mut len = 0usize;
            // SAFETY: buf has EVENT_ID_MAX bytes, which the header guarantees suffice; the
            // library writes at most that many.
            check(unsafe {
                ffi::cgp_begin_operation(
                    self.raw,
                    ffi::Str::of(static_id),
                    ffi::Str::of(op),
                    inputs.as_ptr(),
                    inputs.len(),
                    buf.as_mut_ptr().cast(),
                    ffi::EVENT_ID_MAX,
                    &mut len,
                )
            })?;
            // SAFETY: the library wrote `len` bytes (len < EVENT_ID_MAX: a NUL follows them) of an
            // ASCII event id (`{phase}-op-{step}-{counter}`), so they are initialized UTF-8.
            unsafe {
                let bytes = std::slice::from_raw_parts(
                    buf.as_ptr().cast::<u8>(),
                    len.min(ffi::EVENT_ID_MAX - 1),
                );
                Ok(String::from(std::str::from_utf8_unchecked(bytes)))
            }
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
        from_static_id: impl AsRef<str>,
        to_static_id: impl AsRef<str>,
        duration_ns: u64,
    ) -> Result<()> {
        let (from, to) = (from_static_id.as_ref(), to_static_id.as_ref());
        // SAFETY: both strings outlive the call.
        check(unsafe {
            ffi::cgp_record_edge_timing(self.raw, ffi::Str::of(from), ffi::Str::of(to), duration_ns)
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
    /// sticky error (I/O, or a handle or scope ended where it was not open).
    ///
    /// Idempotent: later calls return the first call's result. Takes `&self`, so a session kept
    /// in a `static` (see [`install_global`]) can be finished; afterwards scopes and handles
    /// record nothing and the string API returns [`ErrorKind::Finished`]. Call it after other
    /// threads have stopped using the session.
    pub fn finish(&self) -> Result<PathBuf> {
        let mut done = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(result) = done.as_ref() {
            return result.clone();
        }
        // SAFETY: raw is live until drop; cgp_session_close does not free it.
        let result = check(unsafe { ffi::cgp_session_close(self.raw) }).map(|()| self.path.clone());
        *done = Some(result.clone());
        result
    }

    /// Time a module instance under its VarBuilder path (`vb.prefix()`, e.g.
    /// `model.layers.3.self_attn`) until the guard is dropped: one `module` record. The path is
    /// interned once per session (cached per thread by address, then by content), so a scope costs
    /// a clock read and a store at each end. Scopes nest per thread; drop them innermost first on
    /// the thread that opened them (the guard is not `Send`). Records nothing in runtime/3
    /// sessions and after `finish`.
    #[inline]
    pub fn module_scope(&self, path: &str) -> ModuleScope<'_> {
        let mut token = 0u64;
        // SAFETY: raw is live while self is borrowed; path outlives the call. A failure (finished
        // session) leaves token 0, a guard that records nothing.
        unsafe { ffi::cgp_module_begin(self.raw, ffi::Str::of(path), &mut token) };
        ModuleScope {
            session: self,
            token,
            _not_send: PhantomData,
        }
    }

    /// Time the child `child` of the module at `parent` (a candle-nn layer it calls, which has no
    /// path of its own) as `parent.child` (`child` alone when `parent` is empty, the root). The
    /// pair is joined once per thread and then found by the two strings' addresses, so pass the
    /// same buffers each call: the module's `cg_path` field and a string literal.
    #[inline]
    pub fn child_scope(&self, parent: &str, child: &str) -> ModuleScope<'_> {
        let mut token = 0u64;
        // SAFETY: as in module_scope.
        unsafe {
            ffi::cgp_module_begin_child(
                self.raw,
                ffi::Str::of(parent),
                ffi::Str::of(child),
                &mut token,
            )
        };
        ModuleScope {
            session: self,
            token,
            _not_send: PhantomData,
        }
    }

    /// Runs `f` inside [`Self::module_scope`]`(path)` and returns its value:
    /// `session.time_module(&self.cg_path, || self.attn.forward(x))`.
    #[inline]
    pub fn time_module<R>(&self, path: &str, f: impl FnOnce() -> R) -> R {
        let _scope = self.module_scope(path);
        f()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What to compute for tensor statistics now: [`StatsDue::Full`] when
    /// [`ProfileConfig::stats_every`] divides the step, else [`StatsDue::NonFiniteOnly`] with
    /// [`ProfileConfig::stats_on_non_finite`], else [`StatsDue::None`] (also for runtime/3
    /// sessions and after finish).
    #[inline]
    pub fn stats_due(&self) -> StatsDue {
        // SAFETY: raw is a live session until finish/drop.
        match unsafe { ffi::cgp_session_stats_due(self.raw) } {
            2 => StatsDue::Full,
            1 => StatsDue::NonFiniteOnly,
            _ => StatsDue::None,
        }
    }

    /// Writes one `stats` line for the tensor at `path` (a module path for outputs, a parameter's
    /// VarBuilder key for gradients). An inconsistent record is refused
    /// ([`ErrorKind::InvalidArgument`], naming the field) and counted in `end.errors`.
    pub fn record_stats(&self, path: &str, stats: &TensorStats) -> Result<()> {
        let raw = stats.raw();
        // SAFETY: raw borrows `stats`, which outlives the call.
        check(unsafe { ffi::cgp_record_stats(self.raw, ffi::Str::of(path), &raw) })
    }

    /// The same for the child `child` of the module at `parent` (path `parent.child`).
    pub fn record_child_stats(&self, parent: &str, child: &str, stats: &TensorStats) -> Result<()> {
        let raw = stats.raw();
        // SAFETY: as above.
        check(unsafe {
            ffi::cgp_record_child_stats(self.raw, ffi::Str::of(parent), ffi::Str::of(child), &raw)
        })
    }
}

/// What a tensor's statistics describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StatsOf {
    /// A module's output (after its forward); the path is the module's.
    #[default]
    Output,
    /// A parameter's gradient (after backward); the path is the parameter's VarBuilder key.
    Grad,
}

/// Why a record was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StatsReason {
    /// The schedule asked for it ([`StatsDue::Full`]).
    #[default]
    Sampled,
    /// The tensor held a NaN or ±Inf ([`StatsDue::NonFiniteOnly`] found some).
    NonFinite,
}

/// What the program should compute now ([`ProfileSession::stats_due`], [`stats_due`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsDue {
    /// Nothing.
    None,
    /// Count the non-finite elements; compute and record everything only when there are some.
    NonFiniteOnly,
    /// Compute and record everything.
    Full,
}

/// Over a tensor's finite elements.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FiniteStats {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Root of the mean square.
    pub rms: f64,
    pub abs_max: f64,
}

/// A few scalars about one tensor, computed by the program on the tensor's device
/// (docs/runtime-4.md, "Additions: tensor statistics").
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TensorStats {
    pub of: StatsOf,
    /// Which of a module's outputs (a tuple's position, a `Vec`'s index).
    pub index: u64,
    pub reason: StatsReason,
    /// Candle's name for the dtype, lower case: `f32`, `bf16`, `u32`.
    pub dtype: String,
    pub shape: Vec<u64>,
    pub nan: u64,
    pub pos_inf: u64,
    pub neg_inf: u64,
    pub zeros: u64,
    /// `Some` iff some element is finite.
    pub finite: Option<FiniteStats>,
}

impl TensorStats {
    fn raw(&self) -> ffi::TensorStats {
        let f = self.finite.unwrap_or_default();
        ffi::TensorStats {
            struct_size: std::mem::size_of::<ffi::TensorStats>(),
            of: match self.of {
                StatsOf::Output => 0,
                StatsOf::Grad => 1,
            },
            reason: match self.reason {
                StatsReason::Sampled => 0,
                StatsReason::NonFinite => 1,
            },
            index: self.index,
            dtype: ffi::Str::of(&self.dtype),
            shape: self.shape.as_ptr(),
            rank: self.shape.len(),
            nan: self.nan,
            pos_inf: self.pos_inf,
            neg_inf: self.neg_inf,
            zeros: self.zeros,
            has_finite: u32::from(self.finite.is_some()),
            min: f.min,
            max: f.max,
            mean: f.mean,
            rms: f.rms,
            abs_max: f.abs_max,
        }
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

/// An open module scope ([`ProfileSession::module_scope`], [`module_scope`]): closed when
/// dropped. Not `Send`: a scope must end on the thread that began it.
pub struct ModuleScope<'s> {
    session: &'s ProfileSession,
    token: u64,
    _not_send: PhantomData<*const ()>,
}

impl ModuleScope<'_> {
    /// False when the scope records nothing (runtime/3 session, finished session).
    pub fn is_active(&self) -> bool {
        self.token != 0
    }
}

impl Drop for ModuleScope<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.token != 0 {
            // SAFETY: the borrow keeps the session alive.
            unsafe { ffi::cgp_module_end(self.session.raw, self.token) }
        }
    }
}

static GLOBAL: OnceLock<ProfileSession> = OnceLock::new();

extern "C" fn finish_global_at_exit() {
    if let Some(session) = GLOBAL.get() {
        let _ = session.finish();
    }
}

/// Opens the process-wide session that [`module_scope`] and [`global`] use, and registers an exit
/// hook (libc `atexit`) that finishes it, so a normal return from `main` and
/// `std::process::exit` both leave a complete trace with its `end` record (scopes still open at
/// exit are counted in `end.open_modules`). Fails if a global session is already installed.
/// Threads still recording while the process exits may lose their last records.
pub fn install_global(
    path: impl AsRef<Path>,
    config: ProfileConfig,
) -> Result<&'static ProfileSession> {
    static INSTALL: Mutex<()> = Mutex::new(());
    let _guard = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    if GLOBAL.get().is_some() {
        return Err(Error {
            kind: ErrorKind::InvalidArgument,
            message: "a global profile session is already installed".into(),
        });
    }
    let mut config = config;
    if let Some(every) = env_override("CANDLE_GRAPH_STATS_EVERY")? {
        config.stats_every = every;
    }
    if let Some(on) = env_override("CANDLE_GRAPH_STATS_ON_NON_FINITE")? {
        config.stats_on_non_finite = on != 0;
    }
    let session = ProfileSession::open(path, config)?;
    let session = GLOBAL.get_or_init(|| session);
    // SAFETY: registers a plain extern "C" function; it only reads the static.
    if unsafe { ffi::atexit(finish_global_at_exit) } != 0 {
        return Err(Error {
            kind: ErrorKind::Io,
            message: "cannot register the profiler's exit hook (atexit failed)".into(),
        });
    }
    Ok(session)
}

// A number from the environment; a value that is not one is an error naming the variable (a typo
// must not silently switch statistics off).
fn env_override(name: &str) -> Result<Option<u64>> {
    match std::env::var(name) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Ok(text) => text.trim().parse::<u64>().map(Some).map_err(|_| Error {
            kind: ErrorKind::InvalidArgument,
            message: format!("{name}={text:?} is not a non-negative integer"),
        }),
        Err(std::env::VarError::NotUnicode(_)) => Err(Error {
            kind: ErrorKind::InvalidArgument,
            message: format!("{name} is not valid UTF-8"),
        }),
    }
}

/// The session [`install_global`] opened, if any.
#[inline]
pub fn global() -> Option<&'static ProfileSession> {
    GLOBAL.get()
}

/// A module scope on the global session: `let _cg_scope =
/// candle_graph_profile::module_scope(&self.cg_path);` in a module's `forward`. Without a global
/// session it returns `None` at the cost of one atomic load.
#[inline]
pub fn module_scope(path: &str) -> Option<ModuleScope<'static>> {
    GLOBAL.get().map(|session| session.module_scope(path))
}

/// A child scope on the global session: what `candle-graph instrument` writes around a call of a
/// library layer a module holds (`self.q_proj.forward(x)` in `model.layers.3.self_attn` is timed as
/// `model.layers.3.self_attn.q_proj`):
///
/// ```ignore
/// let q = {
///     #[cfg(feature = "candle-graph-profile")]
///     let _cg_scope = candle_graph_profile::child_scope(&self.cg_path, "q_proj");
///     let cg_out = self.q_proj.forward(x);
///     cg_out
/// }?;
/// ```
///
/// Without a global session it returns `None` at the cost of one atomic load.
#[inline]
pub fn child_scope(parent: &str, child: &'static str) -> Option<ModuleScope<'static>> {
    GLOBAL
        .get()
        .map(|session| session.child_scope(parent, child))
}

/// [`ProfileSession::stats_due`] on the global session; [`StatsDue::None`] without one (one
/// atomic load).
#[inline]
pub fn stats_due() -> StatsDue {
    GLOBAL
        .get()
        .map_or(StatsDue::None, ProfileSession::stats_due)
}

/// [`ProfileSession::record_stats`] on the global session; nothing without one. A refused record
/// is counted in the trace's `end.errors` (the program goes on).
pub fn record_stats(path: &str, stats: &TensorStats) {
    if let Some(session) = GLOBAL.get() {
        let _ = session.record_stats(path, stats);
    }
}

/// [`ProfileSession::record_child_stats`] on the global session; nothing without one.
pub fn record_child_stats(parent: &str, child: &str, stats: &TensorStats) {
    if let Some(session) = GLOBAL.get() {
        let _ = session.record_child_stats(parent, child, stats);
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
        static_id: impl AsRef<str>,
        op: impl AsRef<str>,
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
