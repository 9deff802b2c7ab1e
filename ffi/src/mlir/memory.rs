//! Memory (`mgpuMemAlloc`, `mgpuMemFree`, `mgpuMemcpy`, `mgpuMemset*`) and host registration
//! (`mgpuMemHostRegister*`, `mgpuMemHostUnregister*`).

use super::*;

/// `mgpuMemAlloc(i64 size, ptr stream, i8 isHostShared) -> ptr`: device memory, or managed
/// memory when host-shared. Size 0 gives null.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuMemAlloc(size: u64, _stream: *mut c_void, is_host_shared: u8) -> *mut c_void {
    let is_host_shared = is_host_shared != 0;
    contain_or(core::ptr::null_mut(), || {
        let Some(d) = device() else { return core::ptr::null_mut() };
        if size == 0 {
            return core::ptr::null_mut();
        }
        let kind = if is_host_shared { MemKind::Managed } else { MemKind::Device };
        let what = if is_host_shared { "cuMemAllocManaged" } else { "cuMemAlloc" };
        created(what, runtime().mem_alloc(d, kind, usize::try_from(size).unwrap_or(usize::MAX)).map(|p| p.0))
    })
}

/// `mgpuMemFree(ptr, ptr stream)`: memory already released by the teardown is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuMemFree(ptr: *mut c_void, _stream: *mut c_void) {
    contain_or((), || {
        if ptr.is_null() {
            return;
        }
        match runtime().mem_free(DevicePtr(from_ptr(ptr))) {
            Ok(()) => {}
            Err(e) if matches!(e.code, ErrorCode::NotFound | ErrorCode::Uninitialized) => {}
            Err(e) => report("cuMemFree", &e),
        }
    })
}

/// `mgpuMemcpy(ptr dst, ptr src, i64 size, ptr stream)`: the direction is found from ordo's
/// allocation table (as the driver finds it from unified addressing). A null side, two sides
/// neither of which is memory ordo knows, or a host side whose first or last byte the process
/// cannot read (a device pointer `mgpuMemFree` released, or another library's) print one line and
/// copy nothing; after the at-exit teardown the call does nothing.
///
/// # Safety
/// Host-side ranges are valid for `size` bytes until the stream has passed the copy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuMemcpy(dst: *mut c_void, src: *mut c_void, size: i64, stream: *mut c_void) {
    contain_or((), || {
        let Ok(size) = usize::try_from(size) else { return };
        if size == 0 {
            return;
        }
        // The process's first mgpu* call initialises ordo as every other call does (a copy with
        // a NULL side printed nothing when it came first).
        super::ensure_init();
        let rt = runtime();
        if !rt.is_ready() {
            return; // after the at-exit teardown: silence, and no memory touched
        }
        if dst.is_null() || src.is_null() {
            let e = ordo_core::Error::new(ErrorCode::InvalidValue, "a null copy source or destination");
            return report("cuMemcpyAsync", &e);
        }
        let on_device = |p: *mut c_void| rt.mem_info(DevicePtr(from_ptr(p))).is_ok();
        let kind = match (on_device(dst), on_device(src)) {
            (true, true) => CopyKind::DeviceToDevice,
            (true, false) if !host_readable(src, size) => return report_unmapped(),
            (true, false) => CopyKind::HostToDevice,
            (false, true) if !host_readable(dst, size) => return report_unmapped(),
            (false, true) => CopyKind::DeviceToHost,
            (false, false) => {
                // Neither side is memory ordo knows: a freed or foreign device pointer looks
                // exactly like host memory here, so nothing is copied (a host-to-host copy is
                // the program's own to make).
                let e = ordo_core::Error::new(
                    ErrorCode::InvalidValue,
                    "neither side is device memory ordo knows (freed, or not from mgpuMemAlloc)",
                );
                return report("cuMemcpyAsync", &e);
            }
        };
        let Some(q) = stream_or_null(stream) else { return };
        // SAFETY: device ranges are checked by ordo; host ranges are the caller's contract.
        if let Err(e) = unsafe { rt.memcpy(kind, from_ptr(dst), from_ptr(src), size, Some(q)) } {
            report("cuMemcpyAsync", &e);
        }
    })
}

