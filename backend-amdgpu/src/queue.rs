//! Queues (`hsa_queue_create`) with AQL packets, completion signals, and events on signals.
//!
//! Every packet has the barrier bit set, so a queue runs in order: waiting for the last
//! packet's completion signal waits for all of them. A packet's body is written first and its
//! header (with the setup word) last, as one 32-bit release store; then the doorbell is rung
//! with the packet's index. Each dispatch gets its own completion signal and kernarg buffer
//! (from the host agent's kernarg pool); both are reclaimed once the signal reached 0 (at the
//! next submission, a synchronisation or the queue's destruction, which waits for the queue to
//! drain first).
//!
//! A queue error (a kernel fault: HSA calls the queue's error callback and the queue stops) is
//! recorded in the queue's error cell; every wait on that queue's work (synchronise, events
//! recorded on it, copies ordered after it) then returns `DeviceLost` instead of waiting for
//! signals that will never complete, and the teardown releases what the dead queue held.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use ordo_core::{BackendError, BackendResult, ErrorCode, KernelArgs, LaunchDims};

use crate::conv::{StatusExt, check_release};
use crate::device::{Gpu, State};
use crate::program::{Kernel, dimensions, plan, write_kernargs};
use crate::sys::*;

/// Packets per queue (a power of two).
const QUEUE_PACKETS: u32 = 1024;

/// A submitted packet not yet reclaimed.
struct InFlight {
    signal: hsa_signal_t,
    kernarg: *mut c_void,
}

/// The status a queue's error callback recorded (0: none), shared with events recorded on it.
pub(crate) type ErrorCell = Arc<AtomicU32>;

/// An ordo queue: the HSA queue, its packets in flight and its error cell.
pub(crate) struct Queue {
    q: *mut hsa_queue_t,
    inflight: Mutex<VecDeque<InFlight>>,
    error: ErrorCell,
}

// SAFETY: the raw pointers are HSA objects usable from any thread; the list is behind a mutex.
unsafe impl Send for Queue {}
// SAFETY: as above.
unsafe impl Sync for Queue {}

/// The queue behind a value.
///
/// # Safety
/// `queue` is a live value from `create`.
pub(crate) unsafe fn from_value<'a>(queue: u64) -> &'a Queue {
    debug_assert!(
        queue != 0 && queue % core::mem::align_of::<Queue>() as u64 == 0,
        "from_value: not a queue this backend made"
    );
    // SAFETY: the caller's contract.
    unsafe { &*(queue as usize as *const Queue) }
}

/// HSA's queue-error callback: records the status in the queue's error cell (`data`).
unsafe extern "C" fn on_queue_error(status: hsa_status_t, _queue: *mut hsa_queue_t, data: *mut c_void) {
    // SAFETY: `data` is the queue's error cell, alive until after `hsa_queue_destroy`, after
    // which HSA calls no callback of the queue.
    unsafe { &*data.cast::<AtomicU32>() }.store(status.max(1), Ordering::Release);
}

fn lost(status: u32) -> BackendError {
    BackendError::new(
        ErrorCode::DeviceLost,
        i64::from(status),
        "the queue stopped after an error (a kernel fault): its work will not complete",
    )
}

/// `Err(DeviceLost)` once the cell holds an error.
pub(crate) fn check_cell(error: &AtomicU32) -> BackendResult<()> {
    match error.load(Ordering::Acquire) {
        0 => Ok(()),
        status => Err(lost(status)),
    }
}

