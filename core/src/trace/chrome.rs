//! The Chrome trace-event writer (feature `std`): what `ORDO_TRACE=path.json` and [`start`]
//! write, and what Perfetto (ui.perfetto.dev) and `chrome://tracing` open.
//!
//! The file is one JSON array of events. Process 1 ("ordo calls") has a track per thread with
//! every call (`cat` "api": name, handles, sizes, status) and the lifecycle's steps (`cat`
//! "lifecycle": init, shutdown, each teardown step); each device is a process of its own with
//! a track per queue and the work that ran on it, device-timed (`cat` "kernel", "copy", "fill",
//! "host", "graph"; kernels with their grid and block, copies and fills with their bytes and
//! bandwidth). Times are microseconds of one monotonic clock.
//!
//! Events are buffered and written at least every 100 ms by a writer thread of the trace's own
//! (also while no call comes), at the end of each final teardown and at [`stop`]. The path must
//! be a regular file (or not exist yet): a FIFO, a device or a directory is refused, never
//! waited on. A forked child drops the trace it inherited without writing a byte of it (the
//! file stays the parent's) and may start its own. After a teardown and at exit (an `atexit`
//! handler registered with the first trace) the array is closed, so the file is valid JSON; a
//! later event reopens it. A run killed before that leaves an array without its `]`, every event
//! in it whole: Perfetto opens it, and so does `ordo trace summary`.
//!
//! Where `libnvToolsExt.so.1` (or NVTX 3's `libnvtx3interop.so.1`) loads, every call is also an NVTX range (pushed when it
//! begins, popped when it returns), so Nsight Systems shows ordo's calls on its timeline.

use core::fmt::Write as _;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::string::String;
use std::sync::{Mutex, Once};

use super::{Call, Category, Sink, Work, WorkKind};
use crate::backend::BackendKind;
use crate::error::{Error, ErrorCode, Result};

/// How often buffered events are written out at least (nanoseconds).
const FLUSH_EVERY_NS: u64 = 100_000_000;
/// What closes the array (written after a teardown and at exit, overwritten by the next event).
const TAIL: &[u8] = b"\n]\n";
/// Argument names whose values are handles (written in hex).
const HANDLES: &[&str] =
    &["queue", "kernel", "device", "event", "program", "graph", "platform", "start", "end", "source"];

struct Writer {
    out: BufWriter<File>,
    /// The process that started the trace (a forked child's copy is not its own).
    pid: u32,
    /// Events written to the buffer since it last reached the file.
    unflushed: bool,
    path: PathBuf,
    /// No event written yet (the next one needs no comma).
    first: bool,
    /// The tail is written after the last event (the next event overwrites it).
    closed: bool,
    last_flush_ns: u64,
    /// Threads named so far (`thread_name` metadata), by their trace id.
    threads: std::collections::HashSet<u64>,
    /// Device processes: (backend, ordinal) → pid.
    devices: HashMap<(u8, u32), u64>,
    /// Queue tracks: queue handle → (pid, tid).
    queues: HashMap<u64, (u64, u64)>,
    kernels: HashMap<u64, String>,
    lost_at_start: u64,
    events: u64,
    /// The event being formatted, and the separator and event as written (both reused).
    line: String,
    scratch: std::vec::Vec<u8>,
}

/// The process-wide Chrome trace writer ([`start`], [`stop`]).
struct ChromeTrace {
    writer: Mutex<Option<Writer>>,
}

static TRACE: ChromeTrace = ChromeTrace { writer: Mutex::new(None) };

std::thread_local! {
    static TID: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}
static NEXT_TID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

/// A small id for the calling thread (1, 2, ...), the track of its calls.
fn thread_id() -> u64 {
    TID.with(|t| {
        if t.get() == 0 {
            t.set(NEXT_TID.fetch_add(1, core::sync::atomic::Ordering::Relaxed));
        }
        t.get()
    })
}

