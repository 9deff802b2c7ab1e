//! The host device's queues as device queues behave (feature `std`): `QueuedHost` wraps a
//! `HostBackend` and gives each queue a worker thread that runs the queue's work — launches,
//! copies, fills, host functions, event records and waits — asynchronously, in submission order.
//! A call that enqueues returns at once; `queue_synchronize`, `event_synchronize` and the
//! synchronous copies and fills (which start after everything submitted to the device's queues)
//! wait for it, so a program that forgets a synchronise sees the same stale data it would on a
//! GPU. A host function that blocks holds up only its own queue.
//!
//! The wrapped backend does the work itself (under its one execution lock, so work of several
//! queues never races on the arena); this layer only decides when. Launches are kept as
//! `CopiedLaunch`es, as the deferred queues keep them (`queues/mod.rs`); the worker threads and
//! events' record counts are `worker.rs`'s, graphs `graph.rs`'s. Destroying a queue
//! returns at once; its worker finishes what was enqueued, then releases the queue, and `deinit`
//! waits for such workers.

use core::ffi::c_void;
use std::boxed::Box;
use std::collections::HashMap;
use std::sync::Arc;
use std::vec::Vec;

use super::graph::{self, Captures, Piece};
use super::worker::{Job, Sendable, Track, Worker, lock};
use super::{CopiedLaunch, forward_to_host_backend};

use crate::backend::{
    Backend, BackendResult, Capabilities, CopyKind, FillValue, HostFn, KernelArgs, LaunchDims, MemKind,
};
use crate::error::{BackendError, ErrorCode};
use crate::host::{HostBackend, run_as_callback};

/// Held shared by every running graph replay and exclusively by an argument update, so that an
/// update never changes a graph a queue's thread is replaying (one for all `QueuedHost`s:
/// updates are rare).
static REPLAYS: std::sync::RwLock<()> = std::sync::RwLock::new(());

#[derive(Default)]
struct State {
    queues: HashMap<u64, Worker>,
    events: HashMap<u64, Arc<Track>>,
    /// Workers of destroyed queues, finishing their work: queue-less work, `mem_free` and
    /// program unloads still wait for them; joined once idle (or by `deinit`).
    retiring: Vec<Worker>,
}

/// The host backend with asynchronous, in-order queues (see the module documentation). Build
/// it in a `static` over a `static` `HostBackend`.
pub struct QueuedHost {
    inner: &'static HostBackend,
    /// A spin lock, so that a forked child can take it over (a parent thread may have held it).
    state: crate::sync::SpinLock<Option<State>>,
    /// Queues capturing into graphs.
    captures: Captures,
}

impl core::fmt::Debug for QueuedHost {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let queues = self.state.try_lock().map(|s| s.as_ref().map_or(0, |s| s.queues.len()));
        f.debug_struct("QueuedHost").field("queues", &queues).finish_non_exhaustive()
    }
}

impl QueuedHost {
    /// Queues for `inner`.
    pub const fn new(inner: &'static HostBackend) -> Self {
        Self { inner, state: crate::sync::SpinLock::new(None), captures: Captures::new() }
    }

    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(self.state.lock().get_or_insert_with(State::default))
    }

    /// A handle on `queue`'s worker (to submit to it or wait for it outside the state's lock).
    fn worker(&self, queue: u64) -> BackendResult<Worker> {
        self.with(|s| s.queues.get(&queue).map(Worker::handle))
            .ok_or_else(|| BackendError::new(ErrorCode::InvalidHandle, 0, "not a queue of the host backend"))
    }

    fn submit(&self, queue: u64, job: Job) -> BackendResult<()> {
        // The queue's thread starts with its first work.
        let worker = self.with(|s| {
            let w = s.queues.get_mut(&queue)?;
            Some(w.start().map(|()| w.sender()))
        });
        worker
            .ok_or_else(|| BackendError::new(ErrorCode::InvalidHandle, 0, "not a queue of the host backend"))??
            .submit(job)
    }

    fn track(&self, event: u64) -> BackendResult<Arc<Track>> {
        self.with(|s| s.events.get(&event).cloned())
            .ok_or_else(|| BackendError::new(ErrorCode::InvalidHandle, 0, "not an event of the host backend"))
    }

    /// Waits for everything submitted to every queue (synchronous copies and fills start after it).
    fn drain_all(&self) -> BackendResult<()> {
        let workers: Vec<Worker> = self.with(|s| s.queues.values().chain(&s.retiring).map(Worker::handle).collect());
        for w in workers {
            drop(w.wait()?);
        }
        Ok(())
    }

    fn create_queue(&self, queue: u64) -> BackendResult<u64> {
        self.with(|s| s.queues.insert(queue, Worker::new()));
        Ok(queue)
    }
}

