//! Memory: allocation, free, copies and fills. Device memory is a `void*` (its address).

use core::ffi::c_void;

use ordo_core::{Allocation, CopyKind, Device, DevicePtr, Error, ErrorCode, FillValue, MemKind, Queue};

use crate::boundary::{fail, guard, non_null, output, ready, status};
use crate::c::types::*;
use ordo::runtime;

fn queue_or_none(q: ordo_queue_t) -> Option<Queue> {
    (q.raw != 0).then_some(Queue::from_raw(q.raw))
}

/// Allocates `size` bytes of `kind` (`ORDO_MEM_*`) memory on a device; `*out` gets its address.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_mem_alloc(
    device: ordo_device_t,
    kind: ordo_mem_kind_t,
    size: usize,
    out: *mut *mut c_void,
) -> ordo_status_t {
    guard(|| {
        let kind = match non_null(out, "out is NULL").and_then(|()| ready()).and_then(|()| MemKind::try_from(kind)) {
            Ok(k) => k,
            Err(e) => return fail(e),
        };
        output(out, runtime().mem_alloc(Device::from_raw(device.raw), kind, size).map(|p| p.as_ptr()))
    })
}

/// Allocates as `ordo_mem_alloc` does; `*out_allocation` gets the allocation's handle and `*out`
/// its address (both written only on success; neither may be NULL). Release it with
/// `ordo_mem_release(allocation)`: unlike `ordo_mem_free(address)`, a handle names this
/// allocation only, so releasing it twice, after `ordo_shutdown`, or after the address was freed
/// and handed to a new allocation is `ORDO_ERROR_INVALID_HANDLE` and frees nothing. The address
/// is still an ordinary device address (copies, fills, kernels, and `ordo_mem_free` accept it).
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_mem_alloc_handle(
    device: ordo_device_t,
    kind: ordo_mem_kind_t,
    size: usize,
    out_allocation: *mut ordo_allocation_t,
    out: *mut *mut c_void,
) -> ordo_status_t {
    guard(|| {
        let checked = non_null(out_allocation, "out_allocation is NULL")
            .and_then(|()| non_null(out, "out is NULL"))
            .and_then(|()| ready())
            .and_then(|()| MemKind::try_from(kind));
        let kind = match checked {
            Ok(k) => k,
            Err(e) => return fail(e),
        };
        match runtime().mem_allocate(Device::from_raw(device.raw), kind, size) {
            Ok((allocation, ptr)) => {
                // SAFETY: both checked for NULL above; C guarantees they are writable.
                unsafe {
                    out_allocation.write(ordo_allocation_t { raw: allocation.to_raw() });
                    out.write(ptr.as_ptr());
                }
                ORDO_SUCCESS
            }
            Err(e) => fail(e),
        }
    })
}

/// Frees the allocation a handle from `ordo_mem_alloc_handle` names. `ORDO_ERROR_NULL_HANDLE`
/// for the null handle; `ORDO_ERROR_INVALID_HANDLE` when it was released or freed already (by
/// handle, by address or by the final `ordo_shutdown`), or comes from another runtime; nothing
/// changes on error.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_mem_release(allocation: ordo_allocation_t) -> ordo_status_t {
    guard(|| status(runtime().mem_release(Allocation::from_raw(allocation.raw))))
}

/// Allocates `size` bytes of device memory in the order of `queue` (`ORDO_MEM_ORDERED`): work
/// submitted to `queue` after this call may use it, other queues after waiting for an event
/// recorded after it; `*out` gets its address. CUDA takes it from the device's memory pool
/// (`cuMemAllocAsync`; the pool keeps freed memory up to `ORDO_POOL_RELEASE_THRESHOLD` bytes,
/// by default all of it), without waiting for other threads' calls in flight, up to
/// `ORDO_MAX_ORDERED_ALLOCATIONS` live at once; the host device and AMDGPU allocate at once. It
/// is an allocation like any other (copies, fills, kernels, `ordo_mem_info`; `ordo_mem_free`
/// frees it after the device's work; the final `ordo_shutdown` frees it).
/// `ORDO_ERROR_NULL_POINTER` for a NULL `out`, `ORDO_ERROR_INVALID_SIZE` for 0, the queue's
/// handle errors, `ORDO_ERROR_INVALID_ARGUMENT` for a queue that is capturing,
/// `ORDO_ERROR_OUT_OF_RESOURCES` when the table is full.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_mem_alloc_async(
    queue: ordo_queue_t,
    size: usize,
    out: *mut *mut c_void,
) -> ordo_status_t {
    guard(|| {
        if let Err(e) = non_null(out, "out is NULL").and_then(|()| ready()) {
            return fail(e);
        }
        output(out, runtime().mem_alloc_on(Queue::from_raw(queue.raw), size).map(|(_, p)| p.as_ptr()))
    })
}

