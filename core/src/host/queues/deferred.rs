//! Host queues without threads (`no_std`): `DeferredHost` wraps a `HostBackend` and keeps the
//! work submitted to a queue — launches, copies, fills, host functions, event records and waits
//! — until an execution point, where it runs in submission order on the calling thread. So a
//! firmware's test catches a missing synchronise as a GPU would: the work has not run yet.
//!
//! Execution points: `queue_synchronize` and `queue_query` of the queue (its work); a
//! `event_synchronize`, `event_query`, `event_elapsed_ms` or `event_destroy` of an event (the
//! work of the queues it was recorded on, through its record); `queue_destroy` (the queue's
//! work); the queue-less copies and fills, `mem_free` and `program_unload` (all waiting work:
//! they start after everything submitted before them, and memory and kernels must not go while
//! work still uses them); a queue's wait for an event, when it runs (the work of the queue the
//! event was recorded on, through its record). Capacity: `DEFERRED_WORK` pieces over all queues;
//! a submission that finds them taken runs its queue's waiting work first (then, if still
//! none is free, all waiting work). A launch whose arguments exceed `DEFERRED_ARG_BYTES` or
//! `DEFERRED_PARAMS`, and a fill whose pattern exceeds `DEFERRED_PATTERN`, run at submission,
//! after their queue's waiting work. Kernel arguments and fill patterns are copied at
//! submission; the host sides of copies must stay valid until the copy has run (the `Backend`
//! contract). An error of waiting work is reported by the queue's next `queue_synchronize`
//! (kept for up to `DEFERRED_ERRORS` queues at once; more are logged and lost). Host kernels and
//! host functions run at an execution point must not call ordo (their contract); with std such
//! calls fail with `Busy`. Part of the host queues (`queues/mod.rs`: what both designs share).

use core::ffi::c_void;

use crate::backend::{
    Backend, BackendResult, Capabilities, CopyKind, FillValue, HostFn, KernelArgs, LaunchDims, MemKind,
};
use crate::error::{BackendError, Error, ErrorCode};
use crate::reentry;
use crate::sync::Mutex;

use super::graph::{self, Captures, Piece};
use super::{CopiedLaunch, HostBackend, forward_to_host_backend};

/// Pieces of work a `DeferredHost` keeps waiting, over all its queues (3 in loom builds, so
/// that the models reach a full list).
pub const DEFERRED_WORK: usize = if cfg!(loom) { 3 } else { 16 };
/// Bytes of a waiting pattern fill's pattern.
pub const DEFERRED_PATTERN: usize = 16;
/// Queues whose waiting work's error is kept for their next synchronise at once.
pub const DEFERRED_ERRORS: usize = 16;

// The launch is the largest piece of work (its argument bytes and extents); the queue's fixed
// capacity keeps it inline, as there is no heap without std.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy)]
enum Work {
    /// A launch, copy, fill or host function.
    Piece(Piece),
    Record {
        event: u64,
    },
    Wait {
        event: u64,
    },
    /// A graph's launch: its pieces, in order.
    Graph {
        graph: u64,
    },
}

#[derive(Clone, Copy)]
struct Pending {
    device: u32,
    queue: u64,
    /// Submission order over all queues.
    seq: u64,
    work: Work,
}

struct State {
    work: heapless::Vec<Pending, DEFERRED_WORK>,
    next_seq: u64,
    /// The first error of each queue's waiting work since its last synchronise.
    errors: heapless::Vec<(u64, BackendError), DEFERRED_ERRORS>,
}

// SAFETY: the only non-`Send` values are host functions' data pointers, which the
// `queue_host_function` contract makes sound to pass to the function from any thread.
unsafe impl Send for State {}

/// Which waiting work a run takes: one queue's or every queue's, up to a submission number.
#[derive(Clone, Copy)]
struct Take {
    queue: Option<u64>,
    through: u64,
}

impl Take {
    const ALL: Self = Self { queue: None, through: u64::MAX };

