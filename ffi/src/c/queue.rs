//! Queues (in order), events, and graphs captured from queues.

use ordo_core::{Device, Event, Graph, Queue};

use crate::boundary::{guard, produce, status};
use crate::c::types::*;
use ordo::runtime;

fn q(h: ordo_queue_t) -> Queue {
    Queue::from_raw(h.raw)
}

fn e(h: ordo_event_t) -> Event {
    Event::from_raw(h.raw)
}

/// Creates an in-order queue on a device.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_queue_create(device: ordo_device_t, out: *mut ordo_queue_t) -> ordo_status_t {
    produce(out, "out is NULL", || {
        runtime().queue_create(Device::from_raw(device.raw)).map(|h| ordo_queue_t { raw: h.to_raw() })
    })
}

/// Destroys a queue (its enqueued work still completes).
#[unsafe(no_mangle)]
pub extern "C" fn ordo_queue_destroy(queue: ordo_queue_t) -> ordo_status_t {
    guard(|| status(runtime().queue_destroy(q(queue))))
}

/// Waits until all work on the queue has finished.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_queue_synchronize(queue: ordo_queue_t) -> ordo_status_t {
    guard(|| status(runtime().queue_synchronize(q(queue))))
}

/// `*done` = 1 when all work on the queue has finished, else 0.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_queue_query(queue: ordo_queue_t, done: *mut i32) -> ordo_status_t {
    produce(done, "done is NULL", || runtime().queue_query(q(queue)).map(i32::from))
}

/// Makes later work on `queue` wait for `event`, an event of any device: of the queue's
/// platform, the device waits (CUDA: across devices too); of another platform, this call waits
/// on the host until the event has completed. `ORDO_ERROR_INVALID_ARGUMENT` for an event recorded
/// during another queue's capture that has not ended (the wait would join or merge captures),
/// and for one whose latest record was captured by a capture that ended (until it is recorded
/// again outside a capture).
#[unsafe(no_mangle)]
pub extern "C" fn ordo_queue_wait_event(queue: ordo_queue_t, event: ordo_event_t) -> ordo_status_t {
    guard(|| status(runtime().queue_wait_event(q(queue), e(event))))
}

/// Creates an event on a device.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_event_create(device: ordo_device_t, out: *mut ordo_event_t) -> ordo_status_t {
    produce(out, "out is NULL", || {
        runtime().event_create(Device::from_raw(device.raw)).map(|h| ordo_event_t { raw: h.to_raw() })
    })
}

/// Destroys an event.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_event_destroy(event: ordo_event_t) -> ordo_status_t {
    guard(|| status(runtime().event_destroy(e(event))))
}

/// Records an event on a queue of the same device.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_event_record(event: ordo_event_t, queue: ordo_queue_t) -> ordo_status_t {
    guard(|| status(runtime().event_record(e(event), q(queue))))
}

/// Waits until the event has completed. `ORDO_ERROR_INVALID_ARGUMENT` for an event whose latest
/// record was captured (during a capture, and after it ended: the record is part of the graph
/// and never runs on its own; record the event again outside a capture).
#[unsafe(no_mangle)]
pub extern "C" fn ordo_event_synchronize(event: ordo_event_t) -> ordo_status_t {
    guard(|| status(runtime().event_synchronize(e(event))))
}

/// `*done` = 1 when the event has completed, else 0. `ORDO_ERROR_INVALID_ARGUMENT` for an event
/// whose latest record was captured (during a capture, and after it ended, until it is recorded
/// again outside a capture).
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_event_query(event: ordo_event_t, done: *mut i32) -> ordo_status_t {
    produce(done, "done is NULL", || runtime().event_query(e(event)).map(i32::from))
}

/// `*ms` = milliseconds between two completed events of one device. `ORDO_ERROR_INVALID_ARGUMENT`
/// for an event whose latest record was captured (during a capture, and after it ended, until it
/// is recorded again outside a capture).
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_event_elapsed_ms(start: ordo_event_t, end: ordo_event_t, ms: *mut f32) -> ordo_status_t {
    produce(ms, "ms is NULL", || runtime().event_elapsed_ms(e(start), e(end)))
}

/// Enqueues `f(data)` on a queue: it runs on the host after all work submitted to the queue
/// before it, and work submitted after it waits until it returns (CUDA: on a driver thread; the
/// host platform: on the queue's thread, or without std at the queue's next execution point,
/// such as its synchronise). `f` runs as a callback: an ordo call from it works or answers
/// `ORDO_ERROR_BUSY`, never hangs; on CUDA every ordo call from it that would reach the driver
/// (which forbids CUDA calls in host functions) is `ORDO_ERROR_BUSY`. `f` must not call the
/// CUDA driver itself.
/// `ORDO_ERROR_NULL_POINTER` for a NULL `f`; `ORDO_ERROR_UNSUPPORTED` on AMDGPU.
///
/// # Safety
/// `f(data)` must be sound to call once from any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_queue_host_function(
    queue: ordo_queue_t,
    f: ordo_host_fn_t,
    data: *mut core::ffi::c_void,
) -> ordo_status_t {
    guard(|| {
        let Some(f) = f else {
            return crate::boundary::fail(ordo_core::Error::new(ordo_core::ErrorCode::NullPointer, "function is NULL"));
        };
        // SAFETY: forwarded contract.
        status(unsafe { runtime().queue_host_function(q(queue), f, data) })
    })
}

