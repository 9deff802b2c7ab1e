//! Host graphs: the launches, copies, fills and host functions submitted to a host queue between
//! `queue_begin_capture` and `queue_end_capture`, kept as recorded pieces (a launch with a copy
//! of its argument values, as a waiting launch keeps them) and replayed in order on the queue,
//! as one piece of its work, by each `graph_launch`. `no_std`: the pieces live in the wrapped
//! backend's own memory (its arena, or its heap), in a block that doubles as a capture grows,
//! so a graph needs no capacity of its own and counts against the device's memory. Event
//! records and waits are not captured on the host device (`Unsupported`): a graph's pieces run
//! in order on one queue. Both queue designs use this file (`deferred.rs`, `threaded.rs`).

use core::ffi::c_void;
use core::mem::size_of;

use crate::backend::{Backend, BackendResult, CopyKind, FillValue, HostFn, KernelArgs, LaunchDims, MemKind};
use crate::error::{BackendError, ErrorCode};
// Plain atomics and spin's lock, not the loom-checked ones of `crate::sync`: the queue wrappers
// are built in constants (loom's locks are not), and the loom models capture nothing (they reach
// this file only through `Captures::of`'s load of a zero count).
use crate::sync::SpinLock as Mutex;
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

use super::{CopiedLaunch, DEFERRED_PATTERN, HostBackend};

/// Host queues capturing at once, per queue wrapper.
pub const HOST_CAPTURES: usize = 16;

/// One recorded piece of work.
// The launch is the largest (its argument bytes and extents), kept inline like a waiting one.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy)]
pub(crate) enum Piece {
    Launch(CopiedLaunch),
    Copy { kind: CopyKind, dst: u64, src: u64, size: usize },
    Fill { dst: u64, value: FillValue, count: usize },
    Pattern { dst: u64, pattern: [u8; DEFERRED_PATTERN], len: u8, count: usize },
    HostFunction { f: HostFn, data: *mut c_void },
}

// SAFETY: the only non-`Send` values are host functions' data pointers, which the
// `queue_host_function` contract makes sound to pass to the function from any thread.
unsafe impl Send for Piece {}

impl Piece {
    /// Runs the piece on `inner` for `queue` (synchronously: the wrapped backend's queues run
    /// work at submission).
    ///
    /// # Safety
    /// As the submission the piece came from, now: its memory and kernels are live, and a host
    /// function may run (again).
    pub(crate) unsafe fn run(&self, inner: &HostBackend, device: u32, queue: u64) -> BackendResult<()> {
        match *self {
            // SAFETY: the caller's contract; the arguments are the copies made at submission.
            Piece::Launch(launch) => unsafe { launch.run(inner, device, queue) },
            // SAFETY: the caller's contract.
            Piece::Copy { kind, dst, src, size } => unsafe { inner.memcpy(device, kind, dst, src, size, None) },
            // SAFETY: the caller's contract.
            Piece::Fill { dst, value, count } => unsafe { inner.fill(device, dst, value, count, None) },
            Piece::Pattern { dst, pattern, len, count } => {
                // SAFETY: the caller's contract; the pattern is the copy made at submission.
                unsafe { inner.fill_pattern(device, dst, &pattern[..usize::from(len)], count, None) }
            }
            // SAFETY: the caller's contract for `f(data)`.
            Piece::HostFunction { f, data } => unsafe { inner.queue_host_function(device, queue, f, data) },
        }
    }

    /// A piece for a pattern fill, `None` when the pattern is longer than `DEFERRED_PATTERN`.
    pub(crate) fn pattern(dst: u64, pattern: &[u8], count: usize) -> Option<Self> {
        let mut kept = [0u8; DEFERRED_PATTERN];
        kept.get_mut(..pattern.len())?.copy_from_slice(pattern);
        Some(Piece::Pattern { dst, pattern: kept, len: pattern.len() as u8, count })
    }
}

/// A graph as the wrapped backend's memory holds it (the graph's raw value is this header's
/// address): its pieces' block, how many it holds and has room for.
#[repr(C)]
struct Header {
    pieces: u64,
    len: usize,
    cap: usize,
}

fn err(code: ErrorCode, message: &'static str) -> BackendError {
    BackendError::new(code, 0, message)
}

