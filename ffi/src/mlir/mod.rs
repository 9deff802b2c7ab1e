//! The MLIR CUDA runtime ABI (`mgpu*`, MLIR 22) on ordo's default runtime (feature `mlir`), so
//! that `libordo.so` can stand in for `libmlir_cuda_runtime.so`.
//!
//! Every signature is the one `mlir-opt -gpu-lower-to-nvvm-pipeline | mlir-translate
//! --mlir-to-llvmir` declares (checked against Debian's `mlir-22-tools`; see `tests/mlir/`).
//! Modules, functions, streams and events handed to MLIR code are ordo handles cast to pointers,
//! so a stale one (a module unloaded by a global destructor after ordo's at-exit teardown) is
//! recognised and ignored, never passed to the driver. Device memory is named by its address,
//! which ordo's allocation table checks the same way.
//!
//! The first call (usually `mgpuModuleLoadJIT` from a global constructor) initialises ordo and
//! registers its at-exit teardown (`ordo_shutdown_at_exit`), after the driver is up, so it runs
//! before the driver's own exit handlers. Without a CUDA device it prints one line saying so and
//! exits with status 1 (an MLIR program cannot go on without one). Genuine errors print one line
//! to stderr, as upstream does; calls on objects already released by the teardown print nothing.
//!
//! Host registration (`mgpuMemHostRegister*`) uses ordo's `Runtime::host_register`: registered
//! ranges are named like allocations and unregistered by the teardown if the program does not.
//!
//! Faster than upstream on the path MLIR emits for a synchronous `gpu.launch_func`
//! (get function, stream create, launch, stream synchronize, stream destroy): streams come from
//! and go back to a per-device pool instead of the driver, and a function already looked up is
//! found in a cache under a read lock.
//!
//! Not provided (absent from `libordo.so`; programs using them do not link): the cuSPARSE and
//! cuSPARSELt helpers.

use core::ffi::{c_char, c_void};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Mutex, Once, RwLock};

use ordo_core::{
    BackendKind, CopyKind, Device, DevicePtr, ErrorCode, Event, FillValue, Kernel, KernelArgs, LaunchDims, MemKind,
    Program, Queue,
};

use crate::runtime;

/// Runs an exported function's body; a panic (a bug in ordo) prints one line and gives `fallback`.
fn contain_or<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or_else(|_| {
        eprintln!("ordo: mgpu: internal error (a panic in ordo, caught at the C boundary)");
        fallback
    })
}

std::thread_local! {
    /// `mgpuSetDefaultDevice`: the CUDA device ordinal this thread's calls use.
    static DEFAULT_DEVICE: Cell<u32> = const { Cell::new(0) };
}

/// Set by the first error that loses the device (a kernel `assert`, an illegal address): every
/// later call fails the same way, so only that first one is printed.
static DEVICE_LOST: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// One line on stderr for a genuine error (upstream prints one per failed driver call), and
/// nothing for what follows from it: calls after the at-exit teardown, and calls after the
/// device was lost (the driver reported the cause once already).
#[cold]
#[inline(never)]
fn report(what: &str, e: &ordo_core::Error) {
    use std::sync::atomic::Ordering;
    if matches!(e.code, ErrorCode::Uninitialized) || DEVICE_LOST.load(Ordering::Relaxed) {
        return;
    }
    if e.code == ErrorCode::DeviceLost {
        DEVICE_LOST.store(true, Ordering::Relaxed);
    }
    eprintln!("'{what}' failed with '{e}'");
}

/// Initialises ordo once (and registers its at-exit teardown after the driver is up). Without a
/// CUDA device, says so and exits with status 1.
fn ensure_init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let rt = runtime();
        if let Err(e) = rt.init() {
            eprintln!("ordo: mgpu: initialisation failed: {e}");
            std::process::exit(1);
        }
        crate::c::lifecycle::ordo_shutdown_at_exit();
        if cuda_device_count() == 0 {
            let reason = cuda_platform()
                .and_then(|p| rt.platform_info(p).ok())
                .and_then(|i| i.absent)
                .map_or_else(|| "no device".to_string(), |e| e.message.to_string());
            eprintln!("ordo: no CUDA device ({reason}); this MLIR program needs one");
            std::process::exit(1);
        }
    });
}

