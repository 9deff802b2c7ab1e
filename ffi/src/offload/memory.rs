//! Entry points for memory: allocation, release, registration, properties, copies and fills.

use super::*;

ol_api! {

    /// Allocates memory on a device (not on liboffload's host device: `OL_ERRC_UNSUPPORTED`).
    fn olMemAlloc / olMemAllocWithCodeLoc(
        device_h: ol_device_handle_t, Type: u32, Size: usize, AllocationOut: *mut *mut c_void,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        pointer(AllocationOut, "NULL == AllocationOut")?;
        if Size == 0 {
            return Err(err(OL_ERRC_INVALID_SIZE, "Size == 0"));
        }
        let kind = match Type {
            OL_ALLOC_TYPE_HOST => MemKind::Host,
            OL_ALLOC_TYPE_DEVICE => MemKind::Device,
            OL_ALLOC_TYPE_MANAGED => MemKind::Managed,
            _ => return Err(err(OL_ERRC_INVALID_ENUMERATION, "unknown ol_alloc_type_t")),
        };
        let d = ordo_device(device_h, "the host device allocates nothing: host memory is the program's own")?;
        let p = on(Arg::Device, runtime().mem_alloc(d, kind, Size))?;
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { AllocationOut.write(p.as_ptr()) };
        Ok(())
    }

    /// Frees an allocation (`olMemAlloc`'s) by its base address, in one lookup. The start of
    /// host memory registered with `olMemRegister` is `OL_ERRC_NOT_FOUND` (the runtime's
    /// `mem_free` refuses registrations), as any address `olMemAlloc` did not return:
    /// `olMemUnregister` releases it.
    fn olMemFree / olMemFreeWithCodeLoc(Address: *mut c_void) {
        ready()?;
        pointer(Address, "NULL == Address")?;
        on(Arg::Other, runtime().mem_free(DevicePtr(Address as u64)))
    }

    /// A property of the allocation holding `Ptr` (any interior pointer).
    fn olGetMemInfo / olGetMemInfoWithCodeLoc(
        Ptr: *const c_void, PropName: u32, PropSize: usize, PropValue: *mut c_void,
    ) {
        ready()?;
        pointer(Ptr, "NULL == Ptr")?;
        // SAFETY: `PropValue` is NULL or valid for `PropSize` bytes (the caller's contract).
        unsafe { value_out(PropSize, PropValue, || mem_info(Ptr, PropName)) }
    }

    /// The size of an allocation property.
    fn olGetMemInfoSize / olGetMemInfoSizeWithCodeLoc(Ptr: *const c_void, PropName: u32, PropSizeRet: *mut usize) {
        ready()?;
        pointer(Ptr, "NULL == Ptr")?;
        // SAFETY: `PropSizeRet` is NULL or writable (the caller's contract).
        unsafe { size_out(PropSizeRet, || mem_info(Ptr, PropName)) }
    }

    /// Registers (page-locks and maps) host memory with a device; `*PinnedPtr` = `Ptr` (ordo
    /// maps it at the same address). Registering the same range on the same device again
    /// succeeds and counts (each registration needs its `olMemUnregister`, as liboffload's tests
    /// expect); a range that overlaps another registration or allocation otherwise is
    /// `OL_ERRC_INVALID_ARGUMENT`.
    fn olMemRegister / olMemRegisterWithCodeLoc(
        device_h: ol_device_handle_t, Ptr: *mut c_void, Size: usize, Flags: u32, PinnedPtr: *mut *mut c_void,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        pointer(Ptr, "NULL == Ptr")?;
        pointer(PinnedPtr, "NULL == PinnedPtr")?;
        if Size == 0 {
            return Err(err(OL_ERRC_INVALID_SIZE, "Size == 0"));
        }
        if Flags != 0 {
            return Err(err(OL_ERRC_INVALID_VALUE, "Flags are reserved and must be 0"));
        }
        let d = ordo_device(device_h, "the host device registers nothing")?;
        let rt = runtime();
        side(|s| {
            // SAFETY: the caller's contract: `Size` bytes of host memory at `Ptr` that stay
            // valid until unregistered.
            match unsafe { rt.host_register(d, Ptr.cast(), Size) } {
                Ok(_) => {}
                Err(e) if e.code == ErrorCode::InvalidArgument => {
                    // The same range registered on the same device before: one more user.
                    match rt.mem_info(DevicePtr(Ptr as u64)) {
                        Ok((base, size, MemKind::Registered, owner))
                            if base.0 == Ptr as u64 && size == Size && owner == d =>
                        {
                            *s.registered.entry(base.0).or_insert(0) += 1;
                        }
                        _ => return Err(OlError::from_ordo(OL_ERRC_INVALID_ARGUMENT, e)),
                    }
                }
                Err(e) => return on(Arg::Device, Err(e)),
            }
            // SAFETY: non-NULL, writable by the caller's contract.
            unsafe { PinnedPtr.write(Ptr) };
            Ok(())
        })
    }

    /// Unregisters host memory registered with `olMemRegister` on this device (once per
    /// registration). A pointer that is not the start of such a range is
    /// `OL_ERRC_INVALID_ARGUMENT`, as liboffload's tests expect.
    fn olMemUnregister / olMemUnregisterWithCodeLoc(device_h: ol_device_handle_t, Ptr: *mut c_void) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        pointer(Ptr, "NULL == Ptr")?;
        let d = ordo_device(device_h, "the host device registers nothing")?;
        let rt = runtime();
        let not_registered = || err(OL_ERRC_INVALID_ARGUMENT, "the pointer is not the start of a range registered with Device");
        side(|s| {
            let (base, _, kind, owner) = match rt.mem_info(DevicePtr(Ptr as u64)) {
                Err(e) if e.code == ErrorCode::NotFound => return Err(not_registered()),
                r => on(Arg::Other, r)?,
            };
            if kind != MemKind::Registered || base.0 != Ptr as u64 || owner != d {
                return Err(not_registered());
            }
            match s.registered.get_mut(&base.0) {
                Some(extra) if *extra > 0 => {
                    *extra -= 1;
                    if *extra == 0 {
                        s.registered.remove(&base.0);
                    }
                    Ok(())
                }
                _ => on(Arg::Other, rt.host_unregister(base)),
            }
        })
    }

    /// Copies between host memory (liboffload's host device) and device memory, or within a
    /// device; with a queue, asynchronously on it, else synchronously.
    fn olMemcpy / olMemcpyWithCodeLoc(
        queue_h: ol_queue_handle_t, DstPtr: *mut c_void, DstDevice: ol_device_handle_t,
        SrcPtr: *const c_void, SrcDevice: ol_device_handle_t, Size: usize,
    ) {
        ready()?;
        handle(DstDevice, "NULL == DstDevice")?;
        handle(SrcDevice, "NULL == SrcDevice")?;
        pointer(DstPtr, "NULL == DstPtr")?;
        pointer(SrcPtr, "NULL == SrcPtr")?;
        let (dst, src) = (device(DstDevice)?, device(SrcDevice)?);
        let q = (!queue_h.is_null()).then(|| queue(queue_h));
        let named = |d: Dev| match d {
            Dev::Host => None,
            Dev::Ordo(d) => Some(d),
        };
        // SAFETY: device sides are validated by the runtime; host sides are the caller's contract
        // (valid for `Size` bytes until the queue passes the copy).
        let r = unsafe { runtime().memcpy_between(DstPtr as u64, named(dst), SrcPtr as u64, named(src), Size, q) };
        on(Arg::Queue, r)
    }

    /// Fills memory with copies of a pattern of any size; with a queue, asynchronously.
    fn olMemFill / olMemFillWithCodeLoc(
        queue_h: ol_queue_handle_t, Ptr: *mut c_void, PatternSize: usize, PatternPtr: *const c_void, FillSize: usize,
    ) {
        ready()?;
        pointer(Ptr, "NULL == Ptr")?;
        pointer(PatternPtr, "NULL == PatternPtr")?;
        if PatternSize == 0 || FillSize % PatternSize != 0 {
            return Err(err(OL_ERRC_INVALID_SIZE, "FillSize % PatternSize != 0"));
        }
        if PatternSize > isize::MAX as usize {
            return Err(err(OL_ERRC_INVALID_SIZE, "PatternSize is too large"));
        }
        // SAFETY: non-NULL, valid for `PatternSize` bytes by the caller's contract.
        let pattern = unsafe { core::slice::from_raw_parts(PatternPtr.cast::<u8>(), PatternSize) };
        let q = (!queue_h.is_null()).then(|| queue(queue_h));
        on(Arg::Queue, runtime().fill_pattern(DevicePtr(Ptr as u64), pattern, FillSize, q))
    }
}
