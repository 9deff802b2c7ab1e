//! Operations on queues and events: creation and release, synchronisation, host functions,
//! ordering between queues, timing.
//!
//! Every operation validates all of its input before it calls a backend, so bad input returns a
//! specific error and changes nothing; that validation is what the backend trait's `unsafe`
//! methods rely on. Calls that only use objects run shared; calls that create or destroy objects
//! run exclusive. A failed destroy still retires the handle. Depends on `info` (handle resolution),
//! the runtime's tables, `backend`, `handle` and `error`.

use crate::trace::traced;
use core::sync::atomic::Ordering::Relaxed;

use crate::backend::HostFn;
use crate::error::{ErrorCode, Result, fail};
use crate::handle::{Device, Event, Queue};

use super::{EventEntry, QueueEntry, Runtime, Tables};

/// The error of a call a capturing queue refuses.
pub(super) const CAPTURING: &str = "the queue is capturing into a graph: end the capture first";

impl Runtime {
    // ---- queues ---------------------------------------------------------------------------

    /// The backend's own value for a queue (CUDA: its `CUstream`; the host backend: a counter),
    /// for interoperation with the driver. It names the queue only while the queue lives; work
    /// the caller puts on it directly is outside ordo's bookkeeping.
    pub fn queue_native(&self, queue: Queue) -> Result<u64> {
        traced!("queue_native", ["queue" = queue.0.0], {
            self.with_shared(|t| self.queue(t, queue).map(|(_, raw)| raw))
        })
    }

    /// Enqueues `f(data)` on a queue (liboffload's `olLaunchHostFunction`): it runs on the host
    /// after all work submitted to the queue before it, and work submitted after it waits for it
    /// to return. On a bare host backend it runs before this call returns (the default runtime's
    /// host device runs it on the queue's thread with std, `QueuedHost`, and without std at the
    /// queue's next execution point, `DeferredHost`). `Unsupported` from
    /// backends without it (AMDGPU).
    ///
    /// # Safety
    /// `f(data)` is sound to call once from any thread; it must not call ordo or the driver
    /// (CUDA forbids driver calls there; ordo calls that would wait for it fail with `Busy` on
    /// the host backend).
    pub unsafe fn queue_host_function(&self, queue: Queue, f: HostFn, data: *mut core::ffi::c_void) -> Result<()> {
        traced!(begun, "queue_host_function", ["queue" = queue.0.0], {
            self.with_shared(|t| {
                let (d, q) = self.queue(t, queue)?;
                let timing = Self::time_work(t, begun, d.backend, d.ordinal, queue, q);
                // SAFETY: a live queue of this device; the function's contract is the caller's.
                let r = unsafe { d.backend.queue_host_function(d.ordinal, q, f, data) };
                Self::work_done(timing, || crate::trace::WorkKind::HostFunction, r.map_err(Into::into))
            })
        })
    }

    /// Creates an in-order queue on a device.
    pub fn queue_create(&self, device: Device) -> Result<Queue> {
        traced!("queue_create", ["device" = device.0.0], { self.create_queue(device, false) })
    }

    /// Creates a queue whose work later calls *without* a queue do not wait for (CUDA: a
    /// non-blocking stream), for callers that synchronise their queues themselves, as MLIR code
    /// does: launches on it avoid the driver's bookkeeping for the legacy stream. Everything else
    /// is as `queue_create` (the teardown synchronises it like any queue).
    pub fn queue_create_independent(&self, device: Device) -> Result<Queue> {
        traced!("queue_create_independent", ["device" = device.0.0], { self.create_queue(device, true) })
    }

    /// The device's default queue: one independent queue per device, made by the first call and
    /// returned to every later one while it lives (the queue that MLIR's null stream and
    /// liboffload's queue-less calls use). Race-free: threads whose first calls race get the same
    /// queue, and no other is made. If it was destroyed, the next call makes another. The final
    /// shutdown releases it with the device's other queues.
    pub fn default_queue(&self, device: Device) -> Result<Queue> {
        traced!("default_queue", ["device" = device.0.0], {
            let known = self.with_shared(|t| {
                let slot = t.devices.resolve(device.0)?;
                Ok(t.devices.at(slot).default_queue.filter(|q| t.queues.resolve(q.0).is_ok()))
            })?;
            if let Some(q) = known {
                return Ok(q);
            }
            self.with_exclusive(|t| {
                let slot = t.devices.resolve(device.0)?;
                // Made by a racing call between the two sections?
                if let Some(q) = t.devices.at(slot).default_queue.filter(|q| t.queues.resolve(q.0).is_ok()) {
                    return Ok(q);
                }
                let q = self.create_queue_in(t, device, true)?;
                t.devices.at_mut(slot).default_queue = Some(q);
                Ok(q)
            })
        })
    }

