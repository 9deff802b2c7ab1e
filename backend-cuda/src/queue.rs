//! Queues (blocking streams: the legacy default stream, which calls without a queue use, waits
//! for them) and events (with timing). Functions taking a raw stream or event are `unsafe`: the
//! value must be live in the current context (the runtime validated it).

use cudarc::driver::sys::{self, CUevent, CUresult, CUstream};
use ordo_core::BackendResult;

use crate::conv::{check, check_release};

/// `CU_STREAM_DEFAULT`: a blocking stream, synchronised with the legacy default stream.
const CU_STREAM_BLOCKING: u32 = 0;
const CU_EVENT_DEFAULT: u32 = 0;

pub(crate) fn stream(raw: u64) -> CUstream {
    raw as usize as CUstream
}

pub(crate) fn event(raw: u64) -> CUevent {
    raw as usize as CUevent
}

pub(crate) fn queue_create(independent: bool) -> BackendResult<u64> {
    let mut s: CUstream = std::ptr::null_mut();
    let flags = if independent { sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32 } else { CU_STREAM_BLOCKING };
    // SAFETY: valid out-pointer; the device's context is current.
    check("cuStreamCreate", unsafe { sys::cuStreamCreate(&mut s, flags) })?;
    Ok(s as u64)
}

/// # Safety
/// Live stream/event values of the current context.
pub(crate) unsafe fn queue_destroy(raw: u64) -> BackendResult<()> {
    // SAFETY: a live stream (validated by the runtime).
    check_release("cuStreamDestroy_v2", unsafe { sys::cuStreamDestroy_v2(stream(raw)) })
}

