//! The timeline: every call of the runtime (whatever ABI made it), the device work it submits
//! (device-timed) and the lifecycle's steps, handed to a [`Sink`] while one is installed.
//!
//! Off (no sink), a call pays one relaxed load of a flag. On, a call's start and end times come
//! from the sink's clock and the call is handed to [`Sink::call`] when it returns; work a call
//! puts on a queue (launches, copies, fills, host functions, graph launches) is bracketed by two
//! backend events, and once they have completed it is handed to [`Sink::work`] with its start and
//! end on the host's clock. A queue's first timed work records a reference event and waits for
//! it (once per queue per trace: the host time when it completed anchors the queue's device
//! times); each later span is measured from the previous one's end on the same queue, so that
//! spans on a queue never overlap and never start before their call did.
//!
//! Spans wait in a fixed list (`MAX_PENDING`) until their events complete; they are resolved
//! without blocking when calls submit more work, and with blocking when their queue is
//! destroyed, when the runtime tears down (before any object is released) and when the sink is
//! removed. When the list is full and nothing in it has completed, the new work runs untimed and
//! is counted ([`lost_work`]). The std writer of the Chrome trace format is `chrome` (feature
//! `std`).
//! Depends on `backend`, `error` and `reentry`; the runtime's calls depend on it.

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod chrome;
mod work;

pub(crate) use work::{Scope, Target, Timing, holds_events, resolve, work_begin, work_end};

use core::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::backend::BackendKind;
use crate::error::ErrorCode;

/// Whether a sink is installed: the one load a call makes while tracing is off.
static ON: AtomicBool = AtomicBool::new(false);
/// The installed sink: read by every traced call at once (a read lock), written by `install`
/// and `uninstall`. Its waits take the core's wait step (`sync::relax`: a yield with `std`), so
/// many tracing threads never spin the one that holds it out of its time slice.
static SINK: spin::rwlock::RwLock<Option<&'static dyn Sink>, TraceRelax> = spin::rwlock::RwLock::new(None);

/// The relax strategy of the timeline's locks: the core's wait step.
pub(crate) type TraceRelax = crate::sync::CoreRelax;

/// How many timed pieces of work wait for their events at most.
pub const MAX_PENDING: usize = 256;

/// Where the timeline goes: the Chrome trace writer (`chrome`, feature `std`) or a test's
/// collector.
pub trait Sink: Sync {
    /// Nanoseconds of a monotonic clock; every time handed to the sink is on it.
    fn now_ns(&self) -> u64;
    /// A call named `name` begins on the calling thread (NVTX ranges start here). `name` ends
    /// with a NUL byte, which [`Call::name`] does not have.
    fn enter(&self, name: &'static str) {
        let _ = name;
    }
    /// A call (or a lifecycle step) returned.
    fn call(&self, call: &Call<'_>);
    /// A piece of device work completed.
    fn work(&self, work: &Work);
    /// A kernel handle was looked up under this name (what `work` spans of it are called).
    fn kernel_named(&self, kernel: u64, name: &str) {
        let _ = (kernel, name);
    }
    /// The cache of queue-ordered memory of a device changed (a block kept or taken): what it
    /// holds and has served since the init. The device as in [`Work`]: its backend's kind, its
    /// number in the timeline and its ordinal.
    fn cache(&self, backend: BackendKind, device_number: u32, ordinal: u32, stats: &crate::CacheStats) {
        let _ = (backend, device_number, ordinal, stats);
    }
    /// A runtime's final teardown ended: what was handed so far should be complete where it is
    /// kept (the Chrome writer closes its array, and reopens it at the next event).
    fn checkpoint(&self) {}
}

/// What a span on a thread's track stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    /// A call of the runtime.
    Api,
    /// A step of init, shutdown or teardown.
    Lifecycle,
}