fn io_error(what: &str, e: &std::io::Error) -> Error {
    log::warn!("ordo: trace: {what}: {e}");
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            Error::new(ErrorCode::InvalidArgument, "the trace file's directory does not exist")
        }
        std::io::ErrorKind::PermissionDenied => {
            Error::new(ErrorCode::InvalidArgument, "the trace file may not be written (permission denied)")
        }
        std::io::ErrorKind::IsADirectory => Error::new(ErrorCode::InvalidArgument, "the trace path is a directory"),
        std::io::ErrorKind::WouldBlock => {
            Error::new(ErrorCode::InvalidArgument, "the trace path is not a regular file (a FIFO, socket or device)")
        }
        _ => Error::new(ErrorCode::OutOfResources, "the trace file could not be created or written"),
    }
}

/// Opens `path` for the trace without ever blocking: a FIFO with no reader is refused (opened
/// non-blocking), and so is anything that is not a regular file.
fn open_regular(path: &Path) -> Result<File> {
    let not_regular =
        || Error::new(ErrorCode::InvalidArgument, "the trace path is not a regular file (a FIFO, socket or device)");
    if let Ok(m) = std::fs::metadata(path) {
        if m.is_dir() {
            return Err(Error::new(ErrorCode::InvalidArgument, "the trace path is a directory"));
        }
        if !m.is_file() {
            return Err(not_regular());
        }
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // O_NONBLOCK: a FIFO that appeared after the check above fails instead of waiting.
        options.custom_flags(0o4000);
    }
    let file = options.open(path).map_err(|e| io_error("creating the file", &e))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(not_regular());
    }
    Ok(file)
}

/// Starts writing a trace of every call and every piece of device work to `path` (created or
/// truncated). `Busy` when a trace is being written already; `InvalidArgument` for a path whose
/// directory does not exist, that may not be written or that is not a regular file;
/// `OutOfResources` when the file cannot be created for another reason.
pub fn start(path: &Path) -> Result<()> {
    let mut w = TRACE.writer.lock().unwrap_or_else(|e| e.into_inner());
    if w.is_some() || super::enabled() {
        return Err(Error::new(ErrorCode::Busy, "a trace is being written already"));
    }
    let file = open_regular(path)?;
    let mut writer = Writer {
        out: BufWriter::with_capacity(1 << 16, file),
        pid: std::process::id(),
        unflushed: false,
        path: path.to_path_buf(),
        first: true,
        closed: false,
        last_flush_ns: crate::std_clock_ns(),
        threads: Default::default(),
        devices: HashMap::new(),
        queues: HashMap::new(),
        kernels: HashMap::new(),
        lost_at_start: super::lost_work(),
        events: 0,
        line: String::new(),
        scratch: std::vec::Vec::new(),
    };
    writer.out.write_all(b"[\n").map_err(|e| io_error("writing", &e))?;
    writer.metadata(1, 0, "process_name", "ordo calls");
    *w = Some(writer);
    drop(w);
    if !super::install(&TRACE) {
        *TRACE.writer.lock().unwrap_or_else(|e| e.into_inner()) = None;
        return Err(Error::new(ErrorCode::Busy, "another trace sink is installed"));
    }
    nvtx();
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        unsafe extern "C" {
            fn atexit(callback: extern "C" fn()) -> core::ffi::c_int;
        }
        extern "C" fn close_at_exit() {
            TRACE.close(false);
        }
        // SAFETY: a plain function that only takes the writer's lock if it is free.
        unsafe { atexit(close_at_exit) };
        fork::register();
    });
    flusher::ensure_running();
    Ok(())
}

mod process;
use process::{flusher, fork};

/// Stops the trace [`start`] began: device work still waiting for its events is resolved, the
/// array closed and the file written. Returns the file's path and how many events it has;
/// `NotFound` when no trace is being written.
pub fn stop() -> Result<(PathBuf, u64)> {
    if TRACE.writer.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_none_or(|w| w.pid != std::process::id()) {
        return Err(Error::new(ErrorCode::NotFound, "no trace is being written"));
    }
    super::uninstall();
    TRACE.close(true);
    let w = TRACE.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
    match w {
        Some(w) => Ok((w.path, w.events)),
        None => Err(Error::new(ErrorCode::NotFound, "no trace is being written")),
    }
}

/// Where the trace is being written, if one is.
pub fn path() -> Option<PathBuf> {
    TRACE.writer.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|w| w.path.clone())
}

