//! Streams and events: per-device pools of idle ones (`mgpuStreamCreate`/`Destroy` and
//! `mgpuEventCreate`/`Destroy` reuse them), the stream that stands for a null stream, and the
//! stream and event entry points.

use super::*;

/// Idle objects by device handle (raw). Handles are never reused, so the entry of a live
/// device holds only objects of the current runtime; entries of devices from before a teardown
/// (whose objects went with it) are dropped when a new device's entry is added. An object enters
/// the pool under a new handle (`Runtime::queue_reissue`/`event_reissue`), so the handle its
/// former owner holds is stale: a second destroy, or a use after the destroy, never reaches the
/// object's next owner.
pub(super) struct DevicePool<T>(Mutex<Vec<(u64, Vec<T>)>>);

impl<T: Copy + PartialEq> DevicePool<T> {
    const fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    /// Takes an idle object of the live device `d`. No runtime call: `d` was just found live.
    fn take(&self, d: Device) -> Option<T> {
        let mut pool = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let items = &mut pool.iter_mut().find(|(dev, _)| *dev == d.to_raw())?.1;
        items.pop()
    }

    /// Gives an object of `d` back (once: one given back twice is pooled once).
    fn give(&self, d: Device, item: T) {
        let mut pool = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match pool.iter_mut().find(|(dev, _)| *dev == d.to_raw()) {
            Some((_, items)) if items.contains(&item) => {}
            Some((_, items)) => items.push(item),
            None => {
                let rt = runtime();
                pool.retain(|(dev, _)| rt.device_platform(Device::from_raw(*dev)).is_ok());
                pool.push((d.to_raw(), vec![item]));
            }
        }
    }

    /// `mgpu*Create`: an idle object of the calling thread's default device, or a new one from
    /// `make` (null after one line on stderr naming the driver call `what`).
    fn take_or_make(
        &self,
        what: &str,
        make: impl FnOnce(Device) -> ordo_core::Result<T>,
        raw: fn(T) -> u64,
    ) -> *mut c_void {
        let Some(d) = device() else { return core::ptr::null_mut() };
        match self.take(d) {
            Some(item) => to_ptr(raw(item)),
            None => created(what, make(d).map(raw)),
        }
    }

    /// `mgpu*Destroy`: the object goes back to its device's pool under the new handle `reissue`
    /// gives it; a stale one is ignored.
    fn give_back(
        &self,
        item: T,
        device_of: impl FnOnce(T) -> ordo_core::Result<Device>,
        reissue: impl FnOnce(T) -> ordo_core::Result<T>,
    ) {
        let Ok(d) = device_of(item) else { return };
        if let Ok(fresh) = reissue(item) {
            self.give(d, fresh);
        }
    }
}

/// Idle streams (independent queues).
pub(super) static STREAMS: DevicePool<Queue> = DevicePool::new();

/// Idle events: `mgpuEventDestroy` right after `mgpuStreamWaitEvent` (what the lowering emits)
/// is safe to pool, because a wait captures the event's last record when it is enqueued.
pub(super) static EVENTS: DevicePool<Event> = DevicePool::new();

/// The queue a launch or copy runs on: the stream's own, or for a null stream the default
/// device's shared one (`None` after one line on stderr when it cannot be made).
#[inline(always)]
pub(super) fn stream_or_null(stream: *mut c_void) -> Option<Queue> {
    if !stream.is_null() {
        return Some(Queue::from_raw(from_ptr(stream)));
    }
    null_stream()
}

/// The default device's shared stream for calls with a null stream: the runtime's default queue
/// of the device (one per device, made by the first call, race-free).
#[inline(never)]
pub(super) fn null_stream() -> Option<Queue> {
    let d = device()?;
    runtime().default_queue(d).map_err(|e| report("cuStreamCreate", &e)).ok()
}

/// `mgpuStreamCreate() -> ptr`: a stream of the default device, from the pool when one is idle.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuStreamCreate() -> *mut c_void {
    contain_or(core::ptr::null_mut(), || {
        STREAMS.take_or_make("cuStreamCreate", |d| runtime().queue_create_independent(d), Queue::to_raw)
    })
}

/// `mgpuStreamDestroy(ptr)`: the stream goes back to its device's pool under a new handle (its
/// queued work keeps running, as after `cuStreamDestroy`); the pointer the caller had is stale
/// from then on. A stale stream (destroyed twice, say) is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuStreamDestroy(stream: *mut c_void) {
    contain_or((), || {
        STREAMS.give_back(
            Queue::from_raw(from_ptr(stream)),
            |q| runtime().queue_device(q),
            |q| runtime().queue_reissue(q),
        )
    })
}

/// `mgpuStreamSynchronize(ptr)`.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuStreamSynchronize(stream: *mut c_void) {
    contain_or((), || {
        let Some(q) = stream_or_null(stream) else { return };
        if let Err(e) = runtime().queue_synchronize(q) {
            report("cuStreamSynchronize", &e);
        }
    })
}

/// `mgpuStreamWaitEvent(ptr stream, ptr event)`.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuStreamWaitEvent(stream: *mut c_void, event: *mut c_void) {
    contain_or((), || {
        let Some(q) = stream_or_null(stream) else { return };
        if let Err(e) = runtime().queue_wait_event(q, Event::from_raw(from_ptr(event))) {
            report("cuStreamWaitEvent", &e);
        }
    })
}

// ---- events -----------------------------------------------------------------------------------

/// `mgpuEventCreate() -> ptr`: an event of the default device, from the pool when one is idle.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuEventCreate() -> *mut c_void {
    contain_or(core::ptr::null_mut(), || {
        EVENTS.take_or_make("cuEventCreate", |d| runtime().event_create(d), Event::to_raw)
    })
}

/// `mgpuEventDestroy(ptr)`: the event goes back to its device's pool under a new handle; the
/// pointer the caller had is stale from then on. A stale event is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuEventDestroy(event: *mut c_void) {
    contain_or((), || {
        EVENTS.give_back(
            Event::from_raw(from_ptr(event)),
            |e| runtime().event_device(e),
            |e| runtime().event_reissue(e),
        )
    })
}

/// `mgpuEventSynchronize(ptr)`.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuEventSynchronize(event: *mut c_void) {
    contain_or((), || {
        if let Err(e) = runtime().event_synchronize(Event::from_raw(from_ptr(event))) {
            report("cuEventSynchronize", &e);
        }
    })
}

/// `mgpuEventRecord(ptr event, ptr stream)`.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuEventRecord(event: *mut c_void, stream: *mut c_void) {
    contain_or((), || {
        let Some(q) = stream_or_null(stream) else { return };
        if let Err(e) = runtime().event_record(Event::from_raw(from_ptr(event)), q) {
            report("cuEventRecord", &e);
        }
    })
}
