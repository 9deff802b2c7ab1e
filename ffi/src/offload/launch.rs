//! Kernel launches (`olLaunchKernel`): liboffload's packed argument buffer, checked by the
//! runtime against the kernel's parameter layout, and the launch dimensions.

use super::*;

/// Launches with liboffload's packed argument buffer: the runtime checks it against the
/// kernel's parameter layout (kept with the kernel) and CUDA hands it to the driver whole.
///
/// # Safety
/// `data` is valid for `size` bytes; the buffer holds the kernel's arguments laid out as its
/// parameters are (liboffload's contract).
#[inline(always)]
pub(super) unsafe fn launch_packed(
    device: Device,
    q: Queue,
    kernel: Kernel,
    data: *const c_void,
    size: usize,
    dims: &LaunchDims,
) -> OlResult<()> {
    let args: &[u8] = if size == 0 {
        &[]
    } else {
        // SAFETY: non-null (`olLaunchKernel` refuses a NULL buffer with a non-zero size), at most
        // `isize::MAX` bytes (refused above that) and readable for `size` bytes by the caller's
        // contract.
        unsafe { core::slice::from_raw_parts(data.cast::<u8>(), size) }
    };
    // SAFETY: each parameter's bytes in the buffer are a value of its type (the contract).
    let r = unsafe { runtime().launch_packed_on(device, q, kernel, dims, args) };
    r.map_err(|e| launch_error(e, device, q))
}

/// liboffload's code for a failed launch: which handle was bad, or a queue of another device.
#[cold]
pub(super) fn launch_error(e: Error, device: Device, q: Queue) -> OlError {
    let rt = runtime();
    let arg = match e.code {
        ErrorCode::InvalidHandle if rt.device_platform(device).is_err() => Arg::Device,
        ErrorCode::InvalidHandle if rt.queue_device(q).is_err() => Arg::Queue,
        ErrorCode::InvalidArgument if rt.queue_device(q).is_ok_and(|d| d != device) => {
            return err(OL_ERRC_INVALID_DEVICE, "the queue does not belong to Device");
        }
        _ => Arg::Other,
    };
    OlError::from_ordo(code_of(&e, arg), e)
}

/// `launch_dims` without its errors: the dimensions and whether they are valid, without a
/// branch (dimensions beyond `Dimensions` are 1).
#[inline(always)]
fn launch_dims_unchecked(a: &ol_kernel_launch_size_args_t) -> (LaunchDims, bool) {
    let ok = (a.Dimensions.wrapping_sub(1) < 3) & (a.DynSharedMemory <= u32::MAX as usize);
    // `v` where the dimension is used, else 1: a mask, not a branch.
    let used = |v: u32, dim: usize| {
        let mask = 0u32.wrapping_sub(u32::from(dim < a.Dimensions));
        (v & mask) | (1 & !mask)
    };
    let dims = LaunchDims {
        grid: [used(a.NumGroups.x, 0), used(a.NumGroups.y, 1), used(a.NumGroups.z, 2)],
        block: [used(a.GroupSize.x, 0), used(a.GroupSize.y, 1), used(a.GroupSize.z, 2)],
        shared_mem_bytes: a.DynSharedMemory as u32,
    };
    (dims, ok)
}

pub(super) fn launch_dims(a: &ol_kernel_launch_size_args_t) -> OlResult<LaunchDims> {
    if !(1..=3).contains(&a.Dimensions) {
        return Err(err(OL_ERRC_INVALID_VALUE, "Dimensions must be 1, 2 or 3"));
    }
    if u32::try_from(a.DynSharedMemory).is_err() {
        return Err(err(OL_ERRC_INVALID_VALUE, "DynSharedMemory is too large"));
    }
    Ok(launch_dims_unchecked(a).0)
}