/// Starts a trace to the file `ORDO_TRACE` names, once per process, if it names one (the
/// runtime's init calls it). A file that cannot be created is logged and not traced; when the
/// program started a trace already, that trace gets an event saying `ORDO_TRACE` was ignored.
pub fn start_from_env() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if let Some(p) = std::env::var_os("ORDO_TRACE").filter(|p| !p.is_empty())
            && let Err(e) = start(Path::new(&p))
        {
            log::warn!("ordo: ORDO_TRACE={}: not tracing: {e}", p.to_string_lossy());
            // A trace the program started is being written: it says so itself (a counter event
            // on the calls' process), since a library prints nothing and the log may go nowhere.
            TRACE.with(|w| {
                w.line.clear();
                let _ = write!(
                    w.line,
                    r#"{{"name":"ORDO_TRACE ignored (a trace was being written already)","ph":"C","pid":1,"tid":0,"ts":{},"args":{{"ignored":1}}}}"#,
                    micros(crate::std_clock_ns())
                );
                w.emit();
            });
        }
    });
}

impl ChromeTrace {
    /// Writes the tail and flushes. `wait`: take the lock even if another thread holds it (at
    /// exit it is only tried: the holder may never run again).
    fn close(&self, wait: bool) {
        let mut g = match self.writer.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) if wait => self.writer.lock().unwrap_or_else(|e| e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        if let Some(w) = g.as_mut() {
            w.close();
        }
    }

    /// Writes out the buffered events, if any (the flusher's tick).
    fn flush_if_due(&self) {
        let mut g = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = g.as_mut().filter(|w| w.unflushed && w.pid == std::process::id()) {
            let _ = w.out.flush();
            w.unflushed = false;
            w.last_flush_ns = crate::std_clock_ns();
        }
    }

    fn with(&self, f: impl FnOnce(&mut Writer)) {
        let mut g = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = g.as_mut() {
            f(w);
        }
    }
}

impl Writer {
    /// Writes the event in `self.line` (one JSON object), with its separator.
    fn emit(&mut self) {
        if self.closed {
            // Overwrite the tail: the array goes on.
            let _ = self.out.seek(SeekFrom::Current(-(TAIL.len() as i64)));
            self.closed = false;
        }
        let sep: &[u8] = if self.first { b"" } else { b",\n" };
        self.first = false;
        self.events += 1;
        // One write of the whole event: the buffer reaches the file at event boundaries.
        self.scratch.clear();
        self.scratch.extend_from_slice(sep);
        self.scratch.extend_from_slice(self.line.as_bytes());
        let _ = self.out.write_all(&self.scratch);
        self.unflushed = true;
        let now = crate::std_clock_ns();
        if now.saturating_sub(self.last_flush_ns) >= FLUSH_EVERY_NS {
            let _ = self.out.flush();
            self.unflushed = false;
            self.last_flush_ns = now;
        }
    }

    fn close(&mut self) {
        let lost = super::lost_work().saturating_sub(self.lost_at_start);
        if lost > 0 {
            self.line.clear();
            let _ = write!(
                self.line,
                r#"{{"name":"device work not timed (pending list full)","ph":"C","pid":1,"tid":0,"ts":{},"args":{{"spans":{lost}}}}}"#,
                micros(crate::std_clock_ns())
            );
            self.emit();
            self.lost_at_start += lost;
        }
        if !self.closed {
            let _ = self.out.write_all(TAIL);
            self.closed = true;
        }
        let _ = self.out.flush();
        self.unflushed = false;
        self.last_flush_ns = crate::std_clock_ns();
    }