    fn create_queue(&self, device: Device, independent: bool) -> Result<Queue> {
        self.with_exclusive(|t| self.create_queue_in(t, device, independent))
    }

    /// Creates a queue inside an exclusive section.
    fn create_queue_in(&self, t: &mut Tables, device: Device, independent: bool) -> Result<Queue> {
        {
            let d = self.dev(t, device)?;
            if t.queues.is_full() {
                return fail(ErrorCode::OutOfResources, "queue table is full (ORDO_MAX_QUEUES)");
            }
            let raw = if independent {
                d.backend.queue_create_independent(d.ordinal)?
            } else {
                d.backend.queue_create(d.ordinal)?
            };
            match t.queues.insert(QueueEntry::new(d.slot, raw)) {
                Ok(h) => Ok(Queue(h)),
                Err(_) => {
                    // SAFETY: the queue the backend just returned; never passed again.
                    let _ = unsafe { d.backend.queue_destroy(d.ordinal, raw) };
                    fail(ErrorCode::OutOfResources, "queue table is full (ORDO_MAX_QUEUES)")
                }
            }
        }
    }

    /// Destroys a queue (without waiting for its work). `InvalidArgument` for a queue that is
    /// capturing (end the capture first).
    pub fn queue_destroy(&self, queue: Queue) -> Result<()> {
        traced!("queue_destroy", ["queue" = queue.0.0], {
            self.with_exclusive(|t| {
                let (d, raw) = self.queue_not_capturing(t, queue)?;
                if crate::trace::holds_events() {
                    // The timeline's spans of this queue are resolved and its anchor released.
                    let number = Self::device_number(t, d.backend, d.ordinal, d.slot);
                    let target = crate::trace::Target { backend: d.backend, ordinal: d.ordinal, raw, number };
                    crate::trace::resolve(crate::trace::Scope::Queue(target), true);
                }
                // Its cached blocks go back to the driver first, in its order.
                let taken = t.cache.take_where(|b| b.device == d.slot && b.raw == raw);
                // SAFETY: blocks of this live queue, taken from the cache (exclusive access).
                if let Err(e) = unsafe { Self::give_back(t, &taken) } {
                    log::warn!("ordo: queue_destroy: a cached block's free failed: {e}");
                }
                t.queues.remove(queue.0)?;
                // SAFETY: a live queue of this device, removed from the table so never passed again.
                Ok(unsafe { d.backend.queue_destroy(d.ordinal, raw) }?)
            })
        })
    }

    /// Gives the queue's cached blocks of queue-ordered memory back to the driver, freed in the
    /// queue's order (`cache.rs`: blocks `mem_free_on` kept for the queue's next allocations);
    /// returns how many bytes it gave back (0 when none, or the cache is off). Errors: the
    /// queue's handle errors; `InvalidArgument` for a queue that is capturing (the frees would
    /// join the capture); the driver's first error (every block leaves the cache either way).
    pub fn queue_trim(&self, queue: Queue) -> Result<usize> {
        traced!("queue_trim", ["queue" = queue.0.0], {
            self.with_exclusive(|t| {
                let (d, raw) = self.queue_not_capturing(t, queue)?;
                let taken = t.cache.take_where(|b| b.device == d.slot && b.raw == raw);
                // SAFETY: blocks of this live queue, taken from the cache (exclusive access).
                unsafe { Self::give_back(t, &taken) }?;
                Ok(taken.iter().map(|b| b.size).sum())
            })
        })
    }

    /// Gives a live queue a new handle and makes the old one stale, exactly as after
    /// `queue_destroy`, while the backend's queue and the work on it stay as they are: no backend
    /// call, and a shared call (it waits for no other thread's call in flight). For pools that
    /// hand one queue to successive owners (MLIR's `mgpuStreamCreate`/`mgpuStreamDestroy`): the
    /// pool keeps the new handle, so a former owner's second destroy, or any use after its
    /// destroy, finds a stale handle instead of the next owner's queue. Of threads racing to
    /// reissue one handle one succeeds and the others get `InvalidHandle`. A default queue
    /// reissued stops being its device's default (`default_queue` makes another when next
    /// asked). `OutOfResources` (and nothing changes) once the queue's slot has named
    /// `MAX_GENERATION` objects.
    pub fn queue_reissue(&self, queue: Queue) -> Result<Queue> {
        traced!("queue_reissue", ["queue" = queue.0.0], { self.with_shared(|t| Ok(Queue(t.queues.reissue(queue.0)?))) })
    }