/// # Safety
/// Live stream/event values of the current context.
pub(crate) unsafe fn queue_synchronize(raw: u64) -> BackendResult<()> {
    // SAFETY: a live stream.
    check_release("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(stream(raw)) })
}

/// Whether a stream or event has finished (`CUDA_ERROR_NOT_READY` means not yet).
fn ready(call: &'static str, r: CUresult) -> BackendResult<bool> {
    if r == CUresult::CUDA_ERROR_NOT_READY { Ok(false) } else { check(call, r).map(|()| true) }
}

/// # Safety
/// Live stream/event values of the current context.
pub(crate) unsafe fn queue_query(raw: u64) -> BackendResult<bool> {
    // SAFETY: a live stream.
    ready("cuStreamQuery", unsafe { sys::cuStreamQuery(stream(raw)) })
}

/// # Safety
/// Live stream/event values of the current context.
pub(crate) unsafe fn queue_wait_event(queue: u64, ev: u64) -> BackendResult<()> {
    debug_assert!(queue != 0 && ev != 0, "queue_wait_event: a null stream or event");
    // SAFETY: a live stream and a live event.
    check("cuStreamWaitEvent", unsafe { sys::cuStreamWaitEvent(stream(queue), event(ev), 0) })
}

pub(crate) fn event_create() -> BackendResult<u64> {
    let mut e: CUevent = std::ptr::null_mut();
    // SAFETY: valid out-pointer; the device's context is current.
    check("cuEventCreate", unsafe { sys::cuEventCreate(&mut e, CU_EVENT_DEFAULT) })?;
    Ok(e as u64)
}

/// # Safety
/// Live stream/event values of the current context.
pub(crate) unsafe fn event_destroy(raw: u64) -> BackendResult<()> {
    debug_assert!(raw != 0, "event_destroy: a null event");
    // SAFETY: a live event.
    check_release("cuEventDestroy_v2", unsafe { sys::cuEventDestroy_v2(event(raw)) })
}

/// # Safety
/// Live stream/event values of the current context.
pub(crate) unsafe fn event_record(ev: u64, queue: u64) -> BackendResult<()> {
    debug_assert!(queue != 0 && ev != 0, "event_record: a null stream or event");
    // SAFETY: a live event and stream of the same device.
    check("cuEventRecord", unsafe { sys::cuEventRecord(event(ev), stream(queue)) })
}

/// # Safety
/// Live stream/event values of the current context.
pub(crate) unsafe fn event_synchronize(raw: u64) -> BackendResult<()> {
    debug_assert!(raw != 0, "event_synchronize: a null event");
    // SAFETY: a live event.
    check("cuEventSynchronize", unsafe { sys::cuEventSynchronize(event(raw)) })
}

/// # Safety
/// Live stream/event values of the current context.
pub(crate) unsafe fn event_query(raw: u64) -> BackendResult<bool> {
    debug_assert!(raw != 0, "event_query: a null event");
    // SAFETY: a live event.
    ready("cuEventQuery", unsafe { sys::cuEventQuery(event(raw)) })
}

/// # Safety
/// Live stream/event values of the current context.
pub(crate) unsafe fn event_elapsed_ms(start: u64, end: u64) -> BackendResult<f32> {
    debug_assert!(start != 0 && end != 0, "event_elapsed_ms: a null event");
    let mut ms = 0f32;
    // SAFETY: valid out-pointer and live events.
    check("cuEventElapsedTime_v2", unsafe { sys::cuEventElapsedTime_v2(&mut ms, event(start), event(end)) })?;
    Ok(ms)
}

/// A host function as the driver runs it (`trampoline`'s argument).
struct HostCall {
    f: ordo_core::HostFn,
    data: *mut std::ffi::c_void,
    /// Enqueued outside a capture: runs once, and frees itself. Captured into a graph: runs at
    /// each of the graph's launches, kept until the backend's deinit (`forget_host_calls`).
    once: bool,
}

/// Host functions captured into graphs (their `HostCall`s, as addresses), freed at deinit.
static CAPTURED_CALLS: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

std::thread_local! {
    /// Set while this thread runs a host function for the driver (`cuLaunchHostFunc`'s rule: it
    /// may make no CUDA call); `Devices::make_current` refuses with `Busy` meanwhile.
    static IN_HOST_FUNCTION: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is running a host function for the driver.
pub(crate) fn in_host_function() -> bool {
    IN_HOST_FUNCTION.with(std::cell::Cell::get)
}

/// What the driver calls: the user's function as a callback of the runtime (calls it makes into
/// ordo that reach the driver answer `Busy`, as the driver forbids them, instead of hanging).
unsafe extern "C" fn trampoline(call: *mut std::ffi::c_void) {
    let call = call.cast::<HostCall>();
    // SAFETY: a `HostCall` that `host_function` leaked for this call, alive until freed below
    // (once) or at deinit (captured).
    let HostCall { f, data, once } = unsafe { std::ptr::read(call) };
    IN_HOST_FUNCTION.with(|c| c.set(true));
    // A thread may be waiting for this function inside a driver call it makes in a call in
    // flight (a synchronise, a free), so the function's own calls into ordo that meet a
    // create/destroy call (which waits for that call in flight) answer `Busy` instead of waiting.
    // SAFETY: `host_function`'s contract: `f(data)` is sound to call from any thread.
    ordo_core::host::waiting_for_callbacks(|| ordo_core::host::run_as_callback(|| unsafe { f(data) }));
    IN_HOST_FUNCTION.with(|c| c.set(false));
    if once {
        // SAFETY: leaked by `host_function` for this one call, which has now run.
        drop(unsafe { Box::from_raw(call) });
    }
}

/// `cuLaunchHostFunc`: `f(data)` runs on a driver thread in stream order, marked as a callback
/// (see `trampoline`).
///
/// # Safety
/// `queue` is a live stream of the current context; `f(data)` is sound to call from any thread
/// (once, or at each launch of a graph that captured it).
pub(crate) unsafe fn host_function(queue: u64, f: ordo_core::HostFn, data: *mut std::ffi::c_void) -> BackendResult<()> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: a live stream; a valid out-pointer.
    check("cuStreamIsCapturing", unsafe { sys::cuStreamIsCapturing(stream(queue), &mut status) })?;
    let once = status == sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let call = Box::into_raw(Box::new(HostCall { f, data, once }));
    // SAFETY: the caller's stream; `trampoline` and its argument live as long as the driver may
    // call them (see `HostCall::once`).
    let r = check("cuLaunchHostFunc", unsafe { sys::cuLaunchHostFunc(stream(queue), Some(trampoline), call.cast()) });
    match (&r, once) {
        // SAFETY: the driver refused it: never called.
        (Err(_), _) => drop(unsafe { Box::from_raw(call) }),
        (Ok(()), false) => CAPTURED_CALLS.lock().unwrap_or_else(|p| p.into_inner()).push(call as usize),
        (Ok(()), true) => {}
    }
    r
}

/// Frees the host functions captured into graphs (at deinit: the graphs went with the contexts).
pub(crate) fn forget_host_calls() {
    for call in std::mem::take(&mut *CAPTURED_CALLS.lock().unwrap_or_else(|p| p.into_inner())) {
        // SAFETY: leaked by `host_function` for a capture; its graphs were destroyed by now.
        drop(unsafe { Box::from_raw(call as *mut HostCall) });
    }
}