/// Whether the first and the last byte of `size` bytes at `p` can be read by this process, asked
/// of the kernel (`process_vm_readv` on the process itself), so that a range the process cannot
/// read is found without touching it. A device pointer that `mgpuMemFree` released, or one of
/// another library's, is in the driver's reserved address range, which the process cannot read:
/// the driver would fault on it as host memory. Where the kernel refuses the question (a seccomp
/// filter, a kernel without the call) the range is taken as readable, as before this check.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn host_readable(p: *mut c_void, size: usize) -> bool {
    let mut probe = [0u8; 2];
    let last = (p as usize).wrapping_add(size.saturating_sub(1));
    let local = [libc::iovec { iov_base: probe.as_mut_ptr().cast(), iov_len: 2 }];
    let remote = [libc::iovec { iov_base: p, iov_len: 1 }, libc::iovec { iov_base: last as *mut c_void, iov_len: 1 }];
    // SAFETY: reads at most two bytes of this process's memory into `probe` (the kernel checks
    // the remote addresses and reports EFAULT for an unreadable one; nothing is written there).
    let n = unsafe { libc::process_vm_readv(libc::getpid(), local.as_ptr(), 1, remote.as_ptr(), 2, 0) };
    n == 2 || (n < 0 && matches!(std::io::Error::last_os_error().raw_os_error(), Some(libc::ENOSYS | libc::EPERM)))
}

/// Elsewhere the kernel has no such question: the range is taken as readable.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn host_readable(_: *mut c_void, _: usize) -> bool {
    true
}

/// `mgpuMemcpy`'s line for a host side the process cannot read.
#[cold]
fn report_unmapped() {
    let e = ordo_core::Error::new(
        ErrorCode::InvalidValue,
        "the side that is not ordo's device memory is not readable host memory (a freed or foreign device pointer?)",
    );
    report("cuMemcpyAsync", &e);
}

pub(super) fn memset(dst: *mut c_void, value: FillValue, count: i64, stream: *mut c_void, what: &str) {
    let Ok(count) = usize::try_from(count) else { return };
    let Some(q) = stream_or_null(stream) else { return };
    if let Err(e) = runtime().fill(DevicePtr(from_ptr(dst)), value, count, Some(q)) {
        report(what, &e);
    }
}

/// `mgpuMemset32(ptr dst, i32 value, i64 count, ptr stream)`.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuMemset32(dst: *mut c_void, value: u32, count: i64, stream: *mut c_void) {
    contain_or((), || memset(dst, FillValue::U32(value), count, stream, "cuMemsetD32Async"))
}

/// `mgpuMemset16(ptr dst, i16 value, i64 count, ptr stream)`.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuMemset16(dst: *mut c_void, value: u16, count: i64, stream: *mut c_void) {
    contain_or((), || memset(dst, FillValue::U16(value), count, stream, "cuMemsetD16Async"))
}

// ---- host registration ------------------------------------------------------------------------

pub(super) fn register(ptr: *mut c_void, bytes: u64) {
    let Some(d) = device() else { return };
    if ptr.is_null() || bytes == 0 {
        return; // nothing to register (an empty memref)
    }
    let Ok(bytes) = usize::try_from(bytes) else { return };
    // SAFETY: MLIR registers memory it owns for as long as the program uses it (the caller's
    // contract of the exported functions).
    if let Err(e) = unsafe { runtime().host_register(d, ptr.cast(), bytes) } {
        report("cuMemHostRegister", &e);
    }
}