    fn queue(queue: u64) -> Self {
        Self { queue: Some(queue), through: u64::MAX }
    }

    fn covers(&self, p: &Pending) -> bool {
        self.queue.is_none_or(|q| q == p.queue) && p.seq <= self.through
    }
}

fn err(code: ErrorCode, message: &'static str) -> BackendError {
    BackendError::new(code, 0, message)
}

/// A host backend whose queues run their work at execution points instead of at submission
/// (see the module docs). Build it in a `static` over a `static` `HostBackend`.
pub struct DeferredHost {
    inner: &'static HostBackend,
    state: Mutex<State>,
    /// Held while waiting work runs, so that each queue's work runs in order, one piece at a
    /// time, whichever thread reaches an execution point.
    running: Mutex<()>,
    /// Queues capturing into graphs.
    captures: Captures,
}

impl core::fmt::Debug for DeferredHost {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DeferredHost").field("inner", self.inner).finish_non_exhaustive()
    }
}

/// `DeferredHost::new`'s value (a macro: the constructor is `const` except in loom builds, whose
/// locks cannot be made in a constant).
macro_rules! deferred_host {
    ($inner:expr) => {
        Self {
            inner: $inner,
            state: Mutex::new(State { work: heapless::Vec::new(), next_seq: 0, errors: heapless::Vec::new() }),
            running: Mutex::new(()),
            captures: Captures::new(),
        }
    };
}

impl DeferredHost {
    /// `inner` with deferred queues.
    #[cfg(not(loom))]
    pub const fn new(inner: &'static HostBackend) -> Self {
        deferred_host!(inner)
    }

    /// `inner` with deferred queues (loom builds: not `const`).
    #[cfg(loom)]
    pub fn new(inner: &'static HostBackend) -> Self {
        deferred_host!(inner)
    }

    /// How many pieces of work wait right now (for tests and diagnostics).
    pub fn waiting(&self) -> usize {
        self.state.lock().work.len()
    }

    /// Runs the waiting work `take` covers, oldest first. From inside a host kernel or host
    /// function it fails with `Busy` instead of waiting for itself (std builds).
    fn run(&self, take: Take) -> BackendResult<()> {
        if reentry::in_callback() {
            return Err(BackendError::from_error(Error::REENTRANT));
        }
        let _runner = self.running.lock();
        self.run_held(take);
        Ok(())
    }

    /// `run`, with `running` held by the caller.
    fn run_held(&self, take: Take) {
        loop {
            let next = {
                let mut s = self.state.lock();
                let oldest = s.work.iter().enumerate().filter(|(_, p)| take.covers(p)).min_by_key(|(_, p)| p.seq);
                match oldest.map(|(i, _)| i) {
                    Some(i) => s.work.swap_remove(i),
                    None => return,
                }
            };
            // Taken and not yet run: another execution point must still wait for it.
            crate::sync::preemption_point();
            if let Err(e) = self.execute(&next) {
                let mut s = self.state.lock();
                if !s.errors.iter().any(|(q, _)| *q == next.queue) && s.errors.push((next.queue, e)).is_err() {
                    log::error!("ordo: a host queue's error was lost (more than DEFERRED_ERRORS queues hold one)");
                }
            }
        }
    }

    /// The newest waiting record of `event` submitted before `before`: its queue and number.
    fn pending_record(&self, event: u64, before: u64) -> Option<(u64, u64)> {
        let s = self.state.lock();
        s.work
            .iter()
            .filter(|p| matches!(p.work, Work::Record { event: e } if e == event) && p.seq < before)
            .max_by_key(|p| p.seq)
            .map(|p| (p.queue, p.seq))
    }

    /// Runs the work of the queues `event` was recorded on, through its newest waiting record.
    fn run_through_record(&self, event: u64) -> BackendResult<()> {
        match self.pending_record(event, u64::MAX) {
            Some((queue, seq)) => self.run(Take { queue: Some(queue), through: seq }),
            None => Ok(()),
        }
    }