/// The queues of a wrapper that capture, each with its graph under construction.
pub(crate) struct Captures {
    /// How many captures are open: submissions look no further while it is 0.
    open: AtomicU32,
    list: Mutex<heapless::Vec<(u64, u64), HOST_CAPTURES>>,
}

impl Captures {
    /// No capture open.
    pub(crate) const fn new() -> Self {
        Captures { open: AtomicU32::new(0), list: Mutex::new(heapless::Vec::new()) }
    }

    /// The graph `queue` is capturing into, if it captures.
    #[inline]
    pub(crate) fn of(&self, queue: u64) -> Option<u64> {
        if self.open.load(Relaxed) == 0 {
            return None;
        }
        self.list.lock().iter().find(|(q, _)| *q == queue).map(|&(_, g)| g)
    }

    /// Starts capturing `queue`: an empty graph in `inner`'s memory.
    pub(crate) fn begin(&self, inner: &HostBackend, device: u32, queue: u64) -> BackendResult<()> {
        let mut list = self.list.lock();
        if list.is_full() {
            return Err(err(ErrorCode::OutOfResources, "too many host queues capture at once (HOST_CAPTURES)"));
        }
        let header = inner.mem_alloc(device, MemKind::Device, size_of::<Header>())?;
        // SAFETY: a fresh block of the wrapped backend, aligned to `HOST_ALIGN` (at least a
        // header's alignment) and as large as a header.
        unsafe { (header as usize as *mut Header).write(Header { pieces: 0, len: 0, cap: 0 }) };
        // Cannot fail: not full, under the lock.
        let _ = list.push((queue, header));
        self.open.fetch_add(1, Relaxed);
        Ok(())
    }

    /// Ends `queue`'s capture: its graph (`InvalidArgument` when it does not capture).
    pub(crate) fn end(&self, queue: u64) -> BackendResult<u64> {
        let mut list = self.list.lock();
        let Some(i) = list.iter().position(|(q, _)| *q == queue) else {
            return Err(err(ErrorCode::InvalidArgument, "the host queue is not capturing"));
        };
        self.open.fetch_sub(1, Relaxed);
        Ok(list.swap_remove(i).1)
    }

    /// Records `piece` into `queue`'s graph, growing its block (`OutOfResources` when the
    /// device's memory has no room; the capture keeps what it had).
    pub(crate) fn record(&self, inner: &HostBackend, device: u32, queue: u64, piece: Piece) -> BackendResult<()> {
        let list = self.list.lock();
        let Some(&(_, graph)) = list.iter().find(|(q, _)| *q == queue) else {
            return Err(err(ErrorCode::InvalidArgument, "the host queue is not capturing"));
        };
        // SAFETY: a live header of this wrapper's capture, changed under its lock only.
        let h = unsafe { &mut *(graph as usize as *mut Header) };
        if h.len == h.cap {
            let cap = if h.cap == 0 {
                4
            } else {
                h.cap.checked_mul(2).ok_or(err(ErrorCode::OutOfResources, "graph too large"))?
            };
            let bytes = cap.checked_mul(size_of::<Piece>()).ok_or(err(ErrorCode::OutOfResources, "graph too large"))?;
            let block = inner.mem_alloc(device, MemKind::Device, bytes)?;
            if h.cap != 0 {
                // SAFETY: the old block holds `len` pieces; the new one has room for twice as
                // many; distinct blocks.
                unsafe {
                    core::ptr::copy_nonoverlapping(
                        h.pieces as usize as *const Piece,
                        block as usize as *mut Piece,
                        h.len,
                    );
                    let _ = inner.mem_free(device, MemKind::Device, h.pieces, h.cap * size_of::<Piece>());
                }
            }
            (h.pieces, h.cap) = (block, cap);
        }
        // SAFETY: within the block's room (len < cap), aligned (`HOST_ALIGN` blocks).
        unsafe { (h.pieces as usize as *mut Piece).add(h.len).write(piece) };
        h.len += 1;
        Ok(())
    }

    /// Forgets every capture (deinit, fork: the memory goes with the backend's).
    pub(crate) fn clear(&self) {
        self.list.lock().clear();
        self.open.store(0, Relaxed);
    }
}