fn cuda_platform() -> Option<ordo_core::Platform> {
    let rt = runtime();
    let count = rt.platform_count().ok()?;
    (0..count)
        .filter_map(|i| rt.platform(i).ok())
        .find(|&p| rt.platform_info(p).is_ok_and(|i| i.kind == BackendKind::Cuda))
}

fn cuda_device_count() -> u32 {
    cuda_platform().and_then(|p| runtime().platform_info(p).ok()).map_or(0, |i| i.device_count)
}

std::thread_local! {
    /// The device `device()` found last on this thread: its ordinal and handle (raw; 0: none).
    static DEVICE: Cell<(u32, u64)> = const { Cell::new((0, 0)) };
}

/// The calling thread's default CUDA device. The handle found last is kept per thread and
/// reused while it is live (one shared call instead of a walk over the platforms).
fn device() -> Option<Device> {
    ensure_init();
    let rt = runtime();
    let ordinal = DEFAULT_DEVICE.with(Cell::get);
    let (cached_ordinal, cached) = DEVICE.with(Cell::get);
    if cached != 0 && cached_ordinal == ordinal && rt.device_platform(Device::from_raw(cached)).is_ok() {
        return Some(Device::from_raw(cached));
    }
    let d = rt.device(cuda_platform()?, ordinal).ok()?;
    DEVICE.with(|c| c.set((ordinal, d.to_raw())));
    Some(d)
}

/// A handle made by `create`, or null after one line on stderr.
fn created(what: &str, made: ordo_core::Result<u64>) -> *mut c_void {
    match made {
        Ok(raw) => to_ptr(raw),
        Err(e) => {
            report(what, &e);
            core::ptr::null_mut()
        }
    }
}

fn to_ptr(raw: u64) -> *mut c_void {
    raw as usize as *mut c_void
}

fn from_ptr(p: *mut c_void) -> u64 {
    p as usize as u64
}

// ---- streams and events: pools per device ---------------------------------------------------

/// Idle objects by device handle (raw). Handles are never reused, so the entry of a live
/// device holds only objects of the current runtime; entries of devices from before a teardown
/// (whose objects went with it) are dropped when a new device's entry is added.
struct DevicePool<T>(Mutex<Vec<(u64, Vec<T>)>>);

impl<T: Copy + PartialEq> DevicePool<T> {
    const fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    /// Takes an idle object of the live device `d` (`keep`: leaves it in the pool, for a shared
    /// one). No runtime call: `d` was just found live.
    fn take(&self, d: Device, keep: bool) -> Option<T> {
        let mut pool = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let items = &mut pool.iter_mut().find(|(dev, _)| *dev == d.to_raw())?.1;
        if keep { items.last().copied() } else { items.pop() }
    }

    /// Gives an object of `d` back (once: one given back twice is pooled once).
    fn give(&self, d: Device, item: T) {
        let mut pool = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match pool.iter_mut().find(|(dev, _)| *dev == d.to_raw()) {
            Some((_, items)) if items.contains(&item) => {}
            Some((_, items)) => items.push(item),
            None => {
                let rt = runtime();
                pool.retain(|(dev, _)| rt.device_platform(Device::from_raw(*dev)).is_ok());
                pool.push((d.to_raw(), vec![item]));
            }
        }
    }

    /// `mgpu*Create`: an idle object of the calling thread's default device, or a new one from
    /// `make` (null after one line on stderr naming the driver call `what`).
    fn take_or_make(
        &self,
        what: &str,
        make: impl FnOnce(Device) -> ordo_core::Result<T>,
        raw: fn(T) -> u64,
    ) -> *mut c_void {
        let Some(d) = device() else { return core::ptr::null_mut() };
        match self.take(d, false) {
            Some(item) => to_ptr(raw(item)),
            None => created(what, make(d).map(raw)),
        }
    }

