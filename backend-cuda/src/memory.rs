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
        MemKind::Device => check("cuMemAlloc_v2", unsafe { sys::cuMemAlloc_v2(&mut addr, size) })?,
        MemKind::Managed => {
            let flags = CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32;
            // SAFETY: as above.
            check("cuMemAllocManaged", unsafe { sys::cuMemAllocManaged(&mut addr, size, flags) })?
        }
        MemKind::Host => {
            let mut p: *mut c_void = std::ptr::null_mut();
            // SAFETY: as above.
            check("cuMemAllocHost_v2", unsafe { sys::cuMemAllocHost_v2(&mut p, size) })?;
            addr = p as u64;
        }
        MemKind::Registered | MemKind::Global | MemKind::Ordered => {
            return Err(ordo_core::BackendError::new(
                ordo_core::ErrorCode::InvalidArgument,
                0,
                "registered memory, program globals and queue-ordered memory are not allocated here",
            ));
        }
    }
    Ok(addr)
}

/// The release threshold of every device's default memory pool (bytes the pool keeps after a
/// synchronisation for the next `cuMemAllocAsync`): `ORDO_POOL_RELEASE_THRESHOLD` when it is a
/// number, else all of it (`u64::MAX`, what frameworks built on pools set; the driver's own
/// default, 0, gives memory back at every synchronisation and makes the next allocation a
/// driver allocation).
fn pool_release_threshold() -> u64 {
    std::env::var("ORDO_POOL_RELEASE_THRESHOLD").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(u64::MAX)
}

/// Sets the release threshold of `dev`'s default memory pool (at init, once per retained
/// context). A device without pools keeps the driver's defaults; `cuMemAllocAsync` then
/// reports it.
pub(crate) fn configure_pool(dev: sys::CUdevice) {
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: valid out-pointer and device.
    if unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, dev) } != sys::CUresult::CUDA_SUCCESS {
        log::debug!("cuda: device {dev} has no default memory pool");
        return;
    }
    let mut threshold = pool_release_threshold();
    let attr = sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    // SAFETY: the attribute's value is a cuuint64_t.
    let r = unsafe { sys::cuMemPoolSetAttribute(pool, attr, (&raw mut threshold).cast()) };
    if r != sys::CUresult::CUDA_SUCCESS {
        log::debug!("cuda: cuMemPoolSetAttribute(RELEASE_THRESHOLD) failed: {r:?}");
    }
}

/// `cuMemAllocAsync` on `stream` from the current device's pool.
///
/// # Safety
/// A live stream of the current context.
pub(crate) unsafe fn alloc_on(size: usize, stream: CUstream) -> BackendResult<u64> {
    let mut addr = 0u64;
    // SAFETY: valid out-pointer; the caller's stream.
    check("cuMemAllocAsync", unsafe { sys::cuMemAllocAsync(&mut addr, size, stream) })?;
    Ok(addr)
}

/// `cuMemFreeAsync` on `stream`.
///
/// # Safety
/// `addr` is live memory from `alloc_on`, never passed again; a live stream of the current
/// context.
pub(crate) unsafe fn free_on(addr: u64, stream: CUstream) -> BackendResult<()> {
    // SAFETY: the caller's contract.
    check_release("cuMemFreeAsync", unsafe { sys::cuMemFreeAsync(addr, stream) })
}

