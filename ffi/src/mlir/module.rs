//! Modules, functions and launches (`mgpuModuleLoad*`, `mgpuModuleGetFunction`,
//! `mgpuLaunchKernel`, `mgpuLaunchClusterKernel`), with the cache of functions already looked up.

use super::*;

/// (module handle, function name) -> kernel handle.
pub(super) type FunctionCache = HashMap<(u64, Vec<u8>), u64>;

/// Functions already looked up. Read under a shared lock.
pub(super) static FUNCTIONS: RwLock<Option<FunctionCache>> = RwLock::new(None);

pub(super) fn load(image: &[u8]) -> *mut c_void {
    let Some(d) = device() else { return core::ptr::null_mut() };
    created("cuModuleLoadData", runtime().program_load(d, image).map(Program::to_raw))
}

/// `mgpuModuleLoad(ptr data, i64 size) -> ptr`: a cubin, fatbin or PTX image of `size` bytes.
///
/// # Safety
/// `data` is valid for reads of `size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuModuleLoad(data: *const c_void, size: i64) -> *mut c_void {
    contain_or(core::ptr::null_mut(), || {
        if data.is_null() || size <= 0 {
            report("cuModuleLoadData", &ordo_core::Error::new(ErrorCode::InvalidBinary, "empty or null module image"));
            return core::ptr::null_mut();
        }
        // SAFETY: the caller's contract.
        load(unsafe { core::slice::from_raw_parts(data.cast::<u8>(), size as usize) })
    })
}

/// `mgpuModuleLoadJIT(ptr data, i32 optLevel) -> ptr`: a NUL-terminated PTX image (ordo's loader
/// JIT-compiles PTX with the driver's default optimisation level).
///
/// # Safety
/// `data` is a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuModuleLoadJIT(data: *const c_void, _opt_level: i32) -> *mut c_void {
    contain_or(core::ptr::null_mut(), || {
        if data.is_null() {
            report("cuModuleLoadDataEx", &ordo_core::Error::new(ErrorCode::NullPointer, "null PTX image"));
            return core::ptr::null_mut();
        }
        // SAFETY: the caller's contract (NUL-terminated).
        let ptx = unsafe { core::ffi::CStr::from_ptr(data.cast::<c_char>()) };
        load(ptx.to_bytes_with_nul())
    })
}

/// `mgpuModuleUnload(ptr)`: a module already released (by ordo's at-exit teardown, before the
/// global destructor that calls this) is ignored silently.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuModuleUnload(module: *mut c_void) {
    contain_or((), || {
        let raw = from_ptr(module);
        if let Ok(mut cache) = FUNCTIONS.write() {
            if let Some(map) = cache.as_mut() {
                map.retain(|(m, _), _| *m != raw);
            }
        }
        match runtime().program_unload(Program::from_raw(raw)) {
            Ok(()) => {}
            Err(e) if matches!(e.code, ErrorCode::InvalidHandle | ErrorCode::Uninitialized) => {}
            Err(e) => report("cuModuleUnload", &e),
        }
    })
}

/// `mgpuModuleGetFunction(ptr module, ptr name) -> ptr`. A name already looked up in this
/// module is answered from a cache under a shared lock (no exclusive runtime call).
///
/// # Safety
/// `name` is a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuModuleGetFunction(module: *mut c_void, name: *const c_char) -> *mut c_void {
    contain_or(core::ptr::null_mut(), || {
        if name.is_null() {
            report("cuModuleGetFunction", &ordo_core::Error::new(ErrorCode::NullPointer, "null function name"));
            return core::ptr::null_mut();
        }
        // SAFETY: the caller's contract.
        let name = unsafe { core::ffi::CStr::from_ptr(name) };
        let key = (from_ptr(module), name.to_bytes().to_vec());
        if let Ok(cache) = FUNCTIONS.read() {
            if let Some(&k) = cache.as_ref().and_then(|m| m.get(&key)) {
                return to_ptr(k);
            }
        }
        let Ok(text) = name.to_str() else {
            report("cuModuleGetFunction", &ordo_core::Error::new(ErrorCode::InvalidArgument, "name is not UTF-8"));
            return core::ptr::null_mut();
        };
        let found = runtime().kernel_get(Program::from_raw(key.0), text).map(Kernel::to_raw);
        if let (Ok(k), Ok(mut cache)) = (&found, FUNCTIONS.write()) {
            cache.get_or_insert_with(HashMap::new).insert(key, *k);
        }
        created("cuModuleGetFunction", found)
    })
}

/// Launch dimensions from MLIR's `i64`s: a value outside `u32` becomes 0 (refused by the
/// runtime's checks as `InvalidValue`), dynamic shared memory above `u32` likewise.
pub(super) fn launch_dims(grid: [i64; 3], block: [i64; 3], smem: i32) -> LaunchDims {
    let dim = |v: i64| u32::try_from(v).unwrap_or(0);
    LaunchDims { grid: grid.map(dim), block: block.map(dim), shared_mem_bytes: u32::try_from(smem).unwrap_or(u32::MAX) }
}

/// CUDA's kernel parameter space is 32,764 bytes, every parameter at least one byte: no kernel
/// takes more parameters than this.
pub(super) const MAX_PARAMS: usize = 32_764;