    /// `mgpu*Destroy`: the object goes back to its device's pool; a stale one is ignored.
    fn give_back(&self, item: T, device_of: impl FnOnce(T) -> ordo_core::Result<Device>) {
        if let Ok(d) = device_of(item) {
            self.give(d, item);
        }
    }
}

/// Idle streams (independent queues).
static STREAMS: DevicePool<Queue> = DevicePool::new();

/// Idle events: `mgpuEventDestroy` right after `mgpuStreamWaitEvent` (what the lowering emits)
/// is safe to pool, because a wait captures the event's last record when it is enqueued.
static EVENTS: DevicePool<Event> = DevicePool::new();

/// The queue that stands for a null stream, one per device (created on first use, kept).
static NULL_STREAMS: DevicePool<Queue> = DevicePool::new();

/// The queue a launch or copy runs on: the stream's own, or for a null stream the default
/// device's shared one (`None` after one line on stderr when it cannot be made).
#[inline(always)]
fn stream_or_null(stream: *mut c_void) -> Option<Queue> {
    if !stream.is_null() {
        return Some(Queue::from_raw(from_ptr(stream)));
    }
    null_stream()
}

/// The default device's shared stream for calls with a null stream (made on first use).
#[inline(never)]
fn null_stream() -> Option<Queue> {
    let d = device()?;
    if let Some(q) = NULL_STREAMS.take(d, true) {
        return Some(q);
    }
    let q = runtime().queue_create_independent(d).map_err(|e| report("cuStreamCreate", &e)).ok()?;
    NULL_STREAMS.give(d, q);
    Some(q)
}

/// `mgpuStreamCreate() -> ptr`: a stream of the default device, from the pool when one is idle.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuStreamCreate() -> *mut c_void {
    contain_or(core::ptr::null_mut(), || {
        STREAMS.take_or_make("cuStreamCreate", |d| runtime().queue_create_independent(d), Queue::to_raw)
    })
}

/// `mgpuStreamDestroy(ptr)`: the stream goes back to its device's pool (its queued work keeps
/// running, as after `cuStreamDestroy`). A stale stream is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuStreamDestroy(stream: *mut c_void) {
    contain_or((), || STREAMS.give_back(Queue::from_raw(from_ptr(stream)), |q| runtime().queue_device(q)))
}

/// `mgpuStreamSynchronize(ptr)`.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuStreamSynchronize(stream: *mut c_void) {
    contain_or((), || {
        let Some(q) = stream_or_null(stream) else { return };
        if let Err(e) = runtime().queue_synchronize(q) {
            report("cuStreamSynchronize", &e);
        }
    })
}

/// `mgpuStreamWaitEvent(ptr stream, ptr event)`.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuStreamWaitEvent(stream: *mut c_void, event: *mut c_void) {
    contain_or((), || {
        let Some(q) = stream_or_null(stream) else { return };
        if let Err(e) = runtime().queue_wait_event(q, Event::from_raw(from_ptr(event))) {
            report("cuStreamWaitEvent", &e);
        }
    })
}

// ---- events -----------------------------------------------------------------------------------

/// `mgpuEventCreate() -> ptr`: an event of the default device, from the pool when one is idle.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuEventCreate() -> *mut c_void {
    contain_or(core::ptr::null_mut(), || {
        EVENTS.take_or_make("cuEventCreate", |d| runtime().event_create(d), Event::to_raw)
    })
}

/// `mgpuEventDestroy(ptr)`: the event goes back to its device's pool. A stale event is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuEventDestroy(event: *mut c_void) {
    contain_or((), || EVENTS.give_back(Event::from_raw(from_ptr(event)), |e| runtime().event_device(e)))
}

