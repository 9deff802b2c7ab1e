//! Device, pinned-host and managed memory; copies and fills, synchronous or on a stream.
//!
//! A call without a stream runs on the legacy default stream, which starts after all work on
//! the context's blocking streams (ordo's queues), and then waits for the default stream: host-
//! to-device copies, device-to-device copies and memsets may otherwise return before they finish.

use std::ffi::c_void;

use cudarc::driver::sys::{self, CUmemAttach_flags, CUstream};
use ordo_core::{BackendResult, CopyKind, FillValue, MemKind};

use crate::conv::{check, check_release};

pub(crate) fn alloc(kind: MemKind, size: usize) -> BackendResult<u64> {
    let mut addr = 0u64;
    match kind {
        // SAFETY: valid out-pointer; the caller made the device's context current.
        MemKind::Device => check(unsafe { sys::cuMemAlloc_v2(&mut addr, size) })?,
        MemKind::Managed => {
            let flags = CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32;
            // SAFETY: as above.
            check(unsafe { sys::cuMemAllocManaged(&mut addr, size, flags) })?
        }
        MemKind::Host => {
            let mut p: *mut c_void = std::ptr::null_mut();
            // SAFETY: as above.
            check(unsafe { sys::cuMemAllocHost_v2(&mut p, size) })?;
            addr = p as u64;
        }
        MemKind::Registered => {
            return Err(ordo_core::BackendError::new(
                ordo_core::ErrorCode::InvalidArgument,
                0,
                "registered memory is not allocated",
            ));
        }
    }
    Ok(addr)
}

/// Registers existing host memory (page-locked, mapped for every context, portable) and checks
/// that the device sees it at the same address, as ordo names it by that address.
///
/// # Safety
/// `[addr, addr + size)` is host memory that stays valid until `free(Registered, addr)`.
pub(crate) unsafe fn register(addr: u64, size: usize) -> BackendResult<()> {
    let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
    // SAFETY: the caller's contract; the caller made the device's context current.
    check(unsafe { sys::cuMemHostRegister_v2(addr as *mut c_void, size, flags) })?;
    let mut device_addr = 0u64;
    // SAFETY: valid out-pointer; the range was just registered.
    let mapped = check(unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device_addr, addr as *mut c_void, 0) });
    if mapped.is_ok() && device_addr == addr {
        return Ok(());
    }
    // SAFETY: registered just above, unregistered once.
    let _ = unsafe { sys::cuMemHostUnregister(addr as *mut c_void) };
    mapped?;
    Err(ordo_core::BackendError::new(
        ordo_core::ErrorCode::Unsupported,
        0,
        "the device does not see registered host memory at its host address",
    ))
}

/// # Safety
/// `addr` is a live allocation of `kind` in the current context.
pub(crate) unsafe fn free(kind: MemKind, addr: u64) -> BackendResult<()> {
    match kind {
        // SAFETY: `addr` is a live allocation of this kind (validated by the runtime).
        MemKind::Device | MemKind::Managed => check_release(unsafe { sys::cuMemFree_v2(addr) }),
        // SAFETY: as above.
        MemKind::Host => check_release(unsafe { sys::cuMemFreeHost(addr as *mut c_void) }),
        // SAFETY: a range `register` registered (validated by the runtime).
        MemKind::Registered => check_release(unsafe { sys::cuMemHostUnregister(addr as *mut c_void) }),
    }
}

/// # Safety
/// Device ranges were validated by the runtime; host ranges are valid for `size` bytes until the
/// copy completes.
pub(crate) unsafe fn copy(
    kind: CopyKind,
    dst: u64,
    src: u64,
    size: usize,
    stream: Option<CUstream>,
) -> BackendResult<()> {
    // SAFETY: the caller's contract.
    let r = unsafe {
        match (kind, stream) {
            (CopyKind::DeviceToHost, None) => return check(sys::cuMemcpyDtoH_v2(dst as *mut c_void, src, size)),
            (CopyKind::HostToDevice, None) => sys::cuMemcpyHtoD_v2(dst, src as *const c_void, size),
            (CopyKind::DeviceToDevice, None) => sys::cuMemcpyDtoD_v2(dst, src, size),
            (CopyKind::HostToDevice, Some(s)) => sys::cuMemcpyHtoDAsync_v2(dst, src as *const c_void, size, s),
            (CopyKind::DeviceToHost, Some(s)) => sys::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src, size, s),
            (CopyKind::DeviceToDevice, Some(s)) => sys::cuMemcpyDtoDAsync_v2(dst, src, size, s),
        }
    };
    check(r)?;
    finish_if_synchronous(stream)
}

/// For a call without a stream: waits until the legacy default stream (and so the call's own
/// work) is complete. Device-to-host copies need not: they return only when done.
fn finish_if_synchronous(stream: Option<CUstream>) -> BackendResult<()> {
    if stream.is_some() {
        return Ok(());
    }
    // SAFETY: the null stream is the current context's legacy default stream.
    check(unsafe { sys::cuStreamSynchronize(std::ptr::null_mut()) })
}

/// # Safety
/// `count` elements from the aligned `dst` lie in one live allocation of the current context.
pub(crate) unsafe fn fill(dst: u64, value: FillValue, count: usize, stream: Option<CUstream>) -> BackendResult<()> {
    // SAFETY: the caller's contract.
    let r = unsafe {
        match (value, stream) {
            (FillValue::U8(v), None) => sys::cuMemsetD8_v2(dst, v, count),
            (FillValue::U16(v), None) => sys::cuMemsetD16_v2(dst, v, count),
            (FillValue::U32(v), None) => sys::cuMemsetD32_v2(dst, v, count),
            (FillValue::U8(v), Some(s)) => sys::cuMemsetD8Async(dst, v, count, s),
            (FillValue::U16(v), Some(s)) => sys::cuMemsetD16Async(dst, v, count, s),
            (FillValue::U32(v), Some(s)) => sys::cuMemsetD32Async(dst, v, count, s),
        }
    };
    check(r)?;
    finish_if_synchronous(stream)
}