pub(crate) fn create(state: &State, gpu: &Gpu) -> BackendResult<u64> {
    let error: ErrorCell = Arc::new(AtomicU32::new(0));
    let mut q: *mut hsa_queue_t = std::ptr::null_mut();
    // SAFETY: a live agent; the callback's data is the error cell, which the queue keeps alive
    // until after `hsa_queue_destroy`; the out-pointer is valid.
    unsafe {
        (state.hsa.hsa_queue_create)(
            gpu.agent,
            QUEUE_PACKETS,
            HSA_QUEUE_TYPE_MULTI,
            Some(on_queue_error),
            Arc::as_ptr(&error).cast_mut().cast(),
            u32::MAX,
            u32::MAX,
            &mut q,
        )
    }
    .result_in("hsa_queue_create")?;
    let queue = Box::into_raw(Box::new(Queue { q, inflight: Mutex::new(VecDeque::new()), error }));
    gpu.queues.lock().unwrap_or_else(|p| p.into_inner()).push(queue as usize);
    Ok(queue as u64)
}

/// How long one wait asks HSA to block before ordo looks at the error cell again (a hint in
/// HSA timestamp units: about 1 ms at the usual 1 GHz or less).
const WAIT_SLICE: u64 = 1_000_000;

/// Waits until `signal` is below 1 (complete), or `DeviceLost` once `error` (the cell of the
/// queue whose work completes the signal) holds an error.
pub(crate) fn wait(hsa: &Hsa, signal: hsa_signal_t, error: Option<&AtomicU32>) -> BackendResult<()> {
    loop {
        // SAFETY: a live signal.
        let v = unsafe {
            (hsa.hsa_signal_wait_scacquire)(signal, HSA_SIGNAL_CONDITION_LT, 1, WAIT_SLICE, HSA_WAIT_STATE_BLOCKED)
        };
        if v < 1 {
            return Ok(());
        }
        if let Some(e) = error {
            check_cell(e)?;
        }
    }
}

/// A new signal with value 1.
pub(crate) fn new_signal(hsa: &Hsa) -> BackendResult<hsa_signal_t> {
    let mut s = hsa_signal_t::default();
    // SAFETY: no consumer list (any agent may wait); valid out-pointer.
    unsafe { (hsa.hsa_signal_create)(1, 0, std::ptr::null(), &mut s) }.result_in("hsa_signal_create")?;
    Ok(s)
}

impl Queue {
    /// Frees what completed packets held; with `all`, waits for every packet first. On a queue
    /// that stopped after an error, `all` frees everything (nothing of a stopped queue runs
    /// again) and returns `DeviceLost`.
    fn reclaim(&self, state: &State, all: bool) -> BackendResult<()> {
        let mut inflight = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
        self.reclaim_locked(state.hsa, &mut inflight, all)
    }

    /// `reclaim` with the list already locked (a launch reclaims and submits under one lock).
    fn reclaim_locked(&self, hsa: &Hsa, inflight: &mut VecDeque<InFlight>, all: bool) -> BackendResult<()> {
        let mut stopped = check_cell(&self.error);
        if all && stopped.is_ok() {
            if let Some(last) = inflight.back() {
                stopped = wait(hsa, last.signal, Some(&self.error));
            }
        }
        let mut result = Ok(());
        while let Some(front) = inflight.front() {
            // SAFETY: a live signal owned by this queue.
            let complete = unsafe { (hsa.hsa_signal_load_scacquire)(front.signal) } < 1;
            let abandoned = all && stopped.is_err();
            if !(complete || abandoned) {
                break;
            }
            let done = inflight.pop_front().expect("front exists");
            // SAFETY: the packet completed (or its queue stopped), so neither the signal nor the
            // kernarg buffer is used again; both were created for it alone.
            unsafe {
                result = result.and(check_release("hsa_signal_destroy", (hsa.hsa_signal_destroy)(done.signal)));
                if !done.kernarg.is_null() {
                    result = result
                        .and(check_release("hsa_amd_memory_pool_free", (hsa.hsa_amd_memory_pool_free)(done.kernarg)));
                }
            }
        }
        stopped.and(result)
    }