    /// Waits until all work on a queue has finished. `InvalidArgument` for a queue that is
    /// capturing (its work runs only when its graph is launched).
    pub fn queue_synchronize(&self, queue: Queue) -> Result<()> {
        traced!("queue_synchronize", ["queue" = queue.0.0], {
            self.with_shared(|t| {
                let (d, raw) = self.queue_not_capturing(t, queue)?;
                // SAFETY: a live queue of this device.
                let synced = unsafe { d.backend.queue_synchronize(d.ordinal, raw) };
                if t.comms.len() > 0 {
                    Self::comm_errors(t, d)?;
                }
                Ok(synced?)
            })
        })
    }

    /// Whether all work on a queue has finished. `InvalidArgument` for a queue that is capturing.
    pub fn queue_query(&self, queue: Queue) -> Result<bool> {
        traced!("queue_query", ["queue" = queue.0.0], {
            self.with_shared(|t| {
                let (d, raw) = self.queue_not_capturing(t, queue)?;
                // SAFETY: a live queue of this device.
                Ok(unsafe { d.backend.queue_query(d.ordinal, raw) }?)
            })
        })
    }

    /// A queue's device and backend value in one lookup (as `queue`), or `InvalidArgument` when
    /// it is capturing into a graph.
    pub(super) fn queue_not_capturing(&self, t: &Tables, queue: Queue) -> Result<(super::info::Dev, u64)> {
        let q = t.queues.get(queue.0)?;
        if q.capturing() {
            return fail(ErrorCode::InvalidArgument, CAPTURING);
        }
        Ok((self.dev_at(t, q.device), q.raw))
    }

    /// The device an event belongs to.
    pub fn event_device(&self, event: Event) -> Result<Device> {
        traced!("event_device", ["event" = event.0.0], {
            self.with_shared(|t| {
                let e = t.events.get(event.0)?;
                Ok(Device(t.devices.handle_at(e.device)))
            })
        })
    }

    /// The device a queue belongs to.
    pub fn queue_device(&self, queue: Queue) -> Result<Device> {
        traced!("queue_device", ["queue" = queue.0.0], {
            self.with_shared(|t| {
                let q = t.queues.get(queue.0)?;
                Ok(Device(t.devices.handle_at(q.device)))
            })
        })
    }

    /// Makes later work on `queue` wait until `event` has completed. The event may be of any
    /// device: of the queue's platform, the device waits (CUDA: `cuStreamWaitEvent`, across
    /// contexts too); of another platform, this call waits on the host until the event has
    /// completed (no device can wait for another platform's event), so the queue's later work,
    /// submitted after it returns, runs after the event's work. `InvalidArgument` for an event
    /// recorded during another queue's capture that has not ended (the wait would join that
    /// capture, or merge it with the queue's own).
    pub fn queue_wait_event(&self, queue: Queue, event: Event) -> Result<()> {
        traced!("queue_wait_event", ["queue" = queue.0.0, "event" = event.0.0], {
            self.with_shared(|t| {
                let qs = t.queues.resolve(queue.0)?;
                let entry = t.events.get(event.0)?;
                let (d, q) = (self.dev_at(t, t.queues.at(qs).device), t.queues.at(qs).raw);
                let (ed, e) = (self.dev_at(t, entry.device), entry.raw);
                let mark = entry.capture.load(Relaxed);
                if mark != 0 {
                    Self::wait_within_capture(mark, qs)?;
                }
                if t.devices.at(ed.slot).backend != t.devices.at(d.slot).backend {
                    // SAFETY: a live event of its device.
                    return Ok(unsafe { ed.backend.event_synchronize(ed.ordinal, e) }?);
                }
                // SAFETY: a live queue of this device and a live event of the same backend.
                Ok(unsafe { d.backend.queue_wait_event(d.ordinal, q, e) }?)
            })
        })
    }

    // ---- events ---------------------------------------------------------------------------

