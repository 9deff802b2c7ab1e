//! The teardown, in the one documented order (DESIGN.md, "Teardown order"):
//!
//! 1. synchronise every queue of every device of every platform (work may cross devices: a copy
//!    or an event wait on one device may use another's memory, so nothing is released until all
//!    is idle; a capture still open is ended first and its graph destroyed);
//!    then the host-device memory the runtime page-locked for copies between platforms is
//!    unregistered;
//! 2. then for each platform in reverse registration order, for each of its devices in reverse
//!    order: destroy events, graphs, communicators, queues, programs (their kernels die with them) and memory
//!    (queue-ordered memory too), each newest first; release the device;
//! 3. then deinit each present backend, in reverse registration order.
//!
//! Every step runs even when an earlier one failed; every object leaves its table (so its slot's
//! generation advances and old handles go stale) whatever its backend call returned. A backend
//! call or an observer that panics (std builds) is recorded as a failure of its step (`Internal`)
//! and the teardown goes on; an observer that panicked is not called again.
//! Depends on the runtime's tables (`super`), `backend`, `error`, `handle`, `reentry` and
//! `report`; the final shutdown (`runtime/mod.rs`) and unloads (`program.rs`) depend on it.

use crate::backend::Backend;
use crate::error::{BackendError, ErrorCode};
use crate::handle::{ObjectKind, RawHandle};
use crate::reentry;
use crate::report::{StepOutcome, TeardownEvent, TeardownReport, TeardownStep};

use super::{NO_SLOT, Tables};

const BACKEND_PANICKED: BackendError =
    BackendError::new(ErrorCode::Internal, 0, "the backend panicked during this teardown step");
const OBSERVER_PANICKED: BackendError =
    BackendError::new(ErrorCode::Internal, 0, "the teardown observer panicked on this step");

struct Walk<'a> {
    report: TeardownReport,
    observer: Option<&'a mut dyn FnMut(&TeardownEvent)>,
    platform: u32,
    device: u32,
}

impl Walk<'_> {
    /// Runs one backend release call (contained) and records and reports its outcome.
    fn step(
        &mut self,
        step: TeardownStep,
        handle: RawHandle,
        address: u64,
        call: impl FnOnce() -> Result<(), BackendError>,
    ) {
        let begun = crate::trace::begin(trace_name(step));
        let result = reentry::contain(call).unwrap_or(Err(BACKEND_PANICKED));
        if begun.is_some() {
            let name = trace_name(step);
            let args = [
                ("platform", u64::from(self.platform)),
                ("ordinal", u64::from(self.device)),
                ("handle", handle.0),
                ("address", address),
            ];
            crate::trace::step(&name[..name.len() - 1], begun, &args, result.as_ref().err().map(|e| e.code));
        }
        let outcome = match result {
            Ok(()) => StepOutcome::Done,
            Err(e) if e.released_by_driver => StepOutcome::ReleasedByDriver,
            Err(e) => StepOutcome::Failed(e),
        };
        let mut event = TeardownEvent { platform: self.platform, device: self.device, step, handle, address, outcome };
        if let Some(observer) = self.observer.as_mut() {
            let _callback = reentry::mark();
            if reentry::contain(|| observer(&event)).is_err() {
                self.observer = None;
                if let StepOutcome::Done | StepOutcome::ReleasedByDriver = event.outcome {
                    event.outcome = StepOutcome::Failed(OBSERVER_PANICKED);
                }
            }
        }
        self.report.record(&event);
    }
}

/// A teardown step's name on the timeline (NUL-terminated, as `trace::begin` takes it).
fn trace_name(step: TeardownStep) -> &'static str {
    match step {
        TeardownStep::SynchronizeQueue => "teardown: synchronize queue\0",
        TeardownStep::DestroyEvent => "teardown: destroy event\0",
        TeardownStep::DestroyQueue => "teardown: destroy queue\0",
        TeardownStep::UnloadProgram => "teardown: unload program\0",
        TeardownStep::FreeMemory => "teardown: free memory\0",
        TeardownStep::ReleaseDevice => "teardown: release device\0",
        TeardownStep::DeinitBackend => "teardown: deinit backend\0",
        TeardownStep::DestroyGraph => "teardown: destroy graph\0",
        TeardownStep::DestroyCommunicator => "teardown: destroy communicator\0",
    }
}