impl Backend for QueuedHost {
    forward_to_host_backend!(name: "host CPU (a worker thread per queue)");

    fn capabilities(&self) -> Capabilities {
        // Queue work runs on the queues' threads, after the enqueueing call returned.
        self.inner.capabilities() | Capabilities::ASYNC_QUEUES
    }

    unsafe fn deinit(&self) -> BackendResult<()> {
        let state = self.state.lock().take();
        if let Some(mut state) = state {
            // Every worker ends once its work has run and its sender is gone.
            let workers = state.queues.drain().map(|(_, w)| w).chain(state.retiring.drain(..));
            let threads: Vec<_> = workers.filter_map(|mut w| w.thread.take()).collect();
            for thread in threads {
                let _ = thread.join();
            }
        }
        self.captures.clear();
        // SAFETY: forwarded contract; no worker runs work of this backend any more.
        unsafe { self.inner.deinit() }
    }

    unsafe fn forget_after_fork(&self) {
        // In the child only this thread exists: the workers did not come along, and a lock a
        // parent thread held will never be released.
        if self.state.is_locked() {
            // SAFETY: as above, nothing else can be inside the lock.
            unsafe { self.state.force_unlock() };
        }
        if let Some(state) = self.state.lock().take() {
            // The workers' channels and threads belong to the parent: leak them untouched.
            core::mem::forget(state);
        }
        self.captures.clear();
        // SAFETY: forwarded contract.
        unsafe { self.inner.forget_after_fork() }
    }

    fn settle(&self) {
        // What `mem_free`, `program_unload` and `event_destroy` wait for, waited for before the
        // runtime holds its tables (an error stays with its queue's next synchronise; from a
        // callback the wait is `Busy` at once, and the release call answers `Busy` itself).
        let _ = self.drain_all();
    }