/// `mgpuEventSynchronize(ptr)`.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuEventSynchronize(event: *mut c_void) {
    contain_or((), || {
        if let Err(e) = runtime().event_synchronize(Event::from_raw(from_ptr(event))) {
            report("cuEventSynchronize", &e);
        }
    })
}

/// `mgpuEventRecord(ptr event, ptr stream)`.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuEventRecord(event: *mut c_void, stream: *mut c_void) {
    contain_or((), || {
        let Some(q) = stream_or_null(stream) else { return };
        if let Err(e) = runtime().event_record(Event::from_raw(from_ptr(event)), q) {
            report("cuEventRecord", &e);
        }
    })
}

// ---- modules and functions --------------------------------------------------------------------

/// (module handle, function name) -> kernel handle.
type FunctionCache = HashMap<(u64, Vec<u8>), u64>;

/// Functions already looked up. Read under a shared lock.
static FUNCTIONS: RwLock<Option<FunctionCache>> = RwLock::new(None);

fn load(image: &[u8]) -> *mut c_void {
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
fn launch_dims(grid: [i64; 3], block: [i64; 3], smem: i32) -> LaunchDims {
    let dim = |v: i64| u32::try_from(v).unwrap_or(0);
    LaunchDims { grid: grid.map(dim), block: block.map(dim), shared_mem_bytes: u32::try_from(smem).unwrap_or(u32::MAX) }
}

/// CUDA's kernel parameter space is 32,764 bytes, every parameter at least one byte: no kernel
/// takes more parameters than this.
const MAX_PARAMS: usize = 32_764;

/// The argument list of a launch: `count` pointers at `params` (none when either is zero/null).
/// A count no kernel can have is `InvalidValue`, not a slice over arbitrary memory.
///
/// # Safety
/// `params` holds `count` readable pointers when it is not null and `count` is in range.
unsafe fn launch_args<'a>(params: *mut *mut c_void, count: i64) -> ordo_core::Result<KernelArgs<'a>> {
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
static PARAM_COUNTS: RwLock<Option<HashMap<u64, usize>>> = RwLock::new(None);

/// A kernel's parameter count, from the cache or the driver (then cached; handles are never
/// reused, so an entry never goes wrong).
fn param_count(kernel: Kernel) -> ordo_core::Result<usize> {
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

// ---- memory -----------------------------------------------------------------------------------

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
/// allocation table (as the driver finds it from unified addressing).
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
        let rt = runtime();
        let on_device = |p: *mut c_void| rt.mem_info(DevicePtr(from_ptr(p))).is_ok();
        let kind = match (on_device(dst), on_device(src)) {
            (true, true) => CopyKind::DeviceToDevice,
            (true, false) => CopyKind::HostToDevice,
            (false, true) => CopyKind::DeviceToHost,
            (false, false) => {
                // Host to host: after the stream's earlier work, as the driver would order it.
                if let Some(q) = stream_or_null(stream) {
                    let _ = rt.queue_synchronize(q);
                }
                // SAFETY: the caller's contract; MLIR never passes overlapping buffers here.
                unsafe { core::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), size) };
                return;
            }
        };
        let Some(q) = stream_or_null(stream) else { return };
        // SAFETY: device ranges are checked by ordo; host ranges are the caller's contract.
        if let Err(e) = unsafe { rt.memcpy(kind, from_ptr(dst), from_ptr(src), size, Some(q)) } {
            report("cuMemcpyAsync", &e);
        }
    })
}