/// Frees memory from `ordo_mem_alloc_async` (its start) in the order of `queue`, a queue of its
/// device: work submitted to `queue` before this call may still use it; from this call on the
/// address is unknown to ordo (a copy, fill or free naming it is `ORDO_ERROR_NOT_FOUND`).
/// `ORDO_ERROR_NULL_POINTER` for NULL, `ORDO_ERROR_NOT_FOUND` for an address inside no live
/// allocation (never allocated, or freed already), `ORDO_ERROR_INVALID_ARGUMENT` for an address
/// inside a live allocation that is not its start, for memory that is not queue-ordered
/// (`ordo_mem_free` frees it), a queue of another device or a queue that is capturing, then the
/// queue's handle errors; nothing changes on error. On CUDA it waits for no other thread's call
/// in flight. The freed block is kept for `queue` by the cache of queue-ordered memory (within
/// `ORDO_CACHE_BYTES`, 256 MiB by default; 0 turns the cache off) and given to the queue's next
/// `ordo_mem_alloc_async` of the same size without a driver call (the same address: safe, as the
/// queue runs the old work first); `ordo_queue_trim`, `ordo_queue_destroy` and the final
/// `ordo_shutdown` give it back to the driver.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_mem_free_async(queue: ordo_queue_t, ptr: *mut c_void) -> ordo_status_t {
    guard(|| status(runtime().mem_free_on(Queue::from_raw(queue.raw), DevicePtr(ptr as u64))))
}

/// Describes the memory ordo knows at `ptr` (any address inside an allocation, registered host
/// memory or a program's global variable): each non-NULL output gets the range's start
/// (`base`), its size in bytes (`size`), its kind (`kind`, an `ORDO_MEM_*` value) and its device
/// (`device`). Any output may be NULL. `ORDO_ERROR_NULL_POINTER` for a NULL `ptr`,
/// `ORDO_ERROR_NOT_FOUND` for an address inside nothing ordo knows (never allocated, freed,
/// unregistered, or its program unloaded), `ORDO_ERROR_UNINITIALIZED` before `ordo_init`;
/// nothing is written on error.
///
/// # Safety
/// Each output must be NULL or valid for one write of its type, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_mem_info(
    ptr: *const c_void,
    base: *mut *mut c_void,
    size: *mut usize,
    kind: *mut ordo_mem_kind_t,
    device: *mut ordo_device_t,
) -> ordo_status_t {
    guard(|| {
        if let Err(e) = non_null(ptr, "ptr is NULL").and_then(|()| ready()) {
            return fail(e);
        }
        match runtime().mem_info(DevicePtr(ptr as u64)) {
            Ok((b, n, k, d)) => {
                // SAFETY: each output is NULL (skipped) or writable (the caller's contract).
                unsafe {
                    if !base.is_null() {
                        base.write(b.as_ptr());
                    }
                    if !size.is_null() {
                        size.write(n);
                    }
                    if !kind.is_null() {
                        kind.write(k as ordo_mem_kind_t);
                    }
                    if !device.is_null() {
                        device.write(ordo_device_t { raw: d.to_raw() });
                    }
                }
                ORDO_SUCCESS
            }
            Err(e) => fail(e),
        }
    })
}

/// Registers `size` bytes of existing host memory at `ptr` with a device: page-locked and
/// mapped for it at the same address, and named by that address like an allocation (copies,
/// fills and kernels may use it; `ordo_mem_info` reports `ORDO_MEM_REGISTERED`) until
/// `ordo_host_unregister(ptr)` or the final `ordo_shutdown` ends it (`ordo_mem_free` refuses it).
/// `ORDO_ERROR_NULL_POINTER` for a NULL `ptr`, `ORDO_ERROR_INVALID_SIZE` for 0,
/// `ORDO_ERROR_INVALID_ARGUMENT` when the range overlaps memory ordo knows, and
/// `ORDO_ERROR_UNSUPPORTED` on platforms that cannot register host memory (AMDGPU). On the host
/// platform the range is the device's memory as it is (nothing to pin or map).
///
/// # Safety
/// `ptr` must be NULL or valid host memory of `size` bytes until it is unregistered or ordo
/// shuts down.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_host_register(device: ordo_device_t, ptr: *mut c_void, size: usize) -> ordo_status_t {
    guard(|| {
        if let Err(e) = ready() {
            return fail(e);
        }
        let device = Device::from_raw(device.raw);
        // SAFETY: forwarded contract.
        let registered = unsafe { runtime().host_register(device, ptr.cast(), size) };
        status(registered.map(|_| ()))
    })
}

/// Unregisters host memory `ordo_host_register` registered, named by its start (`ptr`). Errors,
/// nothing changed: `ORDO_ERROR_NULL_POINTER` for NULL, `ORDO_ERROR_NOT_FOUND` for an address
/// ordo does not know (never registered, or unregistered already), `ORDO_ERROR_INVALID_ARGUMENT`
/// for an address inside a registered range or the start of an allocation.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_host_unregister(ptr: *mut c_void) -> ordo_status_t {
    guard(|| status(runtime().host_unregister(DevicePtr(ptr as u64))))
}