    /// Runs one piece of waiting work on the wrapped backend.
    fn execute(&self, p: &Pending) -> BackendResult<()> {
        let (device, queue) = (p.device, p.queue);
        match p.work {
            // SAFETY: the submission's contract; the memory stays valid until the work has run
            // (`mem_free` runs it first, and the host side's contract says so); launch arguments
            // and patterns are the copies made then.
            Work::Piece(piece) => unsafe { piece.run(self.inner, device, queue) },
            // SAFETY: the graph lives until its launches have run (`graph_destroy` and
            // `graph_set_args` run them first); its pieces' contract is the launch's.
            Work::Graph { graph } => unsafe { graph::replay(self.inner, device, queue, graph) },
            // SAFETY: the event lives until its records have run (`event_destroy` runs them).
            Work::Record { event } => unsafe { self.inner.event_record(device, event, queue) },
            Work::Wait { event } => {
                if let Some((q, seq)) = self.pending_record(event, p.seq) {
                    self.run_held(Take { queue: Some(q), through: seq });
                }
                Ok(())
            }
        }
    }

    /// Records `piece` when `queue` captures, else keeps it as waiting work.
    fn submit_piece(&self, device: u32, queue: u64, piece: Piece) -> BackendResult<()> {
        if self.captures.of(queue).is_some() {
            return self.captures.record(self.inner, device, queue, piece);
        }
        self.submit(device, queue, Work::Piece(piece))
    }

    /// Keeps `work` for `queue` (running the queue's waiting work first when no room is left,
    /// then all waiting work if still none is).
    fn submit(&self, device: u32, queue: u64, work: Work) -> BackendResult<()> {
        for take in [None, Some(Take::queue(queue)), Some(Take::ALL)] {
            if let Some(take) = take {
                self.run(take)?;
            }
            let mut s = self.state.lock();
            if !s.work.is_full() {
                let seq = s.next_seq;
                s.next_seq += 1;
                // Cannot fail: not full, under the lock.
                let _ = s.work.push(Pending { device, queue, seq, work });
                return Ok(());
            }
        }
        Err(err(ErrorCode::Internal, "deferred host work has no room after running all of it"))
    }

    /// Runs `queue`'s waiting work, then `now` (work that is not kept: it runs at submission).
    fn run_now(&self, queue: u64, now: impl FnOnce() -> BackendResult<()>) -> BackendResult<()> {
        self.run(Take::queue(queue))?;
        now()
    }

    /// The error kept for `queue`, taken.
    fn take_error(&self, queue: u64) -> Option<BackendError> {
        let mut s = self.state.lock();
        let i = s.errors.iter().position(|(q, _)| *q == queue)?;
        Some(s.errors.swap_remove(i).1)
    }
}

impl Backend for DeferredHost {
    forward_to_host_backend!(name: "host CPU (queue work at synchronisation)");

    fn capabilities(&self) -> Capabilities {
        // Queue work waits for the queue's execution point: it may not have run when the
        // enqueueing call returns.
        self.inner.capabilities() | Capabilities::ASYNC_QUEUES
    }

    unsafe fn deinit(&self) -> BackendResult<()> {
        {
            // The teardown synchronised every queue: nothing waits; drop what might.
            let mut s = self.state.lock();
            s.work.clear();
            s.errors.clear();
        }
        self.captures.clear();
        // SAFETY: forwarded contract.
        unsafe { self.inner.deinit() }
    }

    unsafe fn forget_after_fork(&self) {
        // SAFETY: in a forked child only this thread exists, so a held lock belongs to a thread
        // of the parent that will never release it. (loom models no fork.)
        #[cfg(not(loom))]
        unsafe {
            if self.running.is_locked() {
                self.running.force_unlock();
            }
            if self.state.is_locked() {
                self.state.force_unlock();
            }
        }
        {
            let mut s = self.state.lock();
            s.work.clear();
            s.errors.clear();
        }
        self.captures.clear();
        // SAFETY: forwarded contract.
        unsafe { self.inner.forget_after_fork() }
    }