/// A call of the runtime, or a lifecycle step, as it returned.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// The runtime's name for it (`launch`, `mem_alloc`, `teardown: free memory`, ...).
    pub name: &'static str,
    /// A call or a lifecycle step.
    pub category: Category,
    /// When it began and returned ([`Sink::now_ns`]).
    pub start_ns: u64,
    /// See `start_ns`.
    pub end_ns: u64,
    /// Its handles (raw values) and sizes, by name.
    pub args: &'a [(&'static str, u64)],
    /// `None` when it succeeded, else its error's code.
    pub status: Option<ErrorCode>,
}

/// What a piece of device work was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkKind {
    /// A kernel launch.
    Kernel {
        /// The kernel's handle (raw).
        kernel: u64,
        /// Blocks per dimension.
        grid: [u32; 3],
        /// Threads per block per dimension.
        block: [u32; 3],
    },
    /// A copy of `bytes`.
    Copy {
        /// Bytes copied.
        bytes: u64,
    },
    /// A fill of `bytes`.
    Fill {
        /// Bytes written.
        bytes: u64,
    },
    /// A host function on the queue.
    HostFunction,
    /// A graph's launch.
    Graph {
        /// The graph's handle (raw).
        graph: u64,
    },
}

/// A piece of work that ran on a queue, timed by the device.
#[derive(Clone, Copy, Debug)]
pub struct Work {
    /// The device's backend.
    pub backend: BackendKind,
    /// The device's ordinal in its backend.
    pub ordinal: u32,
    /// The device's number in the timeline: for a host device its number among the runtime's
    /// host devices (the `N` of its name, `host CPU N`, in registration order), so that two host
    /// devices (each its backend's ordinal 0) are told apart; for other devices their ordinal.
    pub device_number: u32,
    /// The queue's handle (raw).
    pub queue: u64,
    /// What ran.
    pub kind: WorkKind,
    /// When the call that submitted it began ([`Sink::now_ns`]).
    pub submit_ns: u64,
    /// When it started and ended on the device, on the sink's clock.
    pub start_ns: u64,
    /// See `start_ns`.
    pub end_ns: u64,
}

/// Installs `sink`: from now on calls are traced. `false` (and nothing changes) when a sink is
/// installed already.
pub fn install(sink: &'static dyn Sink) -> bool {
    let mut s = SINK.write();
    if s.is_some() {
        return false;
    }
    *s = Some(sink);
    ON.store(true, Relaxed);
    true
}

/// Stops tracing: resolves every span still waiting for its events (waiting for them), then
/// removes the sink and returns it. `None` when none was installed.
pub fn uninstall() -> Option<&'static dyn Sink> {
    let sink = *SINK.read();
    sink?;
    resolve(Scope::All, true);
    ON.store(false, Relaxed);
    let taken = SINK.write().take();
    // Spans of calls that were in flight meanwhile found no sink, or were handed to it; events
    // they left are resolved (without a sink: released).
    resolve(Scope::All, true);
    taken
}

/// In a forked child whose parent was tracing (`chrome`'s fork handler): tracing stops without
/// waiting for anything (the parent's spans and events are the parent's). A lock another thread
/// of the parent held at the fork stays held in the child, so the sink is removed only if it
/// can be taken at once.
///
/// The child has one thread, so a lock of the timeline that is held was held by a thread of the
/// parent that does not exist here: it is released by force, and the spans, anchors and spare
/// events the child inherited are forgotten without a backend call (their events, and the host
/// queues' worker threads that would complete them, are the parent's).
#[cfg(feature = "std")]
pub(crate) fn child_after_fork() {
    ON.store(false, Relaxed);
    // SAFETY: the child's only thread holds none of these locks (see above).
    unsafe {
        if SINK.writer_count() != 0 {
            SINK.force_write_unlock();
        }
        while SINK.reader_count() != 0 {
            SINK.force_read_decrement();
        }
    }
    *SINK.write() = None;
    work::forget_after_fork();
}

/// Whether a sink is installed (one relaxed load).
#[inline(always)]
pub fn enabled() -> bool {
    ON.load(Relaxed)
}

/// Work that ran untimed because [`MAX_PENDING`] spans waited already (since the process began).
pub fn lost_work() -> u64 {
    work::LOST.load(Relaxed) as u64
}

fn sink() -> Option<&'static dyn Sink> {
    *SINK.read()
}