pub(super) fn unregister(ptr: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    // Only registered host memory, named by its start, is released here (the runtime's
    // `host_unregister` refuses device memory), in one lookup.
    match runtime().host_unregister(DevicePtr(from_ptr(ptr))) {
        Ok(()) => {}
        // Released by the at-exit teardown (or never registered after it): silence.
        Err(e) if e.code == ErrorCode::Uninitialized => {}
        Err(e) => report("cuMemHostUnregister", &e),
    }
}

/// The first byte and the length in bytes of the elements a ranked memref descriptor (allocated
/// pointer, aligned pointer, offset, `rank` sizes, `rank` strides) can reach; `None` when it
/// reaches none or its layout cannot be described (negative strides, overflow).
///
/// # Safety
/// `descriptor` points to a ranked memref descriptor of rank `rank`.
pub(super) unsafe fn memref_span(
    rank: i64,
    descriptor: *const c_void,
    element_bytes: i64,
) -> Option<(*mut c_void, u64)> {
    let rank = usize::try_from(rank).ok()?;
    let element_bytes = u64::try_from(element_bytes).ok().filter(|&b| b > 0)?;
    if descriptor.is_null() {
        return None;
    }
    let words = descriptor.cast::<i64>();
    // SAFETY: the caller's contract: two pointers, the offset, then sizes and strides.
    let (aligned, offset, dims) = unsafe {
        let aligned = *descriptor.cast::<*mut u8>().add(1);
        let offset = *words.add(2);
        let sizes = core::slice::from_raw_parts(words.add(3), rank);
        let strides = core::slice::from_raw_parts(words.add(3 + rank), rank);
        (aligned, offset, sizes.iter().zip(strides))
    };
    let mut last = 0u64; // index of the last reachable element
    for (&size, &stride) in dims {
        let (size, stride) = (u64::try_from(size).ok()?, u64::try_from(stride).ok()?);
        if size == 0 {
            return None;
        }
        last = last.checked_add((size - 1).checked_mul(stride)?)?;
    }
    let start = u64::try_from(offset).ok()?.checked_mul(element_bytes)?;
    let bytes = last.checked_add(1)?.checked_mul(element_bytes)?;
    Some((aligned.wrapping_add(usize::try_from(start).ok()?).cast(), bytes))
}

/// `mgpuMemHostRegister(ptr, i64 sizeBytes)`: page-locks and maps existing host memory.
///
/// # Safety
/// `ptr` is host memory of `size` bytes that stays valid until it is unregistered.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuMemHostRegister(ptr: *mut c_void, size: i64) {
    contain_or((), || register(ptr, u64::try_from(size).unwrap_or(0)))
}

/// `mgpuMemHostUnregister(ptr)`. A range already unregistered by the teardown is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuMemHostUnregister(ptr: *mut c_void) {
    contain_or((), || unregister(ptr))
}

/// `mgpuMemHostRegisterMemRef(i64 rank, ptr descriptor, i64 elementSizeBytes)`: registers the
/// elements a ranked memref can reach (`gpu.host_register`).
///
/// # Safety
/// `descriptor` points to a ranked memref descriptor of `rank` whose memory stays valid until
/// it is unregistered.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuMemHostRegisterMemRef(rank: i64, descriptor: *const c_void, element_bytes: i64) {
    contain_or((), || {
        // SAFETY: the caller's contract.
        if let Some((start, bytes)) = unsafe { memref_span(rank, descriptor, element_bytes) } {
            register(start, bytes);
        }
    })
}

/// `mgpuMemHostUnregisterMemRef(i64 rank, ptr descriptor, i64 elementSizeBytes)`
/// (`gpu.host_unregister`).
///
/// # Safety
/// `descriptor` points to a ranked memref descriptor of `rank`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuMemHostUnregisterMemRef(rank: i64, descriptor: *const c_void, element_bytes: i64) {
    contain_or((), || {
        // SAFETY: the caller's contract.
        if let Some((start, _)) = unsafe { memref_span(rank, descriptor, element_bytes) } {
            unregister(start);
        }
    })
}