    unsafe fn mem_free(&self, device: u32, kind: MemKind, addr: u64, size: usize) -> BackendResult<()> {
        // Waiting work may still use the memory: it runs first (as `cuMemFree` waits).
        self.run(Take::ALL)?;
        // SAFETY: forwarded contract.
        unsafe { self.inner.mem_free(device, kind, addr, size) }
    }

    unsafe fn memcpy(
        &self,
        device: u32,
        kind: CopyKind,
        dst: u64,
        src: u64,
        size: usize,
        queue: Option<u64>,
    ) -> BackendResult<()> {
        match queue {
            Some(q) => self.submit_piece(device, q, Piece::Copy { kind, dst, src, size }),
            None => {
                self.run(Take::ALL)?;
                // SAFETY: forwarded contract.
                unsafe { self.inner.memcpy(device, kind, dst, src, size, None) }
            }
        }
    }

    unsafe fn fill(
        &self,
        device: u32,
        dst: u64,
        value: FillValue,
        count: usize,
        queue: Option<u64>,
    ) -> BackendResult<()> {
        match queue {
            Some(q) => self.submit_piece(device, q, Piece::Fill { dst, value, count }),
            None => {
                self.run(Take::ALL)?;
                // SAFETY: forwarded contract.
                unsafe { self.inner.fill(device, dst, value, count, None) }
            }
        }
    }

    unsafe fn fill_pattern(
        &self,
        device: u32,
        dst: u64,
        pattern: &[u8],
        count: usize,
        queue: Option<u64>,
    ) -> BackendResult<()> {
        let now = || {
            // SAFETY: forwarded contract.
            unsafe { self.inner.fill_pattern(device, dst, pattern, count, None) }
        };
        match queue {
            Some(q) => match Piece::pattern(dst, pattern, count) {
                Some(piece) => self.submit_piece(device, q, piece),
                None if self.captures.of(q).is_some() => Err(graph::too_large()),
                None => self.run_now(q, now),
            },
            None => {
                self.run(Take::ALL)?;
                now()
            }
        }
    }

    fn queue_create(&self, device: u32) -> BackendResult<u64> {
        self.inner.queue_create(device)
    }

    fn queue_create_independent(&self, device: u32) -> BackendResult<u64> {
        self.inner.queue_create_independent(device)
    }

    unsafe fn queue_destroy(&self, device: u32, queue: u64) -> BackendResult<()> {
        // Its work runs first (a queue destroyed with work on it finishes that work, as CUDA's do).
        self.run(Take::queue(queue))?;
        let _ = self.take_error(queue);
        // SAFETY: forwarded contract.
        unsafe { self.inner.queue_destroy(device, queue) }
    }

    unsafe fn queue_synchronize(&self, device: u32, queue: u64) -> BackendResult<()> {
        self.run(Take::queue(queue))?;
        if let Some(e) = self.take_error(queue) {
            return Err(e);
        }
        // SAFETY: forwarded contract.
        unsafe { self.inner.queue_synchronize(device, queue) }
    }

    unsafe fn queue_query(&self, device: u32, queue: u64) -> BackendResult<bool> {
        // An execution point: the queue's work runs, and then it has finished.
        self.run(Take::queue(queue))?;
        // SAFETY: forwarded contract.
        unsafe { self.inner.queue_query(device, queue) }
    }

    unsafe fn queue_wait_event(&self, device: u32, queue: u64, event: u64) -> BackendResult<()> {
        if self.captures.of(queue).is_some() {
            return Err(graph::no_events());
        }
        self.submit(device, queue, Work::Wait { event })
    }

    fn event_create(&self, device: u32) -> BackendResult<u64> {
        self.inner.event_create(device)
    }

    unsafe fn event_destroy(&self, device: u32, event: u64) -> BackendResult<()> {
        // Its waiting records would write the event: they run first.
        self.run_through_record(event)?;
        // SAFETY: forwarded contract; no record of it waits any more.
        unsafe { self.inner.event_destroy(device, event) }
    }