    /// Creates an event on a device.
    pub fn event_create(&self, device: Device) -> Result<Event> {
        traced!("event_create", ["device" = device.0.0], {
            self.with_exclusive(|t| {
                let d = self.dev(t, device)?;
                if t.events.is_full() {
                    return fail(ErrorCode::OutOfResources, "event table is full (ORDO_MAX_EVENTS)");
                }
                let raw = d.backend.event_create(d.ordinal)?;
                match t.events.insert(EventEntry::new(d.slot, raw)) {
                    Ok(h) => Ok(Event(h)),
                    Err(_) => {
                        // SAFETY: the event the backend just returned; never passed again.
                        let _ = unsafe { d.backend.event_destroy(d.ordinal, raw) };
                        fail(ErrorCode::OutOfResources, "event table is full (ORDO_MAX_EVENTS)")
                    }
                }
            })
        })
    }

    /// Destroys an event.
    pub fn event_destroy(&self, event: Event) -> Result<()> {
        traced!("event_destroy", ["event" = event.0.0], {
            self.settle_backends();
            self.with_exclusive(|t| {
                let (d, raw) = self.event(t, event)?;
                t.events.remove(event.0)?;
                // SAFETY: a live event of this device, removed from the table so never passed again.
                Ok(unsafe { d.backend.event_destroy(d.ordinal, raw) }?)
            })
        })
    }

    /// Gives a live event a new handle and makes the old one stale, exactly as after
    /// `event_destroy`, while the backend's event and its last record stay as they are: the
    /// event counterpart of `queue_reissue` (MLIR's `mgpuEventDestroy` pools events this way),
    /// with the same guarantees.
    pub fn event_reissue(&self, event: Event) -> Result<Event> {
        traced!("event_reissue", ["event" = event.0.0], { self.with_shared(|t| Ok(Event(t.events.reissue(event.0)?))) })
    }

    /// Records an event on a queue of the same device.
    pub fn event_record(&self, event: Event, queue: Queue) -> Result<()> {
        traced!("event_record", ["event" = event.0.0, "queue" = queue.0.0], {
            self.with_shared(|t| {
                let entry = t.events.get(event.0)?;
                let qs = t.queues.resolve(queue.0)?;
                if entry.device != t.queues.at(qs).device {
                    return fail(ErrorCode::InvalidArgument, "event and queue belong to different devices");
                }
                let d = self.dev_at(t, entry.device);
                // SAFETY: a live event and a live queue of this device.
                unsafe { d.backend.event_record(d.ordinal, entry.raw, t.queues.at(qs).raw) }?;
                entry.capture.store(Self::capture_mark(t, qs), Relaxed);
                Ok(())
            })
        })
    }

    /// Waits until an event has completed (an event never recorded counts as completed).
    /// `InvalidArgument` for an event recorded during a capture that has not ended.
    pub fn event_synchronize(&self, event: Event) -> Result<()> {
        traced!("event_synchronize", ["event" = event.0.0], {
            self.with_shared(|t| {
                let entry = t.events.get(event.0)?;
                Self::not_captured(entry)?;
                let d = self.dev_at(t, entry.device);
                // SAFETY: a live event of this device.
                Ok(unsafe { d.backend.event_synchronize(d.ordinal, entry.raw) }?)
            })
        })
    }

    /// Whether an event has completed. `InvalidArgument` for an event recorded during a capture
    /// that has not ended.
    pub fn event_query(&self, event: Event) -> Result<bool> {
        traced!("event_query", ["event" = event.0.0], {
            self.with_shared(|t| {
                let entry = t.events.get(event.0)?;
                Self::not_captured(entry)?;
                let d = self.dev_at(t, entry.device);
                // SAFETY: a live event of this device.
                Ok(unsafe { d.backend.event_query(d.ordinal, entry.raw) }?)
            })
        })
    }

    /// Milliseconds between two completed events of the same device. `InvalidArgument` for an
    /// event recorded during a capture that has not ended.
    pub fn event_elapsed_ms(&self, start: Event, end: Event) -> Result<f32> {
        traced!("event_elapsed_ms", ["start" = start.0.0, "end" = end.0.0], {
            self.with_shared(|t| {
                let (s, e) = (t.events.get(start.0)?, t.events.get(end.0)?);
                Self::not_captured(s)?;
                Self::not_captured(e)?;
                if s.device != e.device {
                    return fail(ErrorCode::InvalidArgument, "events belong to different devices");
                }
                let d = self.dev_at(t, s.device);
                // SAFETY: two live events of this device.
                Ok(unsafe { d.backend.event_elapsed_ms(d.ordinal, s.raw, e.raw) }?)
            })
        })
    }
}