/// The argument list of a launch: `count` pointers at `params` (none when either is zero/null).
/// A count no kernel can have is `InvalidValue`, not a slice over arbitrary memory.
///
/// # Safety
/// `params` holds `count` readable pointers when it is not null and `count` is in range.
pub(super) unsafe fn launch_args<'a>(params: *mut *mut c_void, count: i64) -> ordo_core::Result<KernelArgs<'a>> {
    let count = usize::try_from(count).unwrap_or(0);
    if count > MAX_PARAMS {
        return Err(ordo_core::Error::new(ErrorCode::InvalidValue, "more kernel arguments than CUDA allows"));
    }
    let list: &[*mut c_void] = if count == 0 || params.is_null() {
        &[]
    } else {
        // SAFETY: the caller's contract; `count` is bounded above.
        unsafe { core::slice::from_raw_parts(params, count) }
    };
    KernelArgs::unsized_params(list)
}

/// Parameter counts of kernels already asked (cluster launches need one per launch).
pub(super) static PARAM_COUNTS: RwLock<Option<HashMap<u64, usize>>> = RwLock::new(None);

/// A kernel's parameter count, from the cache or the driver (then cached; handles are never
/// reused, so an entry never goes wrong).
pub(super) fn param_count(kernel: Kernel) -> ordo_core::Result<usize> {
    if let Some(&n) = PARAM_COUNTS.read().ok().as_ref().and_then(|c| c.as_ref()?.get(&kernel.to_raw())) {
        return Ok(n);
    }
    let n = runtime().kernel_param_count(kernel)?;
    if let Ok(mut cache) = PARAM_COUNTS.write() {
        cache.get_or_insert_with(HashMap::new).insert(kernel.to_raw(), n);
    }
    Ok(n)
}

/// `mgpuLaunchKernel(ptr function, i64 gridX, gridY, gridZ, blockX, blockY, blockZ,
/// i32 smem, ptr stream, ptr params, ptr extra, i64 paramsCount)`.
///
/// # Safety
/// `params` holds `params_count` pointers to the kernel's arguments, as `cuLaunchKernel` takes.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the ABI's signature
pub unsafe extern "C" fn mgpuLaunchKernel(
    function: *mut c_void,
    grid_x: i64,
    grid_y: i64,
    grid_z: i64,
    block_x: i64,
    block_y: i64,
    block_z: i64,
    smem: i32,
    stream: *mut c_void,
    params: *mut *mut c_void,
    _extra: *mut *mut c_void,
    params_count: i64,
) {
    contain_or((), || {
        let dims = launch_dims([grid_x, grid_y, grid_z], [block_x, block_y, block_z], smem);
        // SAFETY: the caller's contract.
        let args = match unsafe { launch_args(params, params_count) } {
            Ok(a) => a,
            Err(e) => return report("cuLaunchKernel", &e),
        };
        let Some(q) = stream_or_null(stream) else { return };
        // SAFETY: the argument pointers are the caller's contract (MLIR builds them from the
        // kernel's signature).
        if let Err(e) = unsafe { runtime().launch(q, Kernel::from_raw(from_ptr(function)), &dims, &args) } {
            report("cuLaunchKernel", &e);
        }
    })
}

/// `mgpuLaunchClusterKernel(ptr function, i64 clusterX, clusterY, clusterZ, gridX, gridY, gridZ,
/// blockX, blockY, blockZ, i32 smem, ptr stream, ptr params, ptr extra)`: the grid counts blocks
/// and must be a multiple of the cluster. MLIR passes no parameter count; the kernel's own (from
/// the driver) bounds the argument pointers read.
///
/// # Safety
/// `params` holds one pointer per kernel parameter, as `cuLaunchKernelEx` takes.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the ABI's signature
pub unsafe extern "C" fn mgpuLaunchClusterKernel(
    function: *mut c_void,
    cluster_x: i64,
    cluster_y: i64,
    cluster_z: i64,
    grid_x: i64,
    grid_y: i64,
    grid_z: i64,
    block_x: i64,
    block_y: i64,
    block_z: i64,
    smem: i32,
    stream: *mut c_void,
    params: *mut *mut c_void,
    _extra: *mut *mut c_void,
) {
    contain_or((), || {
        let dims = launch_dims([grid_x, grid_y, grid_z], [block_x, block_y, block_z], smem);
        let cluster = [cluster_x, cluster_y, cluster_z].map(|v| u32::try_from(v).unwrap_or(0));
        let kernel = Kernel::from_raw(from_ptr(function));
        let count = match param_count(kernel) {
            Ok(n) => n as i64,
            Err(e) => return report("cuFuncGetParamInfo", &e),
        };
        // SAFETY: the caller's contract (one pointer per parameter).
        let args = match unsafe { launch_args(params, count) } {
            Ok(a) => a,
            Err(e) => return report("cuLaunchKernelEx", &e),
        };
        let Some(q) = stream_or_null(stream) else { return };
        // SAFETY: as for `mgpuLaunchKernel`.
        if let Err(e) = unsafe { runtime().launch_cluster(q, kernel, &dims, cluster, &args) } {
            report("cuLaunchKernelEx", &e);
        }
    })
}
