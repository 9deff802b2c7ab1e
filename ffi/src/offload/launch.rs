//! Kernel launches (`olLaunchKernel`): liboffload's packed argument buffer laid out against the
//! kernel's parameter layout (cached per thread), and the launch dimensions.

use super::*;

thread_local! {
    /// This thread's recent kernel parameter layouts (kernel handle, layout). A handle is never
    /// reused, so an entry stays right for as long as its kernel lives; a stale kernel fails in
    /// the launch itself.
    /// Plain data (no destructor), so that reaching it costs no registration check.
    static LAYOUTS: RefCell<LayoutCache> = const { RefCell::new(LayoutCache::EMPTY) };
}

/// Layouts of up to `CACHED_PARAMS` parameters of the last `LAYOUT_CACHE` kernels launched.
pub(super) struct LayoutCache {
    entries: [(u64, u8, [ParamSlot; CACHED_PARAMS]); LAYOUT_CACHE],
    next: usize,
}
pub(super) const LAYOUT_CACHE: usize = 8;
pub(super) const CACHED_PARAMS: usize = 16;

impl LayoutCache {
    const EMPTY: Self =
        Self { entries: [(0, 0, [ParamSlot { offset: 0, size: 0 }; CACHED_PARAMS]); LAYOUT_CACHE], next: 0 };

    /// The layout of `kernel`: the last one inserted is looked at first (a loop launching one
    /// kernel finds it there), then the others.
    #[inline]
    fn find(&self, kernel: u64) -> Option<&[ParamSlot]> {
        let last = &self.entries[(self.next + LAYOUT_CACHE - 1) % LAYOUT_CACHE];
        let (_, n, slots) = if last.0 == kernel { last } else { self.entries.iter().find(|(k, _, _)| *k == kernel)? };
        Some(&slots[..usize::from(*n)])
    }

    fn insert(&mut self, kernel: u64, layout: &[ParamSlot]) {
        if layout.len() <= CACHED_PARAMS {
            let (k, n, slots) = &mut self.entries[self.next];
            (*k, *n) = (kernel, layout.len() as u8);
            slots[..layout.len()].copy_from_slice(layout);
            self.next = (self.next + 1) % LAYOUT_CACHE;
        }
    }
}

/// Splits the packed argument buffer by the kernel's layout and launches.
///
/// # Safety
/// `data` is valid for `size` bytes; the buffer holds the kernel's arguments laid out as its
/// parameters are (liboffload's contract).
pub(super) unsafe fn launch_packed(
    device: Device,
    q: Queue,
    kernel: Kernel,
    data: *const c_void,
    size: usize,
    dims: &LaunchDims,
) -> OlResult<()> {
    let launch = |params: &[*mut c_void], sizes: &[usize]| -> OlResult<()> {
        // SAFETY: as many sizes as pointers, and no pointer is null: each points into `data`,
        // which is non-null whenever the layout has a parameter (`size >= end > 0`, and
        // `olLaunchKernel` refuses a NULL buffer with a non-zero size).
        let args = unsafe { KernelArgs::new_unchecked(params, sizes) };
        // SAFETY: each pointer points at its parameter's bytes in the caller's buffer.
        let r = unsafe { runtime().launch_on(device, q, kernel, dims, &args) };
        r.map_err(|e| launch_error(e, device, q))
    };
    let with_layout = |layout: &[ParamSlot]| -> OlResult<()> {
        let end = layout.last().map_or(0, |s| s.offset as usize + s.size as usize);
        if size < end {
            return Err(err(OL_ERRC_INVALID_SIZE, "ArgumentsSize is smaller than the kernel's parameters"));
        }
        let arg = |s: &ParamSlot| {
            // SAFETY: `offset + size <= end <= size` bytes of `data`.
            unsafe { data.cast::<u8>().add(s.offset as usize) }.cast_mut().cast::<c_void>()
        };
        // Kernels with few parameters (nearly all) split into small stack arrays, written only
        // as far as used; others into heap vectors (a launch of such a kernel costs an
        // allocation).
        const INLINE: usize = 16;
        let n = layout.len();
        if n <= INLINE {
            let mut params = [core::mem::MaybeUninit::<*mut c_void>::uninit(); INLINE];
            let mut sizes = [core::mem::MaybeUninit::<usize>::uninit(); INLINE];
            for (i, s) in layout.iter().enumerate() {
                params[i].write(arg(s));
                sizes[i].write(s.size as usize);
            }
            // SAFETY: the first `n` elements of both arrays were written just above.
            let (params, sizes) = unsafe {
                (
                    core::slice::from_raw_parts(params.as_ptr().cast::<*mut c_void>(), n),
                    core::slice::from_raw_parts(sizes.as_ptr().cast::<usize>(), n),
                )
            };
            launch(params, sizes)
        } else {
            let params: Vec<*mut c_void> = layout.iter().map(arg).collect();
            let sizes: Vec<usize> = layout.iter().map(|s| s.size as usize).collect();
            launch(&params, &sizes)
        }
    };
    // (A launch from inside a host kernel finds the cache borrowed and takes the slow path.)
    let cached = LAYOUTS.with(|cache| Some(with_layout(cache.try_borrow().ok()?.find(kernel.to_raw())?)));
    if let Some(r) = cached {
        return r;
    }
    let layout = on(Arg::Other, runtime().kernel_param_layout(kernel))?;
    let r = with_layout(&layout);
    LAYOUTS.with(|cache| {
        if let Ok(mut cache) = cache.try_borrow_mut() {
            cache.insert(kernel.to_raw(), &layout);
        }
    });
    r
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

pub(super) fn launch_dims(a: &ol_kernel_launch_size_args_t) -> OlResult<LaunchDims> {
    if !(1..=3).contains(&a.Dimensions) {
        return Err(err(OL_ERRC_INVALID_VALUE, "Dimensions must be 1, 2 or 3"));
    }
    let Ok(shared) = u32::try_from(a.DynSharedMemory) else {
        return Err(err(OL_ERRC_INVALID_VALUE, "DynSharedMemory is too large"));
    };
    let used = |v: u32, dim: usize| if dim < a.Dimensions { v } else { 1 };
    Ok(LaunchDims {
        grid: [used(a.NumGroups.x, 0), used(a.NumGroups.y, 1), used(a.NumGroups.z, 2)],
        block: [used(a.GroupSize.x, 0), used(a.GroupSize.y, 1), used(a.GroupSize.z, 2)],
        shared_mem_bytes: shared,
    })
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
    entry(|| {
        // The cheap argument checks first; when one fails, initialisation is reported first.
        let bad = if device_h.is_null() {
            Some(err(OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"))
        } else if kernel_h.is_null() {
            Some(err(OL_ERRC_INVALID_NULL_HANDLE, "NULL == Kernel"))
        } else if LaunchSizeArgs.is_null() {
            Some(err(OL_ERRC_INVALID_NULL_POINTER, "NULL == LaunchSizeArgs"))
        } else if ArgumentsSize > 0 && ArgumentsData.is_null() {
            Some(err(OL_ERRC_INVALID_ARGUMENT, "ArgumentsSize > 0 && ArgumentsData == NULL"))
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
    })
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