/// `*out` = the driver's own handle of a queue (CUDA: its `CUstream`), for interoperation: work
/// put on it directly is ordered with the queue's. It stays valid while the queue lives.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_queue_native(queue: ordo_queue_t, out: *mut *mut core::ffi::c_void) -> ordo_status_t {
    crate::boundary::produce(out, "out is NULL", || {
        runtime().queue_native(q(queue)).map(|raw| raw as usize as *mut core::ffi::c_void)
    })
}

/// Starts capturing the queue's work into a graph: launches, copies, fills, host functions,
/// event records and waits submitted to it from now on are recorded, not run, until
/// `ordo_queue_end_capture`. Meanwhile the queue cannot be synchronised, queried or destroyed,
/// and calls without a queue on its device (synchronous copies and fills, frees) are refused,
/// each with `ORDO_ERROR_INVALID_ARGUMENT`. `ORDO_ERROR_INVALID_ARGUMENT` when the queue is
/// capturing already (captures do not nest); `ORDO_ERROR_UNSUPPORTED` on platforms without
/// graphs (AMDGPU in this version); on the host device, event records and waits on a capturing
/// queue are `ORDO_ERROR_UNSUPPORTED`.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_queue_begin_capture(queue: ordo_queue_t) -> ordo_status_t {
    guard(|| status(runtime().queue_begin_capture(q(queue))))
}

/// Gives back to the driver, in the queue's order, the blocks of queue-ordered memory that the
/// cache keeps for this queue: `ordo_mem_free_async` on a queue keeps a block (up to
/// `ORDO_CACHE_BYTES`, 256 MiB by default; `ORDO_CACHE_BYTES=0` turns the cache off) for the
/// queue's next `ordo_mem_alloc_async` of the same size; `ordo_queue_destroy` gives them back
/// too. `*released` (when not NULL) gets the bytes given back. The queue's handle errors;
/// `ORDO_ERROR_INVALID_ARGUMENT` for a queue that is capturing; the driver's first error (every
/// block leaves the cache either way).
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_queue_trim(queue: ordo_queue_t, released: *mut usize) -> ordo_status_t {
    guard(|| match runtime().queue_trim(q(queue)) {
        Ok(bytes) => {
            if !released.is_null() {
                // SAFETY: non-NULL, valid for a write by the caller's contract.
                unsafe { released.write(bytes) };
            }
            ORDO_SUCCESS
        }
        Err(e) => status(Err(e)),
    })
}

/// `*out` = what the cache of queue-ordered memory holds for the device now and has served
/// since the runtime's init (see `ordo_queue_trim`). `ORDO_ERROR_NULL_POINTER` for a NULL
/// `out`, then the device's handle errors.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_device_cache_stats(device: ordo_device_t, out: *mut ordo_cache_stats_t) -> ordo_status_t {
    produce(out, "out is NULL", || {
        runtime().cache_stats(Device::from_raw(device.raw)).map(|s| ordo_cache_stats_t {
            bytes: s.bytes,
            hits: s.hits,
            misses: s.misses,
            blocks: s.blocks,
        })
    })
}

/// Whether the queue is capturing into a graph: `*out` is 1 between `ordo_queue_begin_capture`
/// and `ordo_queue_end_capture`, else 0. Answers during a capture too (it is no call the
/// capture refuses), so a library handed a queue can tell before it synchronises it.
/// `ORDO_ERROR_NULL_POINTER` for a NULL `out`, then the queue's handle errors.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_queue_is_capturing(queue: ordo_queue_t, out: *mut u32) -> ordo_status_t {
    produce(out, "out is NULL", || runtime().queue_is_capturing(q(queue)).map(u32::from))
}

/// Ends the queue's capture; `*out` gets the captured work as a graph of the queue's device
/// (nothing of it has run). The queue stops capturing whatever this returns. The graph holds a
/// reference to each program its kernels belong to: `ordo_program_unload` by their loader leaves
/// them loaded until `ordo_graph_destroy` (which unloads a program whose last reference the
/// graph held). `ORDO_ERROR_INVALID_ARGUMENT` when the queue is not capturing; the driver's error for a
/// capture it invalidated; `ORDO_ERROR_OUT_OF_RESOURCES` when the graph table is full.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_queue_end_capture(queue: ordo_queue_t, out: *mut ordo_graph_t) -> ordo_status_t {
    produce(out, "out is NULL", || runtime().queue_end_capture(q(queue)).map(|g| ordo_graph_t { raw: g.to_raw() }))
}

/// Launches a graph on a queue of its device, asynchronously: its work runs in the captured
/// order after the queue's earlier work. `ORDO_ERROR_INVALID_ARGUMENT` for a queue of another
/// device, a queue that is capturing (nothing is added to its capture, which goes on), or a
/// graph whose kernels' program was unloaded since the capture.
///
/// # Safety
/// The kernels, memory and host functions the captured work used are live, as for the calls
/// that were captured (the graph keeps their addresses and arguments).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_graph_launch(graph: ordo_graph_t, queue: ordo_queue_t) -> ordo_status_t {
    // SAFETY: the C caller's contract (the captured work's memory and kernels are live).
    guard(|| status(unsafe { runtime().graph_launch(Graph::from_raw(graph.raw), q(queue)) }))
}

/// Destroys a graph (launches already submitted still run); the handle is stale afterwards. The
/// program references it held are given back (a program whose last reference it was is
/// unloaded; its unload's failure, if any, is this call's error, the graph destroyed all the
/// same).
#[unsafe(no_mangle)]
pub extern "C" fn ordo_graph_destroy(graph: ordo_graph_t) -> ordo_status_t {
    guard(|| status(runtime().graph_destroy(Graph::from_raw(graph.raw))))
}