    unsafe fn event_record(&self, device: u32, event: u64, queue: u64) -> BackendResult<()> {
        if self.captures.of(queue).is_some() {
            return Err(graph::no_events());
        }
        self.submit(device, queue, Work::Record { event })
    }

    unsafe fn event_synchronize(&self, device: u32, event: u64) -> BackendResult<()> {
        self.run_through_record(event)?;
        // SAFETY: forwarded contract.
        unsafe { self.inner.event_synchronize(device, event) }
    }

    unsafe fn event_query(&self, device: u32, event: u64) -> BackendResult<bool> {
        self.run_through_record(event)?;
        // SAFETY: forwarded contract.
        unsafe { self.inner.event_query(device, event) }
    }

    unsafe fn event_elapsed_ms(&self, device: u32, start: u64, end: u64) -> BackendResult<f32> {
        self.run_through_record(start)?;
        self.run_through_record(end)?;
        // SAFETY: forwarded contract.
        unsafe { self.inner.event_elapsed_ms(device, start, end) }
    }

    unsafe fn program_unload(&self, device: u32, program: u64) -> BackendResult<()> {
        // Waiting launches of its kernels run first.
        self.run(Take::ALL)?;
        // SAFETY: forwarded contract.
        unsafe { self.inner.program_unload(device, program) }
    }

    unsafe fn launch(
        &self,
        device: u32,
        queue: u64,
        kernel: u64,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> BackendResult<()> {
        // SAFETY: forwarded contract.
        match unsafe { CopiedLaunch::check_and_copy(self.inner, device, kernel, dims, args) }? {
            Some(launch) => self.submit_piece(device, queue, Piece::Launch(launch)),
            None if self.captures.of(queue).is_some() => Err(graph::too_large()),
            // Too many argument bytes to keep: it runs now, after its queue's waiting work.
            // SAFETY: forwarded contract.
            None => self.run_now(queue, || unsafe { self.inner.launch(device, queue, kernel, dims, args) }),
        }
    }

    unsafe fn queue_host_function(&self, device: u32, queue: u64, f: HostFn, data: *mut c_void) -> BackendResult<()> {
        self.submit_piece(device, queue, Piece::HostFunction { f, data })
    }

    unsafe fn queue_begin_capture(&self, device: u32, queue: u64) -> BackendResult<()> {
        self.captures.begin(self.inner, device, queue)
    }

    unsafe fn queue_end_capture(&self, _device: u32, queue: u64) -> BackendResult<u64> {
        self.captures.end(queue)
    }

    unsafe fn graph_launch(&self, device: u32, graph: u64, queue: u64) -> BackendResult<()> {
        if self.captures.of(queue).is_some() {
            return Err(graph::no_nesting());
        }
        self.submit(device, queue, Work::Graph { graph })
    }

    unsafe fn graph_kernels(&self, _device: u32, graph: u64, each: &mut dyn FnMut(u64)) -> BackendResult<()> {
        // SAFETY: a live graph, just ended (the runtime asks in `queue_end_capture`, an exclusive
        // call, so no `graph_set_args` changes it meanwhile).
        unsafe { graph::kernels(graph, each) };
        Ok(())
    }

    unsafe fn graph_set_args(
        &self,
        device: u32,
        graph: u64,
        index: u32,
        kernel: u64,
        args: &KernelArgs<'_>,
    ) -> BackendResult<()> {
        // Launches of the graph already submitted keep the arguments they had: they run first.
        self.run(Take::ALL)?;
        let _runner = self.running.lock();
        // SAFETY: a live graph that nothing replays while `running` is held; the arguments'
        // contract is the caller's.
        unsafe { graph::set_args(self.inner, device, graph, index, kernel, args) }
    }

    unsafe fn graph_destroy(&self, device: u32, graph: u64) -> BackendResult<()> {
        // Its submitted launches run first.
        self.run(Take::ALL)?;
        // SAFETY: a live graph that nothing replays any more, never passed again.
        unsafe { graph::destroy(self.inner, device, graph) }
    }
}