    fn metadata(&mut self, pid: u64, tid: u64, kind: &str, name: &str) {
        self.line.clear();
        let _ = write!(self.line, r#"{{"name":"{kind}","ph":"M","pid":{pid},"tid":{tid},"args":{{"name":""#);
        escape_into(&mut self.line, name);
        self.line.push_str("\"}}");
        self.emit();
    }

    fn thread(&mut self) -> u64 {
        let tid = thread_id();
        if self.threads.insert(tid) {
            let name = std::thread::current().name().map(std::string::ToString::to_string);
            let label = match name {
                Some(n) => std::format!("thread {tid} ({n})"),
                None => std::format!("thread {tid}"),
            };
            self.metadata(1, tid, "thread_name", &label);
        }
        tid
    }

    /// A device's process (named at its first event).
    fn device_pid(&mut self, backend: BackendKind, number: u32, ordinal: u32) -> u64 {
        let key = (backend as u8, number);
        if let Some(&p) = self.devices.get(&key) {
            return p;
        }
        let p = 2 + self.devices.len() as u64;
        self.devices.insert(key, p);
        let name = match backend {
            BackendKind::Host => std::format!("host CPU {number}"),
            kind => std::format!("{kind:?} device {ordinal}"),
        };
        self.metadata(p, 0, "process_name", &name);
        p
    }

    fn queue_track(&mut self, w: &Work) -> (u64, u64) {
        if let Some(&t) = self.queues.get(&w.queue) {
            return t;
        }
        let pid = self.device_pid(w.backend, w.device_number, w.ordinal);
        let tid = 1 + self.queues.values().filter(|(p, _)| *p == pid).count() as u64;
        self.queues.insert(w.queue, (pid, tid));
        self.metadata(pid, tid, "thread_name", &std::format!("queue {:#x}", w.queue));
        (pid, tid)
    }
}

impl Sink for ChromeTrace {
    fn now_ns(&self) -> u64 {
        crate::std_clock_ns()
    }

    fn enter(&self, name: &'static str) {
        if let Some(n) = nvtx() {
            // SAFETY: `name` ends with NUL (the `Sink::enter` contract); the function was
            // resolved from the loaded library, which stays loaded.
            unsafe { (n.push)(name.as_ptr().cast()) };
        }
    }