/// A call's start, while tracing is on.
#[derive(Clone, Copy)]
pub(crate) struct Begun {
    start_ns: u64,
}

/// The start of a call named `name` (ending with NUL): `None` while tracing is off.
#[inline(always)]
pub(crate) fn begin(name: &'static str) -> Option<Begun> {
    if !ON.load(Relaxed) {
        return None;
    }
    begin_slow(name)
}

#[cold]
#[inline(never)]
fn begin_slow(name: &'static str) -> Option<Begun> {
    let s = sink()?;
    s.enter(name);
    Some(Begun { start_ns: s.now_ns() })
}

/// The end of a call begun with [`begin`].
#[cold]
#[inline(never)]
pub(crate) fn end(
    begun: Begun,
    name: &'static str,
    category: Category,
    args: &[(&'static str, u64)],
    status: Option<ErrorCode>,
) {
    if let Some(s) = sink() {
        let name = name.strip_suffix('\0').unwrap_or(name);
        s.call(&Call { name, category, start_ns: begun.start_ns, end_ns: s.now_ns(), args, status });
    }
}

/// A lifecycle step that took from `start_ns` to now.
pub(crate) fn step(name: &'static str, start: Option<Begun>, args: &[(&'static str, u64)], status: Option<ErrorCode>) {
    if let Some(b) = start {
        end(b, name, Category::Lifecycle, args, status);
    }
}

/// Tells the sink a kernel's name.
#[cold]
pub(crate) fn kernel_named(kernel: u64, name: &str) {
    if let Some(s) = sink() {
        s.kernel_named(kernel, name);
    }
}

/// Tells the sink that a final teardown ended.
pub(crate) fn checkpoint() {
    if ON.load(Relaxed)
        && let Some(s) = sink()
    {
        s.checkpoint();
    }
}

/// Traces a runtime call: `traced!(begun, "name", [key = value, ...], body)` evaluates `body`
/// (a `Result`) with `begun` bound to the call's start. While tracing is off (the one relaxed
/// load) `begun` is a constant `None` and the body runs as if untraced; while it is on, the call
/// goes out of line (`traced_call`) and is handed to the sink when the body returns.
macro_rules! traced {
    ($begun:ident, $name:literal, [$($k:literal = $v:expr),* $(,)?], $body:expr) => {{
        if $crate::trace::enabled() {
            // The arguments first: the body may borrow them mutably.
            let args = [$(($k, ($v) as u64)),*];
            $crate::trace::traced_call(concat!($name, "\0"), |$begun: Option<$crate::trace::Begun>| $body, args)
        } else {
            let $begun: Option<$crate::trace::Begun> = None;
            // A closure, so that the body's `return` and `?` end the body, not the call.
            $crate::trace::run(
                #[inline(always)]
                || $body,
            )
        }
    }};
    ($name:literal, [$($k:literal = $v:expr),* $(,)?], $body:expr) => {
        traced!(_begun, $name, [$($k = $v),*], $body)
    };
}
pub(crate) use traced;

/// A traced call while tracing is on (`traced!`): its start taken, `body` run with it, the call
/// handed to the sink with `args`.
#[cold]
#[inline(never)]
pub(crate) fn traced_call<T, const N: usize>(
    name: &'static str,
    body: impl FnOnce(Option<Begun>) -> crate::Result<T>,
    args: [(&'static str, u64); N],
) -> crate::Result<T> {
    let begun = begin(name);
    let result = body(begun);
    if let Some(b) = begun {
        end(b, name, Category::Api, &args, result.as_ref().err().map(|e| e.code));
    }
    result
}

/// Runs a traced call's body (`traced!`).
#[inline(always)]
pub(crate) fn run<R>(body: impl FnOnce() -> R) -> R {
    body()
}

/// Hands the sink a device's cache statistics (`Sink::cache`), while tracing is on.
pub(crate) fn cache(backend: BackendKind, device_number: u32, ordinal: u32, stats: &crate::CacheStats) {
    if let Some(s) = sink() {
        s.cache(backend, device_number, ordinal, stats);
    }
}