    /// Reserves a slot, writes `body` (bytes 4..64 of the packet) and then the first word
    /// (header | setup << 16) with release semantics, and rings the doorbell.
    fn publish(&self, hsa: &Hsa, first_word: u32, body: &[u8; 60]) {
        // SAFETY: `q` is a live queue created by `create`.
        let q = unsafe { &*self.q };
        // SAFETY: a live queue.
        let index = unsafe { (hsa.hsa_queue_add_write_index_scacq_screl)(self.q, 1) };
        // SAFETY: a live queue; wait while the ring is full.
        while index.wrapping_sub(unsafe { (hsa.hsa_queue_load_read_index_scacquire)(self.q) }) >= u64::from(q.size) {
            std::thread::yield_now();
        }
        let slot = (index % u64::from(q.size)) as usize;
        // SAFETY: the ring holds `size` 64-byte packets; this slot is reserved for us and the
        // packet processor does not read it until its header changes from INVALID.
        unsafe {
            let packet = q.base_address.cast::<u8>().add(slot * 64);
            std::ptr::copy_nonoverlapping(body.as_ptr(), packet.add(4), body.len());
            (*packet.cast::<AtomicU32>()).store(first_word, Ordering::Release);
            (hsa.hsa_signal_store_screlease)(q.doorbell_signal, index as i64);
        }
    }

    fn header(kind: u16) -> u16 {
        kind << HSA_PACKET_HEADER_TYPE
            | 1 << HSA_PACKET_HEADER_BARRIER
            | HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE
            | HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE
    }

    /// A barrier-AND packet waiting for `dependency` (if any), completing `completion`.
    fn barrier(&self, hsa: &Hsa, dependency: Option<hsa_signal_t>, completion: hsa_signal_t) {
        let mut packet = hsa_barrier_and_packet_t::default();
        if let Some(d) = dependency {
            packet.dep_signal[0] = d;
        }
        packet.completion_signal = completion;
        // SAFETY: a 64-byte plain-data packet viewed as bytes.
        let bytes: [u8; 64] = unsafe { std::mem::transmute(packet) };
        let body: [u8; 60] = bytes[4..].try_into().expect("60 bytes");
        self.publish(hsa, u32::from(Self::header(HSA_PACKET_TYPE_BARRIER_AND)), &body);
    }

    /// Waits for every packet; frees what they held.
    pub(crate) fn synchronize(&self, state: &State) -> BackendResult<()> {
        self.reclaim(state, true)
    }

    pub(crate) fn idle(&self, state: &State) -> BackendResult<bool> {
        self.reclaim(state, false)?;
        Ok(self.inflight.lock().unwrap_or_else(|p| p.into_inner()).is_empty())
    }

