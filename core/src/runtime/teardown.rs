//! The teardown, in the one documented order (DESIGN.md, "Teardown order"):
//!
//! for each platform in reverse registration order, for each of its devices in reverse order:
//! 1. synchronise every queue; 2. destroy events, newest first; 3. destroy queues, newest first;
//! 4. unload programs, newest first (their kernels die with them); 5. free memory, newest first;
//! 6. release the device. Then deinit each present backend, in reverse registration order.
//!
//! Every step runs even when an earlier one failed; every object leaves its table (so its slot's
//! generation advances and old handles go stale) whatever its backend call returned.

use crate::backend::Backend;
use crate::handle::RawHandle;
use crate::report::{StepOutcome, TeardownEvent, TeardownReport, TeardownStep};

use super::{NO_SLOT, Tables};

struct Walk<'a> {
    report: TeardownReport,
    observer: &'a mut dyn FnMut(&TeardownEvent),
    platform: u32,
    device: u32,
}

impl Walk<'_> {
    fn step(&mut self, step: TeardownStep, handle: RawHandle, address: u64, result: Result<(), crate::BackendError>) {
        let outcome = match result {
            Ok(()) => StepOutcome::Done,
            Err(e) if e.released_by_driver => StepOutcome::ReleasedByDriver,
            Err(e) => StepOutcome::Failed(e),
        };
        let event = TeardownEvent { platform: self.platform, device: self.device, step, handle, address, outcome };
        self.report.record(&event);
        (self.observer)(&event);
    }
}

/// Releases every object of every platform and deinitialises the backends. Every table is empty
/// afterwards (the allocation table's address index relies on it).
pub(super) fn tear_down(
    backends: &[&'static dyn Backend],
    t: &mut Tables,
    observer: &mut dyn FnMut(&TeardownEvent),
) -> TeardownReport {
    let mut walk = Walk { report: TeardownReport::default(), observer, platform: 0, device: 0 };
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
            walk.step(TeardownStep::DeinitBackend, handle, 0, backend.deinit());
        }
    }
    debug_assert_eq!(t.allocations.slots.len(), 0);
    walk.report
}

fn tear_down_device(backend: &dyn Backend, t: &mut Tables, device: u32, walk: &mut Walk<'_>) {
    let ordinal = walk.device;

    // 1. In-flight work finishes before its code and memory go.
    let mut cur = t.queues.oldest();
    while let Some(q) = cur {
        cur = t.queues.newer(q);
        let entry = t.queues.at(q);
        if entry.device == device {
            let result = backend.queue_synchronize(ordinal, entry.raw);
            walk.step(TeardownStep::SynchronizeQueue, t.queues.handle_at(q), 0, result);
        }
    }

    // 2. Events, newest first.
    let mut cur = t.events.newest();
    while let Some(e) = cur {
        cur = t.events.older(e);
        if t.events.at(e).device == device {
            let handle = t.events.handle_at(e);
            let raw = t.events.remove_at(e).raw;
            walk.step(TeardownStep::DestroyEvent, handle, 0, backend.event_destroy(ordinal, raw));
        }
    }

    // 3. Queues, newest first.
    let mut cur = t.queues.newest();
    while let Some(q) = cur {
        cur = t.queues.older(q);
        if t.queues.at(q).device == device {
            let handle = t.queues.handle_at(q);
            let raw = t.queues.remove_at(q).raw;
            walk.step(TeardownStep::DestroyQueue, handle, 0, backend.queue_destroy(ordinal, raw));
        }
    }

    // 4. Programs, newest first; their kernels leave the kernel table with them.
    let mut cur = t.programs.newest();
    while let Some(p) = cur {
        cur = t.programs.older(p);
        if t.programs.at(p).device == device {
            let handle = t.programs.handle_at(p);
            let program = t.programs.remove_at(p);
            forget_kernels(t, program.first_kernel);
            walk.step(TeardownStep::UnloadProgram, handle, 0, backend.program_unload(ordinal, program.raw));
        }
    }

    // 5. Memory, newest first.
    let mut cur = t.allocations.slots.newest();
    while let Some(a) = cur {
        cur = t.allocations.slots.older(a);
        if t.allocations.slots.at(a).device == device {
            let handle = t.allocations.slots.handle_at(a);
            let m = t.allocations.remove_at_for_teardown(a);
            walk.step(TeardownStep::FreeMemory, handle, m.base, backend.mem_free(ordinal, m.kind, m.base, m.size));
        }
    }

    // 6. The device itself.
    let handle = t.devices.handle_at(device);
    t.devices.remove_at(device);
    walk.step(TeardownStep::ReleaseDevice, handle, 0, backend.device_release(ordinal));
}

/// Removes a program's kernels, following the list that starts at `first`.
pub(super) fn forget_kernels(t: &mut Tables, first: u32) {
    let mut k = first;
    while k != NO_SLOT {
        k = t.kernels.remove_at(k).next;
    }
}