/// Registers existing host memory (page-locked, mapped for every context, portable) and checks
/// that the device sees it at the same address, as ordo names it by that address.
///
/// # Safety
/// `[addr, addr + size)` is host memory that stays valid until `free(Registered, addr)`.
pub(crate) unsafe fn register(addr: u64, size: usize) -> BackendResult<()> {
    debug_assert!(addr != 0 && size > 0, "register: a null or empty range");
    let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
    // SAFETY: the caller's contract; the caller made the device's context current.
    check("cuMemHostRegister_v2", unsafe { sys::cuMemHostRegister_v2(addr as *mut c_void, size, flags) })?;
    let mut device_addr = 0u64;
    // SAFETY: valid out-pointer; the range was just registered.
    let mapped = check("cuMemHostGetDevicePointer_v2", unsafe {
        sys::cuMemHostGetDevicePointer_v2(&mut device_addr, addr as *mut c_void, 0)
    });
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
    debug_assert!(addr != 0, "free: a null address");
    match kind {
        // (`cuMemFree` frees queue-ordered memory too, after the device's work.)
        MemKind::Device | MemKind::Managed | MemKind::Ordered => {
            // SAFETY: `addr` is a live allocation of this kind (validated by the runtime).
            check_release("cuMemFree_v2", unsafe { sys::cuMemFree_v2(addr) })
        }
        // SAFETY: as above.
        MemKind::Host => check_release("cuMemFreeHost", unsafe { sys::cuMemFreeHost(addr as *mut c_void) }),
        MemKind::Registered => {
            // SAFETY: a range `register` registered (validated by the runtime).
            check_release("cuMemHostUnregister", unsafe { sys::cuMemHostUnregister(addr as *mut c_void) })
        }
        // Never passed (the runtime frees no global); the driver frees them with their module.
        MemKind::Global => Err(ordo_core::BackendError::new(
            ordo_core::ErrorCode::InvalidArgument,
            0,
            "a program's global variable is not freed",
        )),
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
    debug_assert!(size > 0 && dst != 0 && src != 0, "copy: an empty range or a null side");
    // SAFETY: the caller's contract.
    let r = unsafe {
        match (kind, stream) {
            (CopyKind::DeviceToHost, None) => {
                return check("cuMemcpyDtoH_v2", sys::cuMemcpyDtoH_v2(dst as *mut c_void, src, size));
            }
            (CopyKind::HostToDevice, None) => {
                ("cuMemcpyHtoD_v2", sys::cuMemcpyHtoD_v2(dst, src as *const c_void, size))
            }
            (CopyKind::DeviceToDevice, None) => ("cuMemcpyDtoD_v2", sys::cuMemcpyDtoD_v2(dst, src, size)),
            (CopyKind::HostToDevice, Some(s)) => {
                ("cuMemcpyHtoDAsync_v2", sys::cuMemcpyHtoDAsync_v2(dst, src as *const c_void, size, s))
            }
            (CopyKind::DeviceToHost, Some(s)) => {
                ("cuMemcpyDtoHAsync_v2", sys::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src, size, s))
            }
            (CopyKind::DeviceToDevice, Some(s)) => {
                ("cuMemcpyDtoDAsync_v2", sys::cuMemcpyDtoDAsync_v2(dst, src, size, s))
            }
        }
    };
    check(r.0, r.1)?;
    finish_if_synchronous(stream)
}

/// A copy between two devices' memory (`cuMemcpyPeerAsync` on `stream`; without one,
/// `cuMemcpyPeer`, synchronous), in whatever context is current.
///
/// # Safety
/// Both ranges lie in live allocations of the two contexts' devices; the stream is live.
pub(crate) unsafe fn copy_peer(
    dst: u64,
    dst_ctx: sys::CUcontext,
    src: u64,
    src_ctx: sys::CUcontext,
    size: usize,
    stream: Option<CUstream>,
) -> BackendResult<()> {
    debug_assert!(size > 0 && dst != 0 && src != 0, "copy_peer: an empty range or a null side");
    // SAFETY: the caller's contract.
    unsafe {
        match stream {
            Some(s) => check("cuMemcpyPeerAsync", sys::cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, size, s)),
            None => {
                check("cuMemcpyPeer", sys::cuMemcpyPeer(dst, dst_ctx, src, src_ctx, size))?;
                finish_if_synchronous(None)
            }
        }
    }
}

/// Waits for the current context's earlier work on its blocking streams (its legacy default
/// stream), as a copy without a stream starts after it.
pub(crate) fn wait_for_earlier_work() -> BackendResult<()> {
    finish_if_synchronous(None)
}

/// For a call without a stream: waits until the legacy default stream (and so the call's own
/// work) is complete. Device-to-host copies need not: they return only when done.
fn finish_if_synchronous(stream: Option<CUstream>) -> BackendResult<()> {
    if stream.is_some() {
        return Ok(());
    }
    // SAFETY: the null stream is the current context's legacy default stream.
    check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(std::ptr::null_mut()) })
}

/// # Safety
/// `count` elements from the aligned `dst` lie in one live allocation of the current context.
pub(crate) unsafe fn fill(dst: u64, value: FillValue, count: usize, stream: Option<CUstream>) -> BackendResult<()> {
    debug_assert!(count > 0 && dst % value.width() as u64 == 0, "fill: an empty or misaligned range");
    // SAFETY: the caller's contract.
    let r = unsafe {
        match (value, stream) {
            (FillValue::U8(v), None) => ("cuMemsetD8_v2", sys::cuMemsetD8_v2(dst, v, count)),
            (FillValue::U16(v), None) => ("cuMemsetD16_v2", sys::cuMemsetD16_v2(dst, v, count)),
            (FillValue::U32(v), None) => ("cuMemsetD32_v2", sys::cuMemsetD32_v2(dst, v, count)),
            (FillValue::U8(v), Some(s)) => ("cuMemsetD8Async", sys::cuMemsetD8Async(dst, v, count, s)),
            (FillValue::U16(v), Some(s)) => ("cuMemsetD16Async", sys::cuMemsetD16Async(dst, v, count, s)),
            (FillValue::U32(v), Some(s)) => ("cuMemsetD32Async", sys::cuMemsetD32Async(dst, v, count, s)),
        }
    };
    check(r.0, r.1)?;
    finish_if_synchronous(stream)
}