    /// Dispatches `kernel`.
    ///
    /// # Safety
    /// As `Backend::launch`.
    pub(crate) unsafe fn launch(
        &self,
        state: &State,
        kernel: &Kernel,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> BackendResult<()> {
        // Everything about the arguments is checked before anything is allocated.
        let plan = plan(kernel, dims, args)?;
        check_cell(&self.error)?;
        let hsa = state.hsa;
        let mut inflight = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
        self.reclaim_locked(hsa, &mut inflight, false)?;
        let mut kernarg: *mut c_void = std::ptr::null_mut();
        let size = kernel.kernarg_size as usize;
        if size > 0 {
            // SAFETY: the kernarg pool; valid out-pointer.
            unsafe { (hsa.hsa_amd_memory_pool_allocate)(state.kernarg_pool, size, 0, &mut kernarg) }
                .result_in("hsa_amd_memory_pool_allocate")?;
            // SAFETY: a fresh allocation of `size` bytes, written in place (the symbol's kernarg
            // size); the arguments are readable as the metadata says (the caller's contract).
            unsafe {
                write_kernargs(kernel, dims, args, &plan, std::slice::from_raw_parts_mut(kernarg.cast::<u8>(), size))
            };
        }
        let signal = match new_signal(hsa) {
            Ok(s) => s,
            Err(e) => {
                if !kernarg.is_null() {
                    // SAFETY: allocated above, never published.
                    let _ = unsafe { (hsa.hsa_amd_memory_pool_free)(kernarg) };
                }
                return Err(e);
            }
        };
        let [gx, gy, gz] = dims.grid;
        let [bx, by, bz] = dims.block;
        // The runtime checked the dimensions against the limits, which keep grid × block in u32.
        let packet = hsa_kernel_dispatch_packet_t {
            header: 0,
            setup: 0,
            workgroup_size_x: bx as u16,
            workgroup_size_y: by as u16,
            workgroup_size_z: bz as u16,
            reserved0: 0,
            grid_size_x: gx * bx,
            grid_size_y: gy * by,
            grid_size_z: gz * bz,
            private_segment_size: kernel.private_size,
            group_segment_size: plan.group_segment,
            kernel_object: kernel.object,
            kernarg_address: kernarg,
            reserved2: 0,
            completion_signal: signal,
        };
        // SAFETY: a 64-byte plain-data packet viewed as bytes.
        let bytes: [u8; 64] = unsafe { std::mem::transmute(packet) };
        let body: [u8; 60] = bytes[4..].try_into().expect("60 bytes");
        let setup = dimensions(dims) << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
        // Still under the list's lock, so that the list's order is the ring's.
        inflight.push_back(InFlight { signal, kernarg });
        self.publish(hsa, u32::from(Self::header(HSA_PACKET_TYPE_KERNEL_DISPATCH)) | u32::from(setup) << 16, &body);
        Ok(())
    }

    /// Adds a barrier packet that completes `signal` after all earlier packets (an event record).
    pub(crate) fn record(&self, state: &State, signal: hsa_signal_t) -> BackendResult<()> {
        check_cell(&self.error)?;
        let hsa = state.hsa;
        let own = new_signal(hsa)?;
        // The event's signal goes back to 1; a barrier completes it after all earlier packets,
        // and a second barrier, tracked with the queue's own signal, follows: waiting for that
        // one (synchronise, destroy) implies the event's barrier was processed, so the queue
        // never holds the event's signal beyond its own lifetime.
        // SAFETY: a live signal not in use (the caller waited for its previous record).
        unsafe { (hsa.hsa_signal_store_screlease)(signal, 1) };
        let mut inflight = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
        self.barrier(hsa, None, signal);
        inflight.push_back(InFlight { signal: own, kernarg: std::ptr::null_mut() });
        self.barrier(hsa, None, own);
        Ok(())
    }
}

/// Waits for the queue to drain, then destroys it.
///
/// # Safety
/// `queue` is a live value from `create` for `gpu`, not used again.
pub(crate) unsafe fn destroy(state: &State, gpu: &Gpu, queue: u64) -> BackendResult<()> {
    // SAFETY: the caller's contract: the box `create` leaked, reclaimed once.
    let queue = unsafe { Box::from_raw(queue as usize as *mut Queue) };
    gpu.queues.lock().unwrap_or_else(|p| p.into_inner()).retain(|&q| q != &*queue as *const Queue as usize);
    let drained = queue.reclaim(state, true);
    // SAFETY: every packet completed; the queue is not used again.
    let destroyed = check_release("hsa_queue_destroy", unsafe { (state.hsa.hsa_queue_destroy)(queue.q) });
    drained.and(destroyed)
}

/// Waits for every queue of `gpu` (before a call without a queue).
pub(crate) fn drain_all(state: &State, gpu: &Gpu) -> BackendResult<()> {
    let queues = gpu.queues.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for q in queues {
        // SAFETY: listed queues are live (removed before destruction; the runtime does not
        // destroy a queue while a call without a queue is in flight on its device).
        unsafe { from_value(q as u64) }.synchronize(state)?;
    }
    Ok(())
}

/// An event: a signal at 0 (complete) or 1 (recorded, pending), and the error cell of the
/// queue it was last recorded on (so that waiting for it stops if that queue does).
pub(crate) struct Event {
    signal: hsa_signal_t,
    recorded_on: Mutex<Option<ErrorCell>>,
}

impl Event {
    /// Waits for the last record to complete.
    fn wait(&self, hsa: &Hsa) -> BackendResult<()> {
        let cell = self.recorded_on.lock().unwrap_or_else(|p| p.into_inner()).clone();
        wait(hsa, self.signal, cell.as_deref())
    }
}

/// # Safety
/// `event` is a live value from `event_create`.
unsafe fn event<'a>(event: u64) -> &'a Event {
    debug_assert!(
        event != 0 && event % core::mem::align_of::<Event>() as u64 == 0,
        "event: not an event this backend made"
    );
    // SAFETY: the caller's contract.
    unsafe { &*(event as usize as *const Event) }
}

pub(crate) fn event_create(state: &State) -> BackendResult<u64> {
    let hsa = state.hsa;
    let signal = new_signal(hsa)?;
    // SAFETY: a fresh signal: an event that was never recorded is complete.
    unsafe { (hsa.hsa_signal_store_screlease)(signal, 0) };
    Ok(Box::into_raw(Box::new(Event { signal, recorded_on: Mutex::new(None) })) as u64)
}

/// # Safety
/// `event` is a live value from `event_create`, not used again.
pub(crate) unsafe fn event_destroy(state: &State, event: u64) -> BackendResult<()> {
    // SAFETY: the caller's contract: the box `event_create` leaked, reclaimed once.
    let event = unsafe { Box::from_raw(event as usize as *mut Event) };
    // A pending record's barrier still completes this signal: wait for it first (unless its
    // queue stopped: then nothing touches the signal again).
    let waited = event.wait(state.hsa);
    // SAFETY: complete (or its queue stopped), not referenced by any packet still to be processed.
    let destroyed = check_release("hsa_signal_destroy", unsafe { (state.hsa.hsa_signal_destroy)(event.signal) });
    destroyed.and(waited.or_else(|e| if e.code == ErrorCode::DeviceLost { Ok(()) } else { Err(e) }))
}

/// # Safety
/// `event` and `queue` are live values.
pub(crate) unsafe fn event_record(state: &State, event_value: u64, queue: u64) -> BackendResult<()> {
    // SAFETY: the caller's contract.
    let (e, q) = unsafe { (event(event_value), from_value(queue)) };
    e.wait(state.hsa)?; // an earlier record of this event completes first
    q.record(state, e.signal)?;
    *e.recorded_on.lock().unwrap_or_else(|p| p.into_inner()) = Some(q.error.clone());
    Ok(())
}

/// # Safety
/// `event` and `queue` are live values.
pub(crate) unsafe fn wait_event(state: &State, queue: u64, event_value: u64) -> BackendResult<()> {
    // SAFETY: the caller's contract.
    let (e, q) = unsafe { (event(event_value), from_value(queue)) };
    check_cell(&q.error)?;
    // A pending event is waited for here, on the host: a barrier packet naming its signal could
    // outlive the event (destroyed right after this call, as CUDA allows), and HSA would then
    // read a destroyed signal.
    e.wait(state.hsa)
}

/// # Safety
/// `event` is a live value.
pub(crate) unsafe fn event_synchronize(state: &State, event_value: u64) -> BackendResult<()> {
    // SAFETY: the caller's contract.
    unsafe { event(event_value) }.wait(state.hsa)
}

/// # Safety
/// `event` is a live value.
pub(crate) unsafe fn event_done(state: &State, event_value: u64) -> BackendResult<bool> {
    // SAFETY: the caller's contract.
    let e = unsafe { event(event_value) };
    // SAFETY: a live signal.
    if unsafe { (state.hsa.hsa_signal_load_scacquire)(e.signal) } < 1 {
        return Ok(true);
    }
    match e.recorded_on.lock().unwrap_or_else(|p| p.into_inner()).as_deref() {
        Some(cell) => check_cell(cell).map(|()| false),
        None => Ok(false),
    }
}