/// A graph's pieces.
///
/// # Safety
/// A live graph (`Captures::end`'s), not being changed.
unsafe fn pieces<'a>(graph: u64) -> &'a [Piece] {
    // SAFETY: the caller's contract.
    let h = unsafe { &*(graph as usize as *const Header) };
    if h.len == 0 {
        return &[];
    }
    // SAFETY: `len` initialised pieces in the block.
    unsafe { core::slice::from_raw_parts(h.pieces as usize as *const Piece, h.len) }
}

/// Runs the graph's pieces in order on `queue`, stopping at the first error.
///
/// # Safety
/// A live graph of `inner`'s `device`, not being changed; what its pieces' submissions required
/// holds again.
pub(crate) unsafe fn replay(inner: &HostBackend, device: u32, queue: u64, graph: u64) -> BackendResult<()> {
    // SAFETY: the caller's contract.
    for piece in unsafe { pieces(graph) } {
        // SAFETY: the caller's contract.
        unsafe { piece.run(inner, device, queue) }?;
    }
    Ok(())
}

/// Calls `each` with the kernel of each launch, in order.
///
/// # Safety
/// As `pieces`.
pub(crate) unsafe fn kernels(graph: u64, each: &mut dyn FnMut(u64)) {
    // SAFETY: the caller's contract.
    for piece in unsafe { pieces(graph) } {
        if let Piece::Launch(launch) = piece {
            each(launch.kernel());
        }
    }
}

/// Gives launch `index` new arguments (see `Backend::graph_set_args`).
///
/// # Safety
/// A live graph of `inner`'s `device` that no replay reads meanwhile; `args` as `launch`'s.
pub(crate) unsafe fn set_args(
    inner: &HostBackend,
    device: u32,
    graph: u64,
    index: u32,
    kernel: u64,
    args: &KernelArgs<'_>,
) -> BackendResult<()> {
    // SAFETY: the caller's contract.
    let h = unsafe { &*(graph as usize as *const Header) };
    // SAFETY: as in `pieces`; no replay reads them meanwhile (the caller's contract).
    let all = unsafe { core::slice::from_raw_parts_mut(h.pieces as usize as *mut Piece, h.len) };
    let Some(Piece::Launch(launch)) = all.iter_mut().filter(|p| matches!(p, Piece::Launch(_))).nth(index as usize)
    else {
        return Err(err(ErrorCode::InvalidArgument, "the graph has no kernel launch at this index"));
    };
    if launch.kernel() != kernel {
        return Err(err(ErrorCode::InvalidArgument, "the graph's launch at this index runs another kernel"));
    }
    let dims: LaunchDims = launch.dims();
    // SAFETY: a live kernel of the device; the arguments' contract is the caller's.
    match unsafe { CopiedLaunch::check_and_copy(inner, device, kernel, &dims, args) }? {
        Some(copied) => {
            *launch = copied;
            Ok(())
        }
        None => Err(err(ErrorCode::Unsupported, "the arguments exceed what a host graph keeps (DEFERRED_ARG_BYTES)")),
    }
}

/// Gives the graph's memory back to `inner`.
///
/// # Safety
/// A live graph of `inner`'s `device` that nothing replays any more; never passed again.
pub(crate) unsafe fn destroy(inner: &HostBackend, device: u32, graph: u64) -> BackendResult<()> {
    // SAFETY: the caller's contract.
    let h = unsafe { (graph as usize as *const Header).read() };
    // SAFETY: the graph's blocks, given back once.
    unsafe {
        if h.cap != 0 {
            inner.mem_free(device, MemKind::Device, h.pieces, h.cap * size_of::<Piece>())?;
        }
        inner.mem_free(device, MemKind::Device, graph, size_of::<Header>())
    }
}

/// The error of a launch or pattern fill too large for a host graph to keep.
pub(crate) fn too_large() -> BackendError {
    err(
        ErrorCode::Unsupported,
        "host graphs keep launches of at most DEFERRED_ARG_BYTES argument bytes and patterns of at most DEFERRED_PATTERN bytes",
    )
}

/// The error of a graph launch on a capturing host queue.
pub(crate) fn no_nesting() -> BackendError {
    err(ErrorCode::Unsupported, "host graphs do not capture graph launches")
}

/// The error of an event record or wait on a capturing host queue.
pub(crate) fn no_events() -> BackendError {
    err(ErrorCode::Unsupported, "host graphs do not capture event records or waits")
}