fn memset(dst: *mut c_void, value: FillValue, count: i64, stream: *mut c_void, what: &str) {
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

fn register(ptr: *mut c_void, bytes: u64) {
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

fn unregister(ptr: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    match runtime().mem_free(DevicePtr(from_ptr(ptr))) {
        Ok(()) => {}
        Err(e) if matches!(e.code, ErrorCode::NotFound | ErrorCode::Uninitialized) => {}
        Err(e) => report("cuMemHostUnregister", &e),
    }
}

/// The first byte and the length in bytes of the elements a ranked memref descriptor (allocated
/// pointer, aligned pointer, offset, `rank` sizes, `rank` strides) can reach; `None` when it
/// reaches none or its layout cannot be described (negative strides, overflow).
///
/// # Safety
/// `descriptor` points to a ranked memref descriptor of rank `rank`.
unsafe fn memref_span(rank: i64, descriptor: *const c_void, element_bytes: i64) -> Option<(*mut c_void, u64)> {
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

// ---- tensor maps ------------------------------------------------------------------------------

/// `mgpuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType, u32 rank, ptr address,
/// const u64 *globalDim, const u64 *globalStrides, const u32 *boxDim, const u32 *elementStrides,
/// interleave, swizzle, l2Promotion, oobFill)`: `cuTensorMapEncodeTiled` into `map` (128 bytes).
///
/// # Safety
/// `map` is writable for 128 bytes; the arrays hold `rank` entries (`globalStrides`: `rank - 1`).
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the ABI's signature
pub unsafe extern "C" fn mgpuTensorMapEncodeTiled(
    map: *mut c_void,
    data_type: u32,
    rank: u32,
    address: *mut c_void,
    global_dim: *const u64,
    global_strides: *const u64,
    box_dim: *const u32,
    element_strides: *const u32,
    interleave: u32,
    swizzle: u32,
    l2_promotion: u32,
    oob_fill: u32,
) {
    contain_or((), || {
        let r = rank as usize;
        if map.is_null()
            || global_dim.is_null()
            || box_dim.is_null()
            || element_strides.is_null()
            || !(1..=5).contains(&r)
            || (r > 1 && global_strides.is_null())
        {
            let e = ordo_core::Error::new(ErrorCode::InvalidValue, "null array or rank outside 1..=5");
            return report("cuTensorMapEncodeTiled", &e);
        }
        // SAFETY: the caller's contract (lengths from the rank, checked non-null above).
        let tensor = unsafe {
            ordo_cuda::tensor_map::TiledTensor {
                data_type,
                global_address: from_ptr(address),
                global_dim: core::slice::from_raw_parts(global_dim, r),
                global_strides: if r > 1 { core::slice::from_raw_parts(global_strides, r - 1) } else { &[] },
                box_dim: core::slice::from_raw_parts(box_dim, r),
                element_strides: core::slice::from_raw_parts(element_strides, r),
                interleave,
                swizzle,
                l2_promotion,
                oob_fill,
            }
        };
        match ordo_cuda::tensor_map::encode_tiled(&tensor) {
            // SAFETY: the caller's contract (128 writable bytes).
            Ok(encoded) => unsafe { core::ptr::copy_nonoverlapping(encoded.as_ptr(), map.cast::<u64>(), 16) },
            Err(e) => report("cuTensorMapEncodeTiled", &e.into()),
        }
    })
}

/// `mgpuTensorMapEncodeTiledMemref(i64 rank, ptr descriptor, i64 dataType, i64 interleave,
/// i64 swizzle, i64 l2Promotion, i64 oobFill, ptr boxDims) -> ptr`: a tensor map over a ranked
/// memref in device memory (`nvgpu.tma.create.descriptor`), encoded and copied to device memory,
/// whose address is returned for kernels to read. That memory is an ordo allocation: the
/// teardown frees it. Null on failure (one line on stderr).
///
/// # Safety
/// `descriptor` points to a ranked memref descriptor of `rank`; `box_dims` holds `rank` values.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the ABI's signature
pub unsafe extern "C" fn mgpuTensorMapEncodeTiledMemref(
    rank: i64,
    descriptor: *const c_void,
    data_type: i64,
    interleave: i64,
    swizzle: i64,
    l2_promotion: i64,
    oob_fill: i64,
    box_dims: *const i64,
) -> *mut c_void {
    contain_or(core::ptr::null_mut(), || {
        let fail = |why: &'static str| {
            report("cuTensorMapEncodeTiled", &ordo_core::Error::new(ErrorCode::InvalidValue, why));
            core::ptr::null_mut()
        };
        let r = match usize::try_from(rank) {
            Ok(r) if (1..=5).contains(&r) && !descriptor.is_null() && !box_dims.is_null() => r,
            _ => return fail("rank outside 1..=5, or a null descriptor or box"),
        };
        let small = |v: i64| u32::try_from(v).ok();
        let (Some(dt), Some(il), Some(sw), Some(l2), Some(oob)) =
            (small(data_type), small(interleave), small(swizzle), small(l2_promotion), small(oob_fill))
        else {
            return fail("a tensor-map enumeration is out of range");
        };
        let Some(elem) = ordo_cuda::tensor_map::element_bytes(dt) else {
            return fail("unknown tensor-map data type");
        };
        let words = descriptor.cast::<i64>();
        // SAFETY: the caller's contract: two pointers, the offset, `rank` sizes, `rank` strides;
        // `box_dims` holds `rank` values.
        let (aligned, offset, sizes, strides, boxes) = unsafe {
            (
                *descriptor.cast::<*mut u8>().add(1),
                *words.add(2),
                core::slice::from_raw_parts(words.add(3), r),
                core::slice::from_raw_parts(words.add(3 + r), r),
                core::slice::from_raw_parts(box_dims, r),
            )
        };
        // The driver lists dimensions innermost first; a memref outermost first.
        let (mut dims, mut byte_strides, mut box_dim) = ([0u64; 5], [0u64; 5], [0u32; 5]);
        for i in 0..r {
            let j = r - 1 - i;
            let (Ok(size), Ok(stride), Ok(b)) =
                (u64::try_from(sizes[j]), u64::try_from(strides[j]), u32::try_from(boxes[j]))
            else {
                return fail("a negative size, stride or box dimension");
            };
            dims[i] = size;
            byte_strides[i] = stride.saturating_mul(elem);
            box_dim[i] = b;
        }
        let Some(start) = u64::try_from(offset).ok().and_then(|o| o.checked_mul(elem)) else {
            return fail("a negative offset");
        };
        let tensor = ordo_cuda::tensor_map::TiledTensor {
            data_type: dt,
            global_address: (aligned as u64).wrapping_add(start),
            global_dim: &dims[..r],
            global_strides: &byte_strides[1..r],
            box_dim: &box_dim[..r],
            element_strides: &[1; 5][..r],
            interleave: il,
            swizzle: sw,
            l2_promotion: l2,
            oob_fill: oob,
        };
        let encoded = match ordo_cuda::tensor_map::encode_tiled(&tensor) {
            Ok(m) => m,
            Err(e) => {
                report("cuTensorMapEncodeTiled", &e.into());
                return core::ptr::null_mut();
            }
        };
        let Some(d) = device() else { return core::ptr::null_mut() };
        let rt = runtime();
        let bytes: [u8; 128] = map_bytes(encoded);
        let placed = rt.mem_alloc(d, MemKind::Device, bytes.len()).and_then(|p| {
            // A copy that fails frees the memory it was for.
            rt.copy_to_device(p, &bytes).map(|()| p.0).inspect_err(|_| {
                let _ = rt.mem_free(p);
            })
        });
        created("cuMemAlloc", placed)
    })
}

/// The map's bytes, in memory order.
fn map_bytes(map: [u64; 16]) -> [u8; 128] {
    let mut bytes = [0u8; 128];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(map) {
        chunk.copy_from_slice(&word.to_ne_bytes());
    }
    bytes
}

/// `mgpuSetDefaultDevice(i32 device)`: the CUDA device this thread's later calls use.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuSetDefaultDevice(device: i32) {
    contain_or((), || {
        ensure_init();
        match u32::try_from(device) {
            Ok(d) if d < cuda_device_count() => DEFAULT_DEVICE.with(|c| c.set(d)),
            _ => report(
                "cuDeviceGet",
                &ordo_core::Error::new(ErrorCode::InvalidValue, "no CUDA device with that ordinal"),
            ),
        }
    })
}