/// Launches a kernel: `ArgumentsData` is the packed argument struct, split by the kernel's
/// parameter layout (CUDA: `cuFuncGetParamInfo`; ordo's host kernels: their declared sizes).
/// Without a queue it runs on the device's own queue and returns when the kernel has finished.
///
/// # Safety
/// Pointer arguments are NULL or valid as liboffload's header documents; the buffer holds the
/// kernel's arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olLaunchKernel(
    queue_h: ol_queue_handle_t,
    device_h: ol_device_handle_t,
    kernel_h: ol_symbol_handle_t,
    ArgumentsData: *const c_void,
    ArgumentsSize: usize,
    LaunchSizeArgs: *const ol_kernel_launch_size_args_t,
) -> ol_result_t {
    entry_result(|| {
        // The common case in one branch: every cheap check as a flag (a driver call before
        // this one has evicted the branch predictor's history, where each branch costs more
        // than a compare). Anything else takes `launch_checked`, which says what is wrong.
        let raw = RawHandle(ptr_to_handle(kernel_h));
        let ok = !device_h.is_null()
            & !kernel_h.is_null()
            & !LaunchSizeArgs.is_null()
            & !queue_h.is_null()
            & ((ArgumentsSize == 0) | !ArgumentsData.is_null())
            & (ArgumentsSize <= isize::MAX as usize)
            & raw.is_kind(ObjectKind::Kernel)
            & (device_h != host_device());
        if ok {
            // SAFETY: non-NULL (checked), readable by the caller's contract.
            let (dims, dims_ok) = launch_dims_unchecked(unsafe { &*LaunchSizeArgs });
            if dims_ok {
                let device = ordo_core::Device::from_raw(ptr_to_handle(device_h));
                // SAFETY: the caller's contract for the buffer (non-NULL when not empty, at most
                // isize::MAX bytes: checked).
                return result(unsafe {
                    launch_packed(device, queue(queue_h), ordo_core::Kernel(raw), ArgumentsData, ArgumentsSize, &dims)
                });
            }
        }
        ordo_core::cold_path();
        // SAFETY: forwarded contract.
        result(unsafe { launch_checked(queue_h, device_h, kernel_h, ArgumentsData, ArgumentsSize, LaunchSizeArgs) })
    })
}

/// `olLaunchKernel` with each check in its documented order and its own error, and the launch
/// without a queue: the path of every call the fast path does not take.
///
/// # Safety
/// As `olLaunchKernel`.
#[cold]
#[inline(never)]
unsafe fn launch_checked(
    queue_h: ol_queue_handle_t,
    device_h: ol_device_handle_t,
    kernel_h: ol_symbol_handle_t,
    ArgumentsData: *const c_void,
    ArgumentsSize: usize,
    LaunchSizeArgs: *const ol_kernel_launch_size_args_t,
) -> OlResult<()> {
    // The cheap argument checks first; when one fails, initialisation is reported first.
    let bad = if device_h.is_null() {
        Some(err(OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"))
    } else if kernel_h.is_null() {
        Some(err(OL_ERRC_INVALID_NULL_HANDLE, "NULL == Kernel"))
    } else if LaunchSizeArgs.is_null() {
        Some(err(OL_ERRC_INVALID_NULL_POINTER, "NULL == LaunchSizeArgs"))
    } else if ArgumentsSize > 0 && ArgumentsData.is_null() {
        Some(err(OL_ERRC_INVALID_ARGUMENT, "ArgumentsSize > 0 && ArgumentsData == NULL"))
    } else if ArgumentsSize > isize::MAX as usize {
        // No buffer is that large (and the runtime reads the buffer as a slice).
        Some(err(OL_ERRC_INVALID_SIZE, "ArgumentsSize is larger than isize::MAX"))
    } else {
        None
    };
    if let Some(e) = bad {
        ready()?;
        return Err(e);
    }
    let raw = RawHandle(ptr_to_handle(kernel_h));
    if raw.kind() != Some(ObjectKind::Kernel) {
        ready()?;
        symbol(kernel_h)?;
        return Err(err(OL_ERRC_SYMBOL_KIND, "the symbol is not a kernel"));
    }
    if device_h == host_device() {
        ready()?;
        return Err(err(OL_ERRC_INVALID_DEVICE, "the host device runs no kernels"));
    }
    // SAFETY: non-NULL (checked), readable by the caller's contract.
    let dims = match launch_dims(unsafe { &*LaunchSizeArgs }) {
        Ok(d) => d,
        Err(e) => {
            ready()?;
            return Err(e);
        }
    };
    let device = ordo_core::Device::from_raw(ptr_to_handle(device_h));
    let kernel = ordo_core::Kernel(raw);
    if queue_h.is_null() {
        ready()?;
        let q = sync_queue(device)?;
        // SAFETY: the caller's contract for the buffer.
        unsafe { launch_packed(device, q, kernel, ArgumentsData, ArgumentsSize, &dims) }?;
        return on(Arg::Device, runtime().queue_synchronize(q));
    }
    // SAFETY: as above.
    unsafe { launch_packed(device, queue(queue_h), kernel, ArgumentsData, ArgumentsSize, &dims) }
}

/// `olLaunchKernel`; the code location is accepted and not used.
///
/// # Safety
/// As `olLaunchKernel`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olLaunchKernelWithCodeLoc(
    queue_h: ol_queue_handle_t,
    device_h: ol_device_handle_t,
    kernel_h: ol_symbol_handle_t,
    ArgumentsData: *const c_void,
    ArgumentsSize: usize,
    LaunchSizeArgs: *const ol_kernel_launch_size_args_t,
    _location: *mut ol_code_location_t,
) -> ol_result_t {
    // SAFETY: forwarded contract.
    unsafe { olLaunchKernel(queue_h, device_h, kernel_h, ArgumentsData, ArgumentsSize, LaunchSizeArgs) }
}