/// Releases every object of every platform and deinitialises the backends. Every table is empty
/// afterwards (the allocation table's address index relies on it).
pub(super) fn tear_down(
    backends: &[&'static dyn Backend],
    t: &mut Tables,
    observer: Option<&mut dyn FnMut(&TeardownEvent)>,
) -> TeardownReport {
    // Without an observer, a step makes no callback (no mark, no second panic guard).
    let mut walk = Walk { report: TeardownReport::default(), observer, platform: 0, device: 0 };

    // 1. In-flight work everywhere finishes before any code or memory goes.
    let mut cur = t.queues.oldest();
    while let Some(q) = cur {
        cur = t.queues.newer(q);
        let (device, raw, capturing) = (t.queues.at(q).device, t.queues.at(q).raw, t.queues.at(q).capturing());
        let d = t.devices.at(device);
        let (backend, ordinal) = (d.driver, d.ordinal);
        (walk.platform, walk.device) = (u32::from(d.backend), ordinal);
        // SAFETY: a live queue of a live device of an initialised backend, as the runtime
        // recorded it; a capture still open is ended first and its graph destroyed at once
        // (nothing of it ran), so that the queue can be synchronised and destroyed.
        // The step's outcome is the first error of the three calls.
        walk.step(TeardownStep::SynchronizeQueue, t.queues.handle_at(q), 0, || unsafe {
            let ended = if capturing {
                backend.queue_end_capture(ordinal, raw).and_then(|graph| backend.graph_destroy(ordinal, graph))
            } else {
                Ok(())
            };
            let synced = backend.queue_synchronize(ordinal, raw);
            ended.and(synced)
        });
    }

    // 1a. Device work the timeline still waits for is resolved and its events released (the
    // queues are idle now), before any queue or backend goes.
    if crate::trace::holds_events() {
        for b in backends {
            crate::trace::resolve(crate::trace::Scope::Backend(*b), true);
        }
    }

    // 1b. Host-device memory page-locked for copies between platforms is unregistered by the
    // GPU backend that registered it, before either side's memory or device is released.
    for p in core::mem::take(t.pinned.get_mut()).iter().filter(|p| p.registered) {
        let d = t.devices.at(p.device);
        let (backend, ordinal) = (d.driver, d.ordinal);
        (walk.platform, walk.device) = (u32::from(d.backend), ordinal);
        // SAFETY: registered by this backend for this range (`Runtime::pin`), never passed again.
        walk.step(TeardownStep::FreeMemory, RawHandle::NULL, p.base, || unsafe {
            backend.mem_free(ordinal, crate::backend::MemKind::Registered, p.base, p.size)
        });
    }

    // 1c. Communicators of a collective library are finalized together, per backend, with the
    // backend's bounded wait (their queues are idle): one rank's finalize may wait for its
    // peers', so none is destroyed before all have begun. Those that fail are aborted below.
    for b in backends {
        let Some(lib) = b.collectives() else { continue };
        let mut list: heapless::Vec<(u32, u64), { crate::capacity::MAX_COMMUNICATORS }> = heapless::Vec::new();
        for c in t.comms.iter_oldest_first() {
            let c = t.comms.at(c);
            let d = t.devices.at(c.device);
            if c.native && core::ptr::addr_eq(d.driver, *b) {
                let _ = list.push((d.ordinal, c.raw));
            }
        }
        if !list.is_empty() {
            // SAFETY: live communicators of this backend's devices; their queues are idle.
            let _ = reentry::contain(|| unsafe { lib.comm_finalize(&list) });
        }
    }

    // 2. and 3. Per platform, newest first: its devices' objects, then the backend itself.
    let mut platform = t.platforms.newest();
    while let Some(p) = platform {
        platform = t.platforms.older(p);
        let entry = t.platforms.at(p);
        let backend = backends[usize::from(entry.backend)];
        walk.platform = u32::from(entry.backend);
        let devices = entry.devices.clone();
        for &d in devices.iter().rev() {
            walk.device = t.devices.at(d).ordinal;
            tear_down_device(backend, t, d, &mut walk);
        }
        let handle = t.platforms.handle_at(p);
        let present = t.platforms.remove_at(p).absent.is_none();
        if present {
            walk.device = u32::MAX;
            // SAFETY: every device of the backend was released above.
            walk.step(TeardownStep::DeinitBackend, handle, 0, || unsafe { backend.deinit() });
        }
    }
    debug_assert_eq!(t.allocations.slots.len(), 0);
    debug_assert_eq!(t.ordered.lock().slots.len(), 0);
    walk.report
}

fn tear_down_device(backend: &dyn Backend, t: &mut Tables, device: u32, walk: &mut Walk<'_>) {
    let ordinal = walk.device;

    // Events, newest first.
    let mut cur = t.events.newest();
    while let Some(e) = cur {
        cur = t.events.older(e);
        if t.events.at(e).device == device {
            let handle = t.events.handle_at(e);
            let raw = t.events.remove_at(e).raw;
            // SAFETY: the event was live on this device until now; it is never passed again.
            walk.step(TeardownStep::DestroyEvent, handle, 0, || unsafe { backend.event_destroy(ordinal, raw) });
        }
    }

    // Graphs, newest first (before the kernels and memory they use).
    let mut cur = t.graphs.newest();
    while let Some(g) = cur {
        cur = t.graphs.older(g);
        if t.graphs.at(g).device == device {
            let handle = t.graphs.handle_at(g);
            let raw = t.graphs.remove_at(g).raw;
            // SAFETY: as for events.
            walk.step(TeardownStep::DestroyGraph, handle, 0, || unsafe { backend.graph_destroy(ordinal, raw) });
        }
    }

    // Communicators, newest first (after the graphs that may hold their collectives, before the
    // queues their work ran on); the reference engine's have nothing to release.
    let mut cur = t.comms.newest();
    while let Some(c) = cur {
        cur = t.comms.older(c);
        if t.comms.at(c).device == device {
            let handle = t.comms.handle_at(c);
            let entry = t.comms.remove_at(c);
            walk.step(TeardownStep::DestroyCommunicator, handle, 0, || match backend.collectives() {
                // SAFETY: as for events.
                Some(lib) if entry.native => unsafe { lib.comm_destroy(ordinal, entry.raw) },
                _ => Ok(()),
            });
        }
    }

    // Queues, newest first.
    let mut cur = t.queues.newest();
    while let Some(q) = cur {
        cur = t.queues.older(q);
        if t.queues.at(q).device == device {
            let handle = t.queues.handle_at(q);
            let raw = t.queues.remove_at(q).raw;
            // SAFETY: as for events.
            walk.step(TeardownStep::DestroyQueue, handle, 0, || unsafe { backend.queue_destroy(ordinal, raw) });
        }
    }

    // Programs, newest first; their kernels leave the kernel table with them.
    let mut cur = t.programs.newest();
    while let Some(p) = cur {
        cur = t.programs.older(p);
        if t.programs.at(p).device == device {
            let handle = t.programs.handle_at(p);
            let program = t.programs.remove_at(p);
            let kernels = forget_kernels(t, program.first_kernel);
            // Its global-variable ranges leave the allocation table in the memory walk below
            // (one walk for all programs: teardown stays linear in the live objects).
            walk.report.count_released(ObjectKind::Kernel, kernels);
            // SAFETY: as for events.
            walk.step(TeardownStep::UnloadProgram, handle, 0, || unsafe {
                backend.program_unload(ordinal, program.raw)
            });
        }
    }
    // Programs whose unload waited for a capture that the teardown ended.
    while let Some(raw) = t.take_deferred_unload(device) {
        // SAFETY: a program of this device that left the table when its unload was deferred.
        walk.step(TeardownStep::UnloadProgram, RawHandle::NULL, 0, || unsafe { backend.program_unload(ordinal, raw) });
    }

    // The blocks the cache kept for the device's queues (destroyed above: freed as memory of the
    // device, as the queue-ordered memory below is); the queues' work is done.
    for b in t.cache.take_where(|b| b.device == device) {
        // SAFETY: queue-ordered memory of this device that no table names; never passed again.
        walk.step(TeardownStep::FreeMemory, RawHandle::NULL, b.base, || unsafe {
            backend.mem_free(ordinal, crate::backend::MemKind::Ordered, b.base, b.size)
        });
    }

    // Queue-ordered memory from the device's pool (the ordered table), newest first; the
    // queues' work is done (the first step synchronised them).
    {
        let mut ordered = t.ordered.lock();
        let mut cur = ordered.slots.newest();
        while let Some(a) = cur {
            cur = ordered.slots.older(a);
            if ordered.slots.at(a).device == device {
                let m = ordered.remove_at_for_teardown(a);
                // SAFETY: base, kind and size as `mem_alloc_on` returned them; never passed again.
                walk.step(TeardownStep::FreeMemory, RawHandle::NULL, m.base, || unsafe {
                    backend.mem_free(ordinal, m.kind, m.base, m.size)
                });
            }
        }
        t.ordered.publish(&ordered);
    }

    // The rest of its memory, newest first.
    let mut cur = t.allocations.slots.newest();
    while let Some(a) = cur {
        cur = t.allocations.slots.older(a);
        if t.allocations.slots.at(a).device == device {
            let m = t.allocations.remove_at_for_teardown(a);
            if m.kind == crate::backend::MemKind::Global {
                // A program's global variable: the driver freed it with its program, above.
                continue;
            }
            // Memory is known to users by its address, not by the table's internal handle.
            // SAFETY: base, kind and size as `mem_alloc` returned them; never passed again.
            walk.step(TeardownStep::FreeMemory, RawHandle::NULL, m.base, || unsafe {
                backend.mem_free(ordinal, m.kind, m.base, m.size)
            });
        }
    }

    // The device itself.
    let handle = t.devices.handle_at(device);
    t.devices.remove_at(device);
    // SAFETY: every object of the device was released above.
    walk.step(TeardownStep::ReleaseDevice, handle, 0, || unsafe { backend.device_release(ordinal) });
}

/// Removes a program's kernels, following the list that starts at `first`; returns how many.
pub(super) fn forget_kernels(t: &mut Tables, first: u32) -> u32 {
    let (mut k, mut n) = (first, 0);
    while k != NO_SLOT {
        k = t.kernels.remove_at(k).next;
        n += 1;
    }
    n
}

/// Removes the global-variable ranges of the program in slot `program` (no backend call: the
/// driver frees them with the program), when it is unloaded outside a teardown.
pub(super) fn forget_globals(t: &mut Tables, program: u32) {
    let mut cur = t.allocations.slots.newest();
    while let Some(a) = cur {
        cur = t.allocations.slots.older(a);
        let e = t.allocations.slots.at(a);
        if e.kind == crate::backend::MemKind::Global && e.owner == program {
            t.allocations.remove_at(a);
        }
    }
}