/// Frees an allocation by its base address. NULL, an unknown or an already-freed address is an
/// error, never a double free. The start of registered host memory is `ORDO_ERROR_NOT_FOUND`,
/// nothing changed (`ordo_host_unregister` ends it); a program's global variable
/// `ORDO_ERROR_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_mem_free(ptr: *mut c_void) -> ordo_status_t {
    guard(|| status(runtime().mem_free(DevicePtr(ptr as u64))))
}

fn copy(
    kind: ordo_copy_kind_t,
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    queue: Option<Queue>,
) -> ordo_status_t {
    let kind = match ready().and_then(|()| CopyKind::try_from(kind)) {
        Ok(k) => k,
        Err(e) => return fail(e),
    };
    // SAFETY: the device side is validated by the runtime against its allocation table; the host
    // side is the C caller's contract (valid for `size` bytes, until the queue passes the copy).
    status(unsafe { runtime().memcpy(kind, dst as u64, src as u64, size, queue) })
}

/// Copies `size` bytes (`kind`: `ORDO_COPY_*`). It starts after all work submitted earlier to the
/// device's queues and returns when the copy is complete. Device addresses may point inside an
/// allocation; the range must stay within it. A device-to-device copy may join two devices: of
/// one platform, a peer copy (CUDA: over the link, peer access enabled where the driver allows);
/// a GPU and the host device, the GPU's copy from or to host memory (from 256 KiB on, the host
/// device's allocation is page-locked for the GPU until it is freed); two GPU platforms (CUDA and
/// AMDGPU), staged through page-locked host memory in 8 MiB chunks. A zero-byte copy succeeds and does nothing, whatever its
/// pointers. A host side that is a GPU's device memory ordo knows (device, queue-ordered or
/// global) is `ORDO_ERROR_INVALID_ARGUMENT`, nothing copied (the host cannot address it: copy
/// device to device).
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_memcpy(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    kind: ordo_copy_kind_t,
) -> ordo_status_t {
    guard(|| copy(kind, dst, src, size, None))
}

/// Enqueues a copy on `queue` (a queue of the memory's device); host memory must stay valid
/// until the queue has passed it. A zero-byte copy succeeds and does nothing (the queue is still
/// checked).
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_memcpy_async(
    queue: ordo_queue_t,
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    kind: ordo_copy_kind_t,
) -> ordo_status_t {
    guard(|| copy(kind, dst, src, size, Some(Queue::from_raw(queue.raw))))
}

/// Writes `count` elements of `width` bytes (1, 2 or 4) holding `value` from `dst` (aligned to
/// `width`). With a null `queue`, it starts after all work submitted earlier to the device's
/// queues and returns when done; otherwise it is enqueued. `count` 0 succeeds and does nothing.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_fill(
    dst: *mut c_void,
    value: u32,
    width: u32,
    count: usize,
    queue: ordo_queue_t,
) -> ordo_status_t {
    guard(|| {
        if let Err(e) = ready() {
            return fail(e);
        }
        let fill = match (width, u8::try_from(value), u16::try_from(value)) {
            (1, Ok(v), _) => FillValue::U8(v),
            (2, _, Ok(v)) => FillValue::U16(v),
            (4, _, _) => FillValue::U32(value),
            (1 | 2, _, _) => return fail(Error::new(ErrorCode::InvalidValue, "value does not fit in width bytes")),
            _ => return fail(Error::new(ErrorCode::InvalidValue, "width must be 1, 2 or 4")),
        };
        status(runtime().fill(DevicePtr(dst as u64), fill, count, queue_or_none(queue)))
    })
}

/// Writes the `pattern_size` bytes at `pattern` repeatedly over `size` bytes from `dst` (any
/// alignment). With a null `queue`, it starts after all work submitted earlier to the device's
/// queues and returns when done; otherwise it is enqueued (the pattern is read before this call
/// returns). `ORDO_ERROR_INVALID_SIZE` when `pattern_size` is 0 or `size` is not a multiple of
/// it; `ORDO_ERROR_NULL_POINTER` for a NULL `pattern`; `ORDO_ERROR_UNSUPPORTED` from AMDGPU for
/// patterns other than 1, 2 or 4 bytes. `size` 0 succeeds and does nothing.
///
/// # Safety
/// `pattern` must be NULL or valid for reads of `pattern_size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_fill_pattern(
    dst: *mut c_void,
    pattern: *const c_void,
    pattern_size: usize,
    size: usize,
    queue: ordo_queue_t,
) -> ordo_status_t {
    guard(|| {
        if let Err(e) = ready().and_then(|()| non_null(pattern, "pattern is NULL")) {
            return fail(e);
        }
        if pattern_size > isize::MAX as usize {
            return fail(Error::new(ErrorCode::InvalidSize, "pattern size is too large"));
        }
        // SAFETY: non-NULL and valid for `pattern_size` bytes by the caller's contract.
        let pattern = unsafe { core::slice::from_raw_parts(pattern.cast::<u8>(), pattern_size) };
        status(runtime().fill_pattern(DevicePtr(dst as u64), pattern, size, queue_or_none(queue)))
    })
}