    fn call(&self, c: &Call<'_>) {
        if let Some(n) = nvtx() {
            // SAFETY: as in `enter`; every call handed here was entered.
            unsafe { (n.pop)() };
        }
        self.with(|w| {
            let tid = w.thread();
            w.line.clear();
            let cat = match c.category {
                Category::Api => "api",
                Category::Lifecycle => "lifecycle",
            };
            let _ = write!(
                w.line,
                r#"{{"name":"{}","cat":"{cat}","ph":"X","pid":1,"tid":{tid},"ts":{},"dur":{},"args":{{"#,
                c.name,
                micros(c.start_ns),
                micros(c.end_ns.saturating_sub(c.start_ns))
            );
            for (k, v) in c.args {
                if HANDLES.contains(k) {
                    let _ = write!(w.line, r#""{k}":"{v:#x}","#);
                } else {
                    let _ = write!(w.line, r#""{k}":{v},"#);
                }
            }
            match c.status {
                None => w.line.push_str(r#""status":"ok"}}"#),
                Some(code) => {
                    let _ = write!(w.line, r#""status":"{code:?}"}}}}"#);
                }
            }
            w.emit();
        });
    }

    fn cache(&self, backend: BackendKind, device_number: u32, ordinal: u32, stats: &crate::CacheStats) {
        self.with(|w| {
            let pid = w.device_pid(backend, device_number, ordinal);
            w.line.clear();
            let _ = write!(
                w.line,
                r#"{{"name":"queue-ordered cache","ph":"C","pid":{pid},"tid":0,"ts":{},"args":{{"bytes":{},"hits":{},"misses":{}}}}}"#,
                micros(crate::std_clock_ns()),
                stats.bytes,
                stats.hits,
                stats.misses
            );
            w.emit();
        });
    }

    fn work(&self, work: &Work) {
        self.with(|w| {
            let (pid, tid) = w.queue_track(work);
            let dur = work.end_ns.saturating_sub(work.start_ns);
            let mut args = String::new();
            let (name, cat) = match work.kind {
                WorkKind::Kernel { kernel, grid, block } => {
                    let _ = write!(
                        args,
                        r#""kernel":"{kernel:#x}","grid":[{},{},{}],"block":[{},{},{}]"#,
                        grid[0], grid[1], grid[2], block[0], block[1], block[2]
                    );
                    let name = match w.kernels.get(&kernel) {
                        Some(n) => n.clone(),
                        None => std::format!("kernel {kernel:#x}"),
                    };
                    (name, "kernel")
                }
                WorkKind::Copy { bytes } | WorkKind::Fill { bytes } => {
                    let gbs = if dur > 0 { bytes as f64 / dur as f64 } else { 0.0 };
                    let _ = write!(args, r#""bytes":{bytes},"GB/s":{gbs:.3}"#);
                    if let WorkKind::Copy { .. } = work.kind {
                        ("copy".into(), "copy")
                    } else {
                        ("fill".into(), "fill")
                    }
                }
                WorkKind::HostFunction => ("host function".into(), "host"),
                WorkKind::Graph { graph } => {
                    let _ = write!(args, r#""graph":"{graph:#x}""#);
                    ("graph launch".into(), "graph")
                }
            };
            if !args.is_empty() {
                args.push(',');
            }
            let _ = write!(args, r#""submitted":{}"#, micros(work.submit_ns));
            w.line.clear();
            w.line.push_str(r#"{"name":""#);
            escape_into(&mut w.line, &name);
            let _ = write!(
                w.line,
                r#"","cat":"{cat}","ph":"X","pid":{pid},"tid":{tid},"ts":{},"dur":{},"args":{{{args}}}}}"#,
                micros(work.start_ns),
                micros(dur)
            );
            w.emit();
        });
    }

    fn kernel_named(&self, kernel: u64, name: &str) {
        self.with(|w| {
            w.kernels.insert(kernel, name.into());
        });
    }

    fn checkpoint(&self) {
        self.close(true);
    }
}

/// Nanoseconds as microseconds with three decimals (what `ts` and `dur` hold).
fn micros(ns: u64) -> impl core::fmt::Display {
    struct M(u64);
    impl core::fmt::Display for M {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
        }
    }
    M(ns)
}

fn escape_into(out: &mut String, s: &str) {
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
}

/// NVTX's range functions, from `libnvToolsExt.so.1` where it loads.
#[derive(Clone, Copy)]
struct Nvtx {
    push: unsafe extern "C" fn(*const core::ffi::c_char) -> core::ffi::c_int,
    pop: unsafe extern "C" fn() -> core::ffi::c_int,
}

/// NVTX, loaded at the first trace (`None` where the library is absent).
fn nvtx() -> Option<Nvtx> {
    static NVTX: std::sync::OnceLock<Option<Nvtx>> = std::sync::OnceLock::new();
    *NVTX.get_or_init(load_nvtx)
}

/// Whether NVTX ranges are being emitted (the library loaded).
pub fn nvtx_loaded() -> bool {
    nvtx().is_some()
}

#[cfg(unix)]
fn load_nvtx() -> Option<Nvtx> {
    use core::ffi::{c_char, c_int, c_void};
    unsafe extern "C" {
        fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }
    const RTLD_NOW: c_int = 2;
    // NVTX 2's library (CUDA toolkits up to 12), then NVTX 3's interoperation library (the same
    // C functions: the `nvidia-nvtx-cu12` wheel ships it from 12.9 on).
    let names = [c"libnvToolsExt.so.1", c"libnvtx3interop.so.1"];
    // SAFETY: NUL-terminated names; a library that is absent gives null.
    let lib = names.iter().map(|n| unsafe { dlopen(n.as_ptr(), RTLD_NOW) }).find(|l| !l.is_null())?;
    // SAFETY: the library stays loaded (never closed); symbols looked up by their C names.
    let (push, pop) = unsafe { (dlsym(lib, c"nvtxRangePushA".as_ptr()), dlsym(lib, c"nvtxRangePop".as_ptr())) };
    if push.is_null() || pop.is_null() {
        return None;
    }
    log::info!("ordo: trace: NVTX ranges on");
    // SAFETY: NVTX's documented signatures: `int nvtxRangePushA(const char*)`, `int nvtxRangePop(void)`.
    Some(unsafe {
        Nvtx {
            push: core::mem::transmute::<*mut c_void, unsafe extern "C" fn(*const c_char) -> c_int>(push),
            pop: core::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> c_int>(pop),
        }
    })
}

#[cfg(not(unix))]
fn load_nvtx() -> Option<Nvtx> {
    None
}