/// Writes `pattern` `count` times from `dst`: patterns of 1, 2 or 4 bytes at an aligned address
/// as one `cuMemsetD8/16/32`; longer ones as strided 2D sets (`cuMemsetD2D8/16/32`, one per
/// element of the widest width that divides both the pattern length and the address: pitch =
/// pattern length, height = `count`), or, when that would take more calls than there are
/// repetitions, as `count` host-to-device copies of the pattern (the driver stages pageable
/// sources before the call returns, so the pattern need not outlive it).
///
/// # Safety
/// `count * pattern.len()` bytes from `dst` lie in one live allocation of the current context;
/// `pattern` is non-empty and `count` is not 0; the stream, when given, is live.
pub(crate) unsafe fn fill_pattern(
    dst: u64,
    pattern: &[u8],
    count: usize,
    stream: Option<CUstream>,
) -> BackendResult<()> {
    debug_assert!(!pattern.is_empty() && count > 0 && dst != 0, "fill_pattern: an empty pattern or range");
    let len = pattern.len();
    let width = [4usize, 2, 1].into_iter().find(|&w| len % w == 0 && dst % w as u64 == 0).unwrap_or(1);
    if len == width {
        let value = match *pattern {
            [a, b, c, d] => FillValue::U32(u32::from_ne_bytes([a, b, c, d])),
            [a, b] => FillValue::U16(u16::from_ne_bytes([a, b])),
            _ => FillValue::U8(pattern[0]),
        };
        // SAFETY: the caller's contract; `dst` is aligned to the width.
        return unsafe { fill(dst, value, count, stream) };
    }
    if len / width > count {
        for i in 0..count {
            let at = dst + (i * len) as u64;
            // SAFETY: the caller's contract: each repetition lies in the allocation.
            let (call, r) = unsafe {
                match stream {
                    Some(s) => ("cuMemcpyHtoDAsync_v2", sys::cuMemcpyHtoDAsync_v2(at, pattern.as_ptr().cast(), len, s)),
                    None => ("cuMemcpyHtoD_v2", sys::cuMemcpyHtoD_v2(at, pattern.as_ptr().cast(), len)),
                }
            };
            check(call, r)?;
        }
        return finish_if_synchronous(stream);
    }
    for (i, element) in pattern.chunks_exact(width).enumerate() {
        let at = dst + (i * width) as u64;
        // SAFETY: the caller's contract: rows of `width` bytes every `len` bytes, `count` rows,
        // all inside the allocation; `at` is aligned to the width.
        let r = unsafe {
            match (element, stream) {
                (&[a, b, c, d], None) => {
                    ("cuMemsetD2D32_v2", sys::cuMemsetD2D32_v2(at, len, u32::from_ne_bytes([a, b, c, d]), 1, count))
                }
                (&[a, b, c, d], Some(s)) => (
                    "cuMemsetD2D32Async",
                    sys::cuMemsetD2D32Async(at, len, u32::from_ne_bytes([a, b, c, d]), 1, count, s),
                ),
                (&[a, b], None) => {
                    ("cuMemsetD2D16_v2", sys::cuMemsetD2D16_v2(at, len, u16::from_ne_bytes([a, b]), 1, count))
                }
                (&[a, b], Some(s)) => {
                    ("cuMemsetD2D16Async", sys::cuMemsetD2D16Async(at, len, u16::from_ne_bytes([a, b]), 1, count, s))
                }
                (&[a], None) => ("cuMemsetD2D8_v2", sys::cuMemsetD2D8_v2(at, len, a, 1, count)),
                (&[a], Some(s)) => ("cuMemsetD2D8Async", sys::cuMemsetD2D8Async(at, len, a, 1, count, s)),
                _ => unreachable!("chunks of the width"),
            }
        };
        check(r.0, r.1)?;
    }
    finish_if_synchronous(stream)
}
