//! Programs (modules from PTX, cubin or fatbin), kernels and launches.
//!
//! PTX must reach the driver NUL-terminated, so a PTX image without a NUL is copied with one
//! added. The driver is given no length for cubin (ELF) and fatbin images and trusts the sizes
//! inside them, so those are checked against the slice first (`image.rs`): a truncated or
//! inconsistent image is `InvalidBinary` without a driver call. A JIT failure returns
//! `InvalidBinary`, and the JIT's error log becomes the calling thread's error detail.
//! Dynamic shared memory above the default 48 KiB needs a per-kernel opt-in attribute: it is set
//! only when a launch needs it and remembered, so ordinary launches make no extra driver call.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys::{self, CUfunction, CUfunction_attribute, CUjit_option, CUmodule, CUresult};
use ordo_core::{BackendError, BackendResult, ErrorCode, FastLaunch, KernelArgs, LaunchDims};

use crate::conv::{check, check_release, code, name};
use crate::device::LaunchKernelFn;
use crate::queue::stream;

/// Dynamic shared memory a kernel may use without opting in.
pub const DEFAULT_SHARED_MEMORY_LIMIT: u32 = 48 * 1024;
const JIT_LOG_BYTES: usize = 16 * 1024;

thread_local! {
    /// Detail of this thread's last failed CUDA call that has one (the JIT log).
    static DETAIL: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Sets this thread's error detail.
pub(crate) fn set_detail(text: &str) {
    DETAIL.with(|d| {
        let mut d = d.borrow_mut();
        d.clear();
        d.push_str(text);
    });
}

/// Takes (and clears) this thread's error detail.
pub(crate) fn take_detail() -> String {
    DETAIL.with(|d| std::mem::take(&mut *d.borrow_mut()))
}

pub(crate) fn load(image: &[u8]) -> BackendResult<u64> {
    set_detail("");
    let owned;
    let data: &[u8] = if crate::image::check(image)? == crate::image::Format::Binary || image.contains(&0) {
        image
    } else {
        owned = [image, &[0]].concat();
        &owned
    };
    let mut log = vec![0u8; JIT_LOG_BYTES];
    let mut options = [CUjit_option::CU_JIT_ERROR_LOG_BUFFER, CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    let mut values = [log.as_mut_ptr().cast::<c_void>(), JIT_LOG_BYTES as *mut c_void];
    let mut module: CUmodule = std::ptr::null_mut();
    // SAFETY: `data` is a NUL-terminated PTX text or a binary image valid for the call; the
    // option arrays and the log buffer outlive it.
    let r = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            data.as_ptr().cast(),
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if r != CUresult::CUDA_SUCCESS {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        let text = String::from_utf8_lossy(&log[..end]);
        set_detail(if text.trim().is_empty() { name(r) } else { text.trim() });
        let c = if code(r) == ErrorCode::InvalidValue { ErrorCode::InvalidBinary } else { code(r) };
        return Err(BackendError::new(c, r as i64, name(r)));
    }
    // SAFETY: the module just loaded from `image`, in the current context.
    if let Err(e) = unsafe { crate::ctors::at_load(module as u64, image) } {
        // SAFETY: the module just loaded; never handed out.
        let _ = unsafe { sys::cuModuleUnload(module) };
        return Err(e);
    }
    Ok(module as u64)
}

/// # Safety
/// A live module of the current context.
pub(crate) unsafe fn unload(raw: u64) -> BackendResult<()> {
    debug_assert!(raw != 0, "unload: a null module");
    // Its destructors first; a failure there still unloads the module (and is reported).
    // SAFETY: a live module of the current context.
    let destructors = unsafe { crate::ctors::at_unload(raw) };
    // SAFETY: a live module (validated by the runtime).
    check_release("cuModuleUnload", unsafe { sys::cuModuleUnload(raw as usize as CUmodule) })?;
    destructors
}

/// # Safety
/// A live module of the current context.
pub(crate) unsafe fn kernel(program: u64, kernel_name: &str) -> BackendResult<u64> {
    debug_assert!(program != 0, "kernel: a null module");
    let c_name = CString::new(kernel_name)
        .map_err(|_| BackendError::new(ErrorCode::InvalidArgument, 0, "kernel name contains NUL"))?;
    let mut f: CUfunction = std::ptr::null_mut();
    // SAFETY: valid out-pointer, live module, NUL-terminated name.
    check("cuModuleGetFunction", unsafe {
        sys::cuModuleGetFunction(&mut f, program as usize as CUmodule, c_name.as_ptr())
    })?;
    Ok(f as u64)
}

#[derive(Default)]
struct Kernels {
    /// kernel -> (program, dynamic shared memory limit set for it; 0 = the default)
    by_kernel: HashMap<u64, (u64, u32)>,
    /// program -> its kernels
    by_program: HashMap<u64, Vec<u64>>,
    /// program -> its kernels' parameter counts, as its image describes them (`params`)
    counts: HashMap<u64, HashMap<String, usize>>,
    /// kernel -> its parameter count, where its program's image gave one
    params: HashMap<u64, usize>,
}

/// Every kernel looked up, with its program and opted-in shared memory. Consulted on launch only
/// when a launch needs more dynamic shared memory than the default.
pub(crate) struct KernelRegistry(Mutex<Option<Kernels>>);

impl KernelRegistry {
    pub(crate) const fn new() -> Self {
        Self(Mutex::new(None))
    }

    fn with<R>(&self, f: impl FnOnce(&mut Kernels) -> R) -> R {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(guard.get_or_insert_with(Kernels::default))
    }

    /// Keeps the parameter counts `image` describes for `program`, just loaded from it.
    pub(crate) fn describe(&self, program: u64, image: &[u8]) {
        let counts = crate::params::param_counts(image);
        self.with(|k| {
            k.counts.insert(program, counts);
        });
    }

    pub(crate) fn record(&self, program: u64, kernel: u64, name: &str) {
        self.with(|k| {
            if k.by_kernel.insert(kernel, (program, 0)).is_none() {
                k.by_program.entry(program).or_default().push(kernel);
            }
            if let Some(&count) = k.counts.get(&program).and_then(|c| c.get(name)) {
                k.params.insert(kernel, count);
            }
        });
    }

    /// The kernel's parameter count as its image describes it, if it does.
    pub(crate) fn param_count(&self, kernel: u64) -> Option<usize> {
        self.with(|k| k.params.get(&kernel).copied())
    }

    fn ensure_shared_memory(&self, kernel: u64, bytes: u32) -> BackendResult<()> {
        self.with(|k| {
            let Some(entry) = k.by_kernel.get_mut(&kernel) else {
                return Err(BackendError::new(ErrorCode::InvalidHandle, 0, "CUDA kernel was never looked up"));
            };
            if entry.1 >= bytes {
                return Ok(());
            }
            let attribute = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
            // SAFETY: a live kernel; the driver checks the value against the device's limit.
            check("cuFuncSetAttribute", unsafe {
                sys::cuFuncSetAttribute(kernel as usize as CUfunction, attribute, bytes as i32)
            })?;
            entry.1 = bytes;
            Ok(())
        })
    }

    /// Forgets a program's kernels (their addresses may be reused by a later module).
    pub(crate) fn forget_program(&self, program: u64) {
        self.with(|k| {
            for kernel in k.by_program.remove(&program).unwrap_or_default() {
                k.by_kernel.remove(&kernel);
                k.params.remove(&kernel);
            }
            k.counts.remove(&program);
        });
    }

    pub(crate) fn clear(&self) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// # Safety
/// The arguments match the kernel's parameters (see `Runtime::launch`).
#[inline]
pub(crate) unsafe fn launch(
    cu_launch_kernel: LaunchKernelFn,
    kernels: &KernelRegistry,
    queue: u64,
    kernel: u64,
    dims: &LaunchDims,
    args: &KernelArgs<'_>,
) -> BackendResult<()> {
    // SAFETY: forwarded contract; `params` points to the arguments.
    unsafe { launch_raw(cu_launch_kernel, kernels, queue, kernel, dims, params_pointer(args), std::ptr::null_mut()) }
}

/// The driver's `cuLaunchKernel` for the fast launch functions, which have no `self`: the
/// function of the library cudarc loaded (one per process, so every backend's is this one).
static FAST_LAUNCH_KERNEL: OnceLock<LaunchKernelFn> = OnceLock::new();

/// `Backend::fast_launch` for a device whose launches need no context call (`f`: the driver's
/// `cuLaunchKernel`, see `Devices::single_device_launch`).
pub(crate) fn fast_launch(f: LaunchKernelFn) -> Option<FastLaunch> {
    let first = *FAST_LAUNCH_KERNEL.get_or_init(|| f);
    // One driver library per process: a different function would be another library's.
    (first as usize == f as usize).then_some(FastLaunch { packed: fast_packed, params: fast_params })
}

/// The driver's `cuLaunchKernel` for a fast launch of `dims`, or `None` when the launch needs
/// the backend's own call (above 48 KiB of dynamic shared memory: the kernel's opt-in first).
#[inline(always)]
fn fast_driver(dims: &LaunchDims) -> Option<LaunchKernelFn> {
    if dims.shared_mem_bytes > DEFAULT_SHARED_MEMORY_LIMIT { None } else { FAST_LAUNCH_KERNEL.get().copied() }
}

/// `FastLaunch::packed`: `launch_packed` in whatever context the thread has current; `false`
/// (nothing launched) when the driver refuses, for instance another context or none is
/// current — the backend's `launch_packed` then makes the device's context current and tries
/// again, or reports the error — and for launches above 48 KiB of dynamic shared memory, which
/// need the kernel's opt-in first.
///
/// # Safety
/// As `launch_packed`, for a kernel and queue of the device that handed out this function.
unsafe fn fast_packed(kernel: u64, queue: u64, dims: &LaunchDims, args: &[u8]) -> bool {
    let Some(f) = fast_driver(dims) else { return false };
    // SAFETY: forwarded contract.
    let r = unsafe { with_packed(args, |extra| driver_launch(f, kernel, queue, dims, std::ptr::null_mut(), extra)) };
    r == CUresult::CUDA_SUCCESS
}

/// `FastLaunch::params`: `launch` as `fast_packed` is `launch_packed`.
///
/// # Safety
/// As `launch`, for a kernel and queue of the device that handed out this function.
unsafe fn fast_params(kernel: u64, queue: u64, dims: &LaunchDims, args: &KernelArgs<'_>) -> bool {
    let Some(f) = fast_driver(dims) else { return false };
    // SAFETY: forwarded contract; `params` points to the arguments.
    let r = unsafe { driver_launch(f, kernel, queue, dims, params_pointer(args), std::ptr::null_mut()) };
    r == CUresult::CUDA_SUCCESS
}

/// `launch` with the arguments in one packed buffer, handed to the driver whole
/// (`CU_LAUNCH_PARAM_BUFFER_POINTER`, as liboffload's CUDA plugin passes them): the driver
/// copies the bytes, so nothing is split or counted here.
///
/// # Safety
/// As `launch`; `args` ends where the kernel's last parameter does and holds a value of each
/// parameter's type at its offset.
#[inline]
pub(crate) unsafe fn launch_packed(
    cu_launch_kernel: LaunchKernelFn,
    kernels: &KernelRegistry,
    queue: u64,
    kernel: u64,
    dims: &LaunchDims,
    args: &[u8],
) -> BackendResult<()> {
    // SAFETY: forwarded contract; `extra` names the buffer's readable bytes and ends with the
    // end key.
    unsafe {
        with_packed(args, |extra| {
            launch_raw(cu_launch_kernel, kernels, queue, kernel, dims, std::ptr::null_mut(), extra)
        })
    }
}

/// Runs `go` with `cuLaunchKernel`'s `extra` for a packed buffer (NULL for an empty one: a
/// kernel without parameters gets neither form).
#[inline(always)]
fn with_packed<R>(args: &[u8], go: impl FnOnce(*mut *mut c_void) -> R) -> R {
    let mut size = args.len();
    // The driver's keys are small integers passed as pointers (`cuda.h`'s `CU_LAUNCH_PARAM_*`).
    let key = |k: u32| k as usize as *mut c_void;
    let mut extra = [
        key(sys::CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT),
        args.as_ptr().cast_mut().cast::<c_void>(),
        key(sys::CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT),
        (&raw mut size).cast::<c_void>(),
        key(sys::CU_LAUNCH_PARAM_END_AS_INT),
    ];
    go(if args.is_empty() { std::ptr::null_mut() } else { extra.as_mut_ptr() })
}

/// `cuLaunchKernel` (the driver's function, `cu_launch_kernel`) with the arguments in either of
/// its forms (`params`, or `extra`'s packed buffer; NULL for the other), after the opt-in a
/// launch with more than the default dynamic shared memory needs.
///
/// # Safety
/// As `launch`; `params` and `extra` are NULL or as `cuLaunchKernel` documents them, and stay
/// valid for the call (the driver only reads through them despite the `*mut`).
#[inline(always)]
unsafe fn launch_raw(
    cu_launch_kernel: LaunchKernelFn,
    kernels: &KernelRegistry,
    queue: u64,
    kernel: u64,
    dims: &LaunchDims,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> BackendResult<()> {
    debug_assert!(kernel != 0, "launch: a null function");
    debug_assert!(dims.grid.iter().chain(&dims.block).all(|&d| d >= 1), "launch: a zero dimension");
    if dims.shared_mem_bytes > DEFAULT_SHARED_MEMORY_LIMIT {
        ordo_core::cold_path();
        kernels.ensure_shared_memory(kernel, dims.shared_mem_bytes)?;
    }
    // SAFETY: forwarded contract.
    check("cuLaunchKernel", unsafe { driver_launch(cu_launch_kernel, kernel, queue, dims, params, extra) })
}

/// The driver's `cuLaunchKernel` (`f`) with ordo's kernel, queue and dimensions.
///
/// # Safety
/// As `launch_raw`, the opt-in for the dynamic shared memory made.
#[inline(always)]
unsafe fn driver_launch(
    f: LaunchKernelFn,
    kernel: u64,
    queue: u64,
    dims: &LaunchDims,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    let [gx, gy, gz] = dims.grid;
    let [bx, by, bz] = dims.block;
    // SAFETY: live kernel and stream (the driver checks that they are the current context's);
    // the argument forms as documented.
    unsafe {
        f(kernel as usize as CUfunction, gx, gy, gz, bx, by, bz, dims.shared_mem_bytes, stream(queue), params, extra)
    }
}

/// Whether the loaded driver exports `symbol` (for functions newer than ordo's minimum driver:
/// cudarc panics when asked for a missing one).
fn driver_has(symbol: &str) -> bool {
    // SAFETY: the backend is up, so the library is loaded; only the symbol's presence is checked.
    unsafe { sys::culib().get::<*const ()>(symbol.as_bytes()) }.is_ok()
}

fn old_driver(what: &'static str) -> BackendError {
    BackendError::new(ErrorCode::Unsupported, 0, what)
}

/// # Safety
/// As `launch`; the cluster dimensions are at least 1 and divide the grid's.
pub(crate) unsafe fn launch_cluster(
    kernels: &KernelRegistry,
    queue: u64,
    kernel: u64,
    dims: &LaunchDims,
    cluster: [u32; 3],
    args: &KernelArgs<'_>,
) -> BackendResult<()> {
    debug_assert!(kernel != 0, "launch_cluster: a null function");
    debug_assert!(
        cluster.iter().zip(dims.grid).all(|(&c, g)| c >= 1 && g % c == 0),
        "launch_cluster: a cluster that does not divide the grid"
    );
    if !driver_has("cuLaunchKernelEx") {
        return Err(old_driver("the CUDA driver is too old for cluster launches (cuLaunchKernelEx)"));
    }
    if dims.shared_mem_bytes > DEFAULT_SHARED_MEMORY_LIMIT {
        ordo_core::cold_path();
        kernels.ensure_shared_memory(kernel, dims.shared_mem_bytes)?;
    }
    let [gx, gy, gz] = dims.grid;
    let [bx, by, bz] = dims.block;
    // SAFETY: an all-zero attribute is a valid value of this plain C union; the fields used are
    // set below.
    let mut attribute: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attribute.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attribute.value.clusterDim.x = cluster[0];
    attribute.value.clusterDim.y = cluster[1];
    attribute.value.clusterDim.z = cluster[2];
    let config = sys::CUlaunchConfig {
        gridDimX: gx,
        gridDimY: gy,
        gridDimZ: gz,
        blockDimX: bx,
        blockDimY: by,
        blockDimZ: bz,
        sharedMemBytes: dims.shared_mem_bytes,
        hStream: stream(queue),
        attrs: &mut attribute,
        numAttrs: 1,
    };
    // SAFETY: a live kernel and stream of the current context, a config whose one attribute
    // lives until the call returns; `params` as in `launch`.
    check("cuLaunchKernelEx", unsafe {
        sys::cuLaunchKernelEx(&config, kernel as usize as CUfunction, params_pointer(args), std::ptr::null_mut())
    })
}

/// Calls `each(offset, size)` for every parameter of a kernel and returns the count. The count
/// is `known` (the kernel's image described it: `params`), else from `cuFuncGetParamCount`
/// where the driver has it (CUDA 13.2 and up), and each
/// parameter from `cuFuncGetParamInfo` (CUDA 12.4 and up). On a driver without the count, the
/// parameters are probed until the driver answers `CUDA_ERROR_INVALID_VALUE`. That failing call is
/// the one API error this makes, and only on such drivers (compute-sanitizer reports it).
///
/// # Safety
/// `kernel` is a live function of the current context.
unsafe fn each_param(
    kernel: u64,
    known: Option<usize>,
    mut each: impl FnMut(usize, usize) -> BackendResult<()>,
) -> BackendResult<usize> {
    debug_assert!(kernel != 0, "each_param: a null function");
    if !driver_has("cuFuncGetParamInfo") {
        return Err(old_driver("the CUDA driver is too old to describe kernel parameters (cuFuncGetParamInfo)"));
    }
    let function = kernel as usize as CUfunction;
    let info = |index: usize| {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: a live function (the caller's contract), valid out-pointers.
        let r = unsafe { sys::cuFuncGetParamInfo(function, index, &mut offset, &mut size) };
        (r, offset, size)
    };
    let known = match known {
        Some(count) => Some(count),
        None => match param_count_fn() {
            Some(get) => {
                let mut count = 0usize;
                // SAFETY: the driver's `cuFuncGetParamCount` (CUDA 13.2), a live function, a
                // valid out-pointer.
                check("cuFuncGetParamCount", unsafe { get(function, &mut count) })?;
                Some(count)
            }
            None => None,
        },
    };
    if let Some(count) = known {
        if count > MAX_DESCRIBED_PARAMS {
            return Err(BackendError::new(ErrorCode::Unsupported, 0, "kernel has more parameters than ordo describes"));
        }
        for index in 0..count {
            let (r, offset, size) = info(index);
            check("cuFuncGetParamInfo", r)?;
            each(offset, size)?;
        }
        return Ok(count);
    }
    let mut count = 0usize;
    loop {
        match info(count) {
            (CUresult::CUDA_SUCCESS, offset, size) => each(offset, size)?,
            (CUresult::CUDA_ERROR_INVALID_VALUE, ..) => return Ok(count),
            (other, ..) => return check("cuFuncGetParamInfo", other).map(|()| count),
        }
        count += 1;
        if count > MAX_DESCRIBED_PARAMS {
            return Err(BackendError::new(ErrorCode::Internal, 0, "kernel parameter count did not end"));
        }
    }
}

/// The driver's `cuFuncGetParamCount`, where it has one (CUDA 13.2 and up; cudarc binds it only
/// for builds against 13.2, and ordo builds against 13.0 so as to run on 13.0 drivers).
fn param_count_fn() -> Option<unsafe extern "C" fn(CUfunction, *mut usize) -> CUresult> {
    static FN: OnceLock<Option<unsafe extern "C" fn(CUfunction, *mut usize) -> CUresult>> = OnceLock::new();
    *FN.get_or_init(|| {
        // SAFETY: the backend is up, so the library is loaded; the symbol, where present, has
        // this signature (cuda.h, 13.2).
        unsafe { sys::culib().get::<unsafe extern "C" fn(CUfunction, *mut usize) -> CUresult>(b"cuFuncGetParamCount") }
            .ok()
            .map(|f| *f)
    })
}

/// The most parameters `each_param` walks (a kernel's parameters take at most 32 KiB on Hopper,
/// so 4,096 pointers; more is a driver answer not to be trusted).
const MAX_DESCRIBED_PARAMS: usize = 4096;

/// The number of parameters of a kernel.
///
/// # Safety
/// `kernel` is a live function of the current context.
pub(crate) unsafe fn param_count(kernel: u64, known: Option<usize>) -> BackendResult<usize> {
    // SAFETY: forwarded contract.
    unsafe { each_param(kernel, known, |_, _| Ok(())) }
}

/// The `kernelParams` the driver gets: null for a kernel without arguments (an empty slice's
/// pointer is dangling; the driver would not read it, but null is what C callers pass).
fn params_pointer(args: &KernelArgs<'_>) -> *mut *mut c_void {
    match args.params() {
        [] => std::ptr::null_mut(),
        params => params.as_ptr() as *mut *mut c_void,
    }
}

/// A kernel's parameter layout from `cuFuncGetParamInfo` (CUDA 12.4 drivers and up).
///
/// # Safety
/// `kernel` is a live function of the current context.
pub(crate) unsafe fn param_layout(
    kernel: u64,
    known: Option<usize>,
    out: &mut ordo_core::ParamLayout,
) -> BackendResult<()> {
    out.clear();
    let push = |offset: usize, size: usize| {
        out.push(ordo_core::ParamSlot { offset: offset as u32, size: size as u32 }).map_err(|_| {
            BackendError::new(ErrorCode::Unsupported, 0, "kernel has more than MAX_KERNEL_PARAMS parameters")
        })
    };
    // SAFETY: forwarded contract.
    unsafe { each_param(kernel, known, push) }.map(drop)
}

/// `cuOccupancyMaxPotentialBlockSize` with a fixed dynamic shared memory size.
///
/// # Safety
/// `kernel` is a live function of the current context.
pub(crate) unsafe fn optimal_block_size(kernel: u64, dynamic_shared: usize) -> BackendResult<u32> {
    debug_assert!(kernel != 0, "optimal_block_size: a null function");
    let (mut min_grid, mut block) = (0, 0);
    // SAFETY: a live function, valid out-pointers, no size callback.
    check("cuOccupancyMaxPotentialBlockSize", unsafe {
        sys::cuOccupancyMaxPotentialBlockSize(
            &mut min_grid,
            &mut block,
            kernel as usize as CUfunction,
            None,
            dynamic_shared,
            0,
        )
    })?;
    Ok(block.max(0) as u32)
}

/// Whether a device of compute capability `cc` can load `image`, without loading it: a PTX
/// image whose `.target` is `sm_NN` at most the device's (an `sm_NNa` target: exactly the
/// device's); a cubin (`EM_CUDA`) built for the device's major version and a minor at most the
/// device's (an arch-specific cubin: exactly the device's); a fatbin whose structure is sound
/// (the driver picks its entry when it loads it). A malformed image is not valid (`false`).
pub(crate) fn compatible(image: &[u8], cc: (u32, u32)) -> bool {
    let device = cc.0 * 10 + cc.1;
    match crate::image::check(image) {
        Err(_) => false,
        Ok(crate::image::Format::Text) => {
            ptx_target(image).is_some_and(|(sm, specific)| if specific { sm == device } else { sm <= device })
        }
        Ok(crate::image::Format::Binary) if image.starts_with(b"\x7fELF") => {
            const EM_CUDA: u16 = 190;
            let machine = u16::from_le_bytes([image[0x12], image[0x13]]);
            let flags = u32::from_le_bytes([image[0x30], image[0x31], image[0x32], image[0x33]]);
            // Cubins of CUDA 12.8 and later (ELF ABI version 8 and up) keep the architecture in
            // bits 8..16 of e_flags; older ones in bits 0..8.
            let sm = if image[8] >= 8 { (flags >> 8) & 0xff } else { flags & 0xff };
            machine == EM_CUDA && sm / 10 == cc.0 && sm % 10 <= cc.1
        }
        Ok(crate::image::Format::Binary) => true,
    }
}

/// The `sm_NN` of a PTX image's `.target` directive, and whether it is arch-specific (`sm_NNa`).
fn ptx_target(image: &[u8]) -> Option<(u32, bool)> {
    let text = std::str::from_utf8(image.split(|&b| b == 0).next()?).ok()?;
    let target = text.lines().find_map(|l| l.trim_start().strip_prefix(".target"))?;
    let sm = target.split([' ', ',', '\t']).find_map(|w| w.trim().strip_prefix("sm_"))?;
    let digits: String = sm.chars().take_while(char::is_ascii_digit).collect();
    Some((digits.parse().ok()?, sm[digits.len()..].starts_with(['a', 'f'])))
}