    unsafe fn mem_free(&self, device: u32, kind: MemKind, addr: u64, size: usize) -> BackendResult<()> {
        // Enqueued work may still use the memory: it runs first (as `cuMemFree` waits).
        self.drain_all()?;
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
        let inner = self.inner;
        match queue {
            Some(q) if self.captures.of(q).is_some() => {
                self.captures.record(inner, device, q, Piece::Copy { kind, dst, src, size })
            }
            // SAFETY: forwarded contract (the host sides stay valid until the copy has run).
            Some(q) => self.submit(q, Box::new(move || unsafe { inner.memcpy(device, kind, dst, src, size, None) })),
            None => {
                self.drain_all()?;
                // SAFETY: forwarded contract.
                unsafe { inner.memcpy(device, kind, dst, src, size, None) }
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
        let inner = self.inner;
        match queue {
            Some(q) if self.captures.of(q).is_some() => {
                self.captures.record(inner, device, q, Piece::Fill { dst, value, count })
            }
            // SAFETY: forwarded contract.
            Some(q) => self.submit(q, Box::new(move || unsafe { inner.fill(device, dst, value, count, None) })),
            None => {
                self.drain_all()?;
                // SAFETY: forwarded contract.
                unsafe { inner.fill(device, dst, value, count, None) }
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
        let inner = self.inner;
        match queue {
            Some(q) if self.captures.of(q).is_some() => match Piece::pattern(dst, pattern, count) {
                Some(piece) => self.captures.record(inner, device, q, piece),
                None => Err(graph::too_large()),
            },
            Some(q) => {
                let pattern = pattern.to_vec(); // the caller's pattern may go once this returns
                // SAFETY: forwarded contract.
                self.submit(q, Box::new(move || unsafe { inner.fill_pattern(device, dst, &pattern, count, None) }))
            }
            None => {
                self.drain_all()?;
                // SAFETY: forwarded contract.
                unsafe { inner.fill_pattern(device, dst, pattern, count, None) }
            }
        }
    }

    fn queue_create(&self, device: u32) -> BackendResult<u64> {
        let q = self.inner.queue_create(device)?;
        self.create_queue(q)
    }

    fn queue_create_independent(&self, device: u32) -> BackendResult<u64> {
        let q = self.inner.queue_create_independent(device)?;
        self.create_queue(q)
    }

    unsafe fn queue_destroy(&self, device: u32, queue: u64) -> BackendResult<()> {
        let Some(mut worker) = self.with(|s| s.queues.remove(&queue)) else {
            return Err(BackendError::new(ErrorCode::InvalidHandle, 0, "not a queue of the host backend"));
        };
        let inner = self.inner;
        if worker.jobs.is_none() {
            // Never given work: nothing to wait for.
            // SAFETY: forwarded contract.
            return unsafe { inner.queue_destroy(device, queue) };
        }
        // The queue goes once its work has run; this call does not wait for that. Its worker
        // stays known until then, so that queue-less work and `mem_free` still wait for it.
        // SAFETY: forwarded contract; the queue is used by nothing after this job.
        worker.submit(Box::new(move || unsafe { inner.queue_destroy(device, queue) }))?;
        worker.jobs = None; // the thread ends once that job has run
        let finished: Vec<Worker> = self.with(|s| {
            let (done, busy): (Vec<Worker>, Vec<Worker>) = s.retiring.drain(..).partition(Worker::idle);
            s.retiring = busy;
            s.retiring.push(worker);
            done
        });
        for mut w in finished {
            if let Some(thread) = w.thread.take() {
                let _ = thread.join(); // idle and without a sender: it is ending
            }
        }
        Ok(())
    }

    unsafe fn queue_synchronize(&self, device: u32, queue: u64) -> BackendResult<()> {
        self.worker(queue)?.drain()?;
        // SAFETY: forwarded contract.
        unsafe { self.inner.queue_synchronize(device, queue) }
    }

    unsafe fn queue_query(&self, _device: u32, queue: u64) -> BackendResult<bool> {
        Ok(self.worker(queue)?.idle())
    }

    unsafe fn queue_wait_event(&self, _device: u32, queue: u64, event: u64) -> BackendResult<()> {
        if self.captures.of(queue).is_some() {
            return Err(graph::no_events());
        }
        let track = self.track(event)?;
        // The event's last record as of now: later records do not count.
        let target = lock(&track.counts).0;
        self.submit(queue, Box::new(move || track.wait_for(target)))
    }

    fn event_create(&self, device: u32) -> BackendResult<u64> {
        let e = self.inner.event_create(device)?;
        self.with(|s| s.events.insert(e, Arc::new(Track::default())));
        Ok(e)
    }

    unsafe fn event_destroy(&self, device: u32, event: u64) -> BackendResult<()> {
        // Records still to run would use the event: wait for them.
        let track = self.track(event)?;
        let target = lock(&track.counts).0;
        track.wait_for(target)?;
        self.with(|s| s.events.remove(&event));
        // SAFETY: forwarded contract; no record of it remains to run.
        unsafe { self.inner.event_destroy(device, event) }
    }

    unsafe fn event_record(&self, device: u32, event: u64, queue: u64) -> BackendResult<()> {
        if self.captures.of(queue).is_some() {
            return Err(graph::no_events());
        }
        let track = self.track(event)?;
        let mine = Arc::clone(&track);
        let seq = {
            let mut c = lock(&track.counts);
            c.0 += 1;
            c.0
        };
        let inner = self.inner;
        let record = move || {
            // SAFETY: forwarded contract: the event lives until its records have run
            // (`event_destroy` waits for them).
            let r = unsafe { inner.event_record(device, event, queue) };
            let mut c = lock(&track.counts);
            c.1 = c.1.max(seq);
            track.cv.notify_all();
            r
        };
        self.submit(queue, Box::new(record)).inspect_err(|_| {
            // Never enqueued: the record does not count (a wait for it would never end).
            let mut c = lock(&mine.counts);
            c.0 -= 1;
            mine.cv.notify_all();
        })
    }

    unsafe fn event_synchronize(&self, device: u32, event: u64) -> BackendResult<()> {
        let track = self.track(event)?;
        let target = lock(&track.counts).0;
        track.wait_for(target)?;
        // SAFETY: forwarded contract.
        unsafe { self.inner.event_synchronize(device, event) }
    }

    unsafe fn event_query(&self, device: u32, event: u64) -> BackendResult<bool> {
        let track = self.track(event)?;
        let (recorded, ran) = *lock(&track.counts);
        // SAFETY: forwarded contract.
        Ok(ran >= recorded && unsafe { self.inner.event_query(device, event) }?)
    }

    unsafe fn event_elapsed_ms(&self, device: u32, start: u64, end: u64) -> BackendResult<f32> {
        for e in [start, end] {
            let track = self.track(e)?;
            let (recorded, ran) = *lock(&track.counts);
            if ran < recorded {
                return Err(BackendError::new(ErrorCode::Busy, 0, "the event has not completed"));
            }
        }
        // SAFETY: forwarded contract.
        unsafe { self.inner.event_elapsed_ms(device, start, end) }
    }

    unsafe fn program_unload(&self, device: u32, program: u64) -> BackendResult<()> {
        // Enqueued launches of its kernels must have run.
        self.drain_all()?;
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
        // The argument values are copied now (the caller's storage may go once this returns).
        // SAFETY: forwarded contract.
        let Some(launch) = unsafe { CopiedLaunch::check_and_copy(self.inner, device, kernel, dims, args) }? else {
            if self.captures.of(queue).is_some() {
                return Err(graph::too_large());
            }
            // Too many argument bytes to keep: it runs now, after its queue's work.
            drop(self.worker(queue)?.wait()?);
            // SAFETY: forwarded contract.
            return unsafe { self.inner.launch(device, queue, kernel, dims, args) };
        };
        let inner = self.inner;
        if self.captures.of(queue).is_some() {
            return self.captures.record(inner, device, queue, Piece::Launch(launch));
        }
        // SAFETY: forwarded contract; the arguments are the copies made at enqueue.
        let run = move || unsafe { launch.run(inner, device, queue) };
        self.submit(queue, Box::new(run))
    }

    unsafe fn queue_host_function(&self, device: u32, queue: u64, f: HostFn, data: *mut c_void) -> BackendResult<()> {
        if self.captures.of(queue).is_some() {
            return self.captures.record(self.inner, device, queue, Piece::HostFunction { f, data });
        }
        // Runs on the queue's thread, outside the backend's execution lock: a function that
        // blocks holds up only its own queue.
        let call = Sendable((f, data));
        self.submit(
            queue,
            Box::new(move || {
                let (f, data) = call.into_inner();
                // SAFETY: the caller's contract for `f(data)` (any thread, once).
                run_as_callback(|| unsafe { f(data) });
                Ok(())
            }),
        )
    }

    unsafe fn queue_begin_capture(&self, device: u32, queue: u64) -> BackendResult<()> {
        self.worker(queue)?;
        self.captures.begin(self.inner, device, queue)
    }

    unsafe fn queue_end_capture(&self, _device: u32, queue: u64) -> BackendResult<u64> {
        self.captures.end(queue)
    }

    unsafe fn graph_launch(&self, device: u32, graph: u64, queue: u64) -> BackendResult<()> {
        if self.captures.of(queue).is_some() {
            return Err(graph::no_nesting());
        }
        let inner = self.inner;
        let replay = move || {
            let _replaying = REPLAYS.read().unwrap_or_else(|p| p.into_inner());
            // SAFETY: the graph lives until its launches have run (`graph_destroy` waits for every
            // queue first) and is not changed while this holds `REPLAYS`; its pieces' contract is
            // the caller's.
            unsafe { graph::replay(inner, device, queue, graph) }
        };
        self.submit(queue, Box::new(replay))
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
        self.drain_all()?;
        let _no_replays = REPLAYS.write().unwrap_or_else(|p| p.into_inner());
        // SAFETY: a live graph that no replay reads while `REPLAYS` is held; the arguments'
        // contract is the caller's.
        unsafe { graph::set_args(self.inner, device, graph, index, kernel, args) }
    }

    unsafe fn graph_destroy(&self, device: u32, graph: u64) -> BackendResult<()> {
        // Its submitted launches run first.
        self.drain_all()?;
        // SAFETY: a live graph that nothing replays any more, never passed again.
        unsafe { graph::destroy(self.inner, device, graph) }
    }
}
