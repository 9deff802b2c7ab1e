//! Driver loading, devices and their primary contexts.
//!
//! `init` checks that the driver library can be loaded (`is_culib_present`, before any other
//! cudarc call: cudarc panics without the library) and that it exports every symbol ordo calls
//! (cudarc also panics on a missing symbol), then `cuInit` and one retained primary context per
//! device. Contexts live in a fixed array of atomics so that the hot path (making a device's
//! context current before a launch) takes no lock.

use std::cell::Cell;
use std::ffi::c_int;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys::{self, CUcontext, CUctx_st, CUdevice_attribute, CUresult};
use ordo_core::{BackendError, BackendResult, DeviceInfo, ErrorCode, InfoValue, LaunchLimits};

use crate::conv::{check, check_release, code, name};

/// The most CUDA devices one process can use through ordo.
pub const MAX_CUDA_DEVICES: usize = 64;

/// `cuLaunchKernel` (cuda.h; cudarc's binding has the same type).
pub(crate) type LaunchKernelFn = unsafe extern "C" fn(
    sys::CUfunction,
    std::ffi::c_uint,
    std::ffi::c_uint,
    std::ffi::c_uint,
    std::ffi::c_uint,
    std::ffi::c_uint,
    std::ffi::c_uint,
    std::ffi::c_uint,
    sys::CUstream,
    *mut *mut std::ffi::c_void,
    *mut *mut std::ffi::c_void,
) -> CUresult;

/// cudarc's `cuLaunchKernel` binding as a `LaunchKernelFn` (before the first init's lookup).
///
/// # Safety
/// As `cuLaunchKernel`.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn launch_through_cudarc(
    f: sys::CUfunction,
    gx: std::ffi::c_uint,
    gy: std::ffi::c_uint,
    gz: std::ffi::c_uint,
    bx: std::ffi::c_uint,
    by: std::ffi::c_uint,
    bz: std::ffi::c_uint,
    shared: std::ffi::c_uint,
    stream: sys::CUstream,
    params: *mut *mut std::ffi::c_void,
    extra: *mut *mut std::ffi::c_void,
) -> CUresult {
    // SAFETY: forwarded contract.
    unsafe { sys::cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra) }
}

/// Every driver symbol ordo calls. A driver missing one is reported as absent.
const REQUIRED_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemAllocHost_v2",
    "cuMemFreeHost",
    "cuMemAllocManaged",
    "cuMemAllocAsync",
    "cuStreamBeginCapture_v2",
    "cuStreamEndCapture",
    "cuGraphInstantiateWithFlags",
    "cuGraphDestroy",
    "cuGraphLaunch",
    "cuGraphExecDestroy",
    "cuMemFreeAsync",
    "cuDeviceGetDefaultMemPool",
    "cuMemPoolSetAttribute",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemcpyDtoD_v2",
    "cuMemcpyPeer",
    "cuMemcpyPeerAsync",
    "cuDeviceCanAccessPeer",
    "cuDeviceGetP2PAttribute",
    "cuCtxEnablePeerAccess",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemsetD8_v2",
    "cuMemsetD16_v2",
    "cuMemsetD32_v2",
    "cuMemsetD8Async",
    "cuMemsetD16Async",
    "cuMemsetD32Async",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamQuery",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventQuery",
    "cuEventElapsedTime_v2",
    "cuModuleLoadDataEx",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuFuncSetAttribute",
    "cuLaunchKernel",
];

/// Checks that libcuda loads and exports every required symbol, without letting cudarc panic.
fn driver_available() -> Result<(), &'static str> {
    // SAFETY: `is_culib_present` only tries to open candidate library names.
    if !unsafe { sys::is_culib_present() } {
        return Err("the CUDA driver library (libcuda.so) was not found");
    }
    // SAFETY: the library is present (checked above), so `culib` loads it without panicking; it
    // stays loaded for the life of the process.
    let lib = unsafe { sys::culib() };
    for symbol in REQUIRED_SYMBOLS {
        // SAFETY: only the symbol's presence is checked; the pointer is not used.
        if unsafe { lib.get::<*const ()>(symbol.as_bytes()) }.is_err() {
            return Err("the CUDA driver is too old: it lacks a function ordo uses");
        }
    }
    Ok(())
}

std::thread_local! {
    /// The context this thread last made current through ordo, and the init epoch it belongs
    /// to. Launches trust it instead of asking the driver (`cuCtxGetCurrent` costs a driver call
    /// per launch); if other code switched contexts meanwhile, the driver rejects the launch
    /// with a context error, and the launch makes the context current and retries once.
    static CURRENT: Cell<(usize, u64)> = const { Cell::new((0, 0)) };
}

/// A context the program had current before an ordo call switched to its primary context: put
/// back when the call is done (null: nothing to put back). The thread's record then no longer
/// names ordo's context, so the next launch checks again instead of trusting it.
pub(crate) struct ProgramContext(CUcontext);

impl Drop for ProgramContext {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the program had this context current a moment ago; if it has gone since,
            // the driver refuses it with an error, which changes nothing.
            let _ = unsafe { sys::cuCtxSetCurrent(self.0) };
            CURRENT.set((0, 0));
        }
    }
}

/// The devices' primary contexts (null when not retained). `repr(C)`, aligned to a cache line:
/// what a launch reads (`count`, the driver's `cuLaunchKernel`, then the first devices'
/// contexts) shares the struct's first line.
#[repr(C, align(64))]
pub(crate) struct Devices {
    /// Devices up (0 when down). With exactly one, ordo has one context, so a launch is tried
    /// with whatever context the thread has current (see `make_current_trusted`).
    count: AtomicU32,
    /// Between a successful `init` and `deinit` (one backend serves one runtime at a time).
    up: AtomicBool,
    /// The driver's `cuLaunchKernel`, looked up in the library cudarc loaded at the first init
    /// (the library stays loaded for the life of the process), so that a launch reads it from
    /// this line rather than from cudarc's per-function static.
    launch_kernel: OnceLock<LaunchKernelFn>,
    contexts: [AtomicPtr<CUctx_st>; MAX_CUDA_DEVICES],
    /// Each device's launch limits, read from the driver at init.
    limits: Mutex<[LaunchLimits; MAX_CUDA_DEVICES]>,
    /// Advances at every init, so a context pointer reused after a re-init is never trusted.
    epoch: AtomicU64,
    /// Per device, bit `j`: whether its context's access to device `j`'s memory was settled
    /// (`peer_tried`) and enabled (`peer_enabled`), since the device's context was retained.
    peer_tried: [AtomicU64; MAX_CUDA_DEVICES],
    peer_enabled: [AtomicU64; MAX_CUDA_DEVICES],
}

impl Devices {
    pub(crate) const fn new() -> Self {
        Self {
            count: AtomicU32::new(0),
            up: AtomicBool::new(false),
            launch_kernel: OnceLock::new(),
            contexts: [const { AtomicPtr::new(ptr::null_mut()) }; MAX_CUDA_DEVICES],
            limits: Mutex::new([LaunchLimits::CUDA; MAX_CUDA_DEVICES]),
            epoch: AtomicU64::new(0),
            peer_tried: [const { AtomicU64::new(0) }; MAX_CUDA_DEVICES],
            peer_enabled: [const { AtomicU64::new(0) }; MAX_CUDA_DEVICES],
        }
    }

    /// Loads the driver, initialises it and retains every device's primary context. `Busy` when
    /// already initialised.
    pub(crate) fn init(&self) -> BackendResult<u32> {
        if self.up.swap(true, Ordering::AcqRel) {
            return Err(BackendError::new(
                ErrorCode::Busy,
                0,
                "the CUDA backend is already initialised (by another runtime)",
            ));
        }
        let result = self.bring_up();
        if result.is_err() {
            self.up.store(false, Ordering::Release);
        }
        result
    }

    fn bring_up(&self) -> BackendResult<u32> {
        driver_available().map_err(BackendError::not_present)?;
        // SAFETY: the driver and `cuInit` are present (checked above).
        let r = unsafe { sys::cuInit(0) };
        if r != CUresult::CUDA_SUCCESS {
            return Err(BackendError::new(code(r), r as i64, name(r)).in_call("cuInit"));
        }
        let mut count: c_int = 0;
        // SAFETY: valid out-pointer.
        check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut count) })?;
        if count <= 0 {
            return Err(BackendError::not_present("no CUDA devices"));
        }
        let count = (count as usize).min(MAX_CUDA_DEVICES);
        if self.launch_kernel.get().is_none() {
            // SAFETY: the driver library is loaded (checked above); `cuLaunchKernel` has this
            // type in cuda.h (the type of cudarc's own binding).
            if let Ok(f) = unsafe { sys::culib().get::<LaunchKernelFn>(b"cuLaunchKernel\0") } {
                let _ = self.launch_kernel.set(*f);
            }
        }
        for ordinal in 0..count {
            if let Err(e) = self.read_limits(ordinal).and_then(|()| self.retain(ordinal)) {
                for done in (0..ordinal).rev() {
                    let _ = self.release(done as u32);
                }
                return Err(e);
            }
        }
        self.count.store(count as u32, Ordering::Release);
        self.epoch.fetch_add(1, Ordering::AcqRel);
        Ok(count as u32)
    }

    fn read_limits(&self, ordinal: usize) -> BackendResult<()> {
        let mut dev = 0;
        // SAFETY: valid out-pointer; ordinal < device count.
        check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, ordinal as c_int) })?;
        let attribute = |a: CUdevice_attribute| -> BackendResult<u32> {
            let mut v: c_int = 0;
            // SAFETY: valid out-pointer, device and attribute.
            check("cuDeviceGetAttribute", unsafe { sys::cuDeviceGetAttribute(&mut v, a, dev) })?;
            Ok(v.max(1) as u32)
        };
        use CUdevice_attribute::*;
        let limits = LaunchLimits {
            grid: [
                attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            block: [
                attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            threads_per_block: attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            threads_per_launch: u64::MAX,
        };
        self.limits.lock().unwrap_or_else(|p| p.into_inner())[ordinal] = limits;
        Ok(())
    }

    /// The launch limits read at init (CUDA's documented ones for an ordinal never read).
    pub(crate) fn launch_limits(&self, ordinal: u32) -> LaunchLimits {
        let limits = self.limits.lock().unwrap_or_else(|p| p.into_inner());
        limits.get(ordinal as usize).copied().unwrap_or(LaunchLimits::CUDA)
    }

    fn retain(&self, ordinal: usize) -> BackendResult<()> {
        let mut dev = 0;
        // SAFETY: valid out-pointer; ordinal < device count.
        check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, ordinal as c_int) })?;
        let mut ctx: CUcontext = ptr::null_mut();
        // SAFETY: valid out-pointer and device.
        check("cuDevicePrimaryCtxRetain", unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) })?;
        self.contexts[ordinal].store(ctx, Ordering::Release);
        crate::memory::configure_pool(dev);
        // A context retained anew (this init) has its peer access to be settled again.
        self.peer_tried[ordinal].store(0, Ordering::Release);
        self.peer_enabled[ordinal].store(0, Ordering::Release);
        Ok(())
    }

    /// Enables `ordinal`'s context's access to `peer`'s memory where the driver allows it
    /// (`cuDeviceCanAccessPeer`), once per pair while the contexts live: a copy between them
    /// then goes over the link (NVLink, PCIe peer-to-peer) instead of through host memory.
    /// Returns whether access is enabled.
    pub(crate) fn enable_peer(&self, ordinal: u32, peer: u32) -> BackendResult<bool> {
        let (i, j) = (ordinal as usize, peer as usize);
        if i >= MAX_CUDA_DEVICES || j >= MAX_CUDA_DEVICES {
            return Err(BackendError::new(ErrorCode::InvalidArgument, 0, "CUDA device ordinal out of range"));
        }
        let bit = 1u64 << j;
        if self.peer_tried[i].load(Ordering::Acquire) & bit != 0 {
            return Ok(self.peer_enabled[i].load(Ordering::Acquire) & bit != 0);
        }
        let can = self.can_access_peer(ordinal, peer)?;
        if can {
            let peer_ctx = self.context(peer)?;
            let _current = self.make_current(ordinal)?;
            // SAFETY: a retained primary context of another device; flags must be 0.
            let r = unsafe { sys::cuCtxEnablePeerAccess(peer_ctx, 0) };
            if r != CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
                check("cuCtxEnablePeerAccess", r)?;
            }
            self.peer_enabled[i].fetch_or(bit, Ordering::AcqRel);
        }
        self.peer_tried[i].fetch_or(bit, Ordering::AcqRel);
        Ok(can)
    }

    /// `cuDeviceCanAccessPeer` for two ordinals.
    fn can_access_peer(&self, ordinal: u32, peer: u32) -> BackendResult<bool> {
        let (a, b) = (Self::device(ordinal)?, Self::device(peer)?);
        let mut can = 0;
        // SAFETY: valid out-pointer and devices.
        check("cuDeviceCanAccessPeer", unsafe { sys::cuDeviceCanAccessPeer(&mut can, a, b) })?;
        Ok(can != 0)
    }

    fn device(ordinal: u32) -> BackendResult<sys::CUdevice> {
        let mut dev = 0;
        // SAFETY: valid out-pointer.
        check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, ordinal as c_int) })?;
        Ok(dev)
    }

    /// What the driver tells of the link from `ordinal` to `peer` (`cuDeviceGetP2PAttribute`).
    pub(crate) fn peer_access(&self, ordinal: u32, peer: u32) -> BackendResult<ordo_core::PeerAccess> {
        use sys::CUdevice_P2PAttribute_enum as Attr;
        let (a, b) = (Self::device(ordinal)?, Self::device(peer)?);
        let attribute = |attr: Attr| -> BackendResult<i32> {
            let mut v = 0;
            // SAFETY: valid out-pointer and devices.
            check("cuDeviceGetP2PAttribute", unsafe { sys::cuDeviceGetP2PAttribute(&mut v, attr, a, b) })?;
            Ok(v)
        };
        Ok(ordo_core::PeerAccess {
            direct: self.can_access_peer(ordinal, peer)?,
            rank: attribute(Attr::CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK)?.max(0) as u32,
            native_atomics: attribute(Attr::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED)? != 0,
            same_device: false,
        })
    }

    /// Releases a device's primary context (destroying it when ordo held the last reference).
    pub(crate) fn release(&self, ordinal: u32) -> BackendResult<()> {
        let slot = self.slot(ordinal)?;
        slot.store(ptr::null_mut(), Ordering::Release);
        let mut dev = 0;
        // SAFETY: valid out-pointer.
        check_release("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, ordinal as c_int) })?;
        // SAFETY: the device's primary context was retained once by `retain`.
        check_release("cuDevicePrimaryCtxRelease_v2", unsafe { sys::cuDevicePrimaryCtxRelease_v2(dev) })
    }

    pub(crate) fn deinit(&self) {
        self.count.store(0, Ordering::Release);
        self.up.store(false, Ordering::Release);
    }

    /// In a forked child: forgets the contexts (not usable there) without a driver call.
    pub(crate) fn forget(&self) {
        for slot in &self.contexts {
            slot.store(ptr::null_mut(), Ordering::Release);
        }
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.deinit();
    }

    /// The driver's `cuLaunchKernel` (cudarc's binding until the first init looked it up).
    #[inline(always)]
    pub(crate) fn launch_kernel(&self) -> LaunchKernelFn {
        match self.launch_kernel.get() {
            Some(&f) => f,
            None => {
                ordo_core::cold_path();
                launch_through_cudarc
            }
        }
    }

    fn slot(&self, ordinal: u32) -> BackendResult<&AtomicPtr<CUctx_st>> {
        self.contexts.get(ordinal as usize).ok_or(BackendError::new(
            ErrorCode::InvalidArgument,
            0,
            "CUDA device ordinal out of range",
        ))
    }

    /// Makes `ordinal`'s primary context current on this thread for one call (no driver call
    /// when it already is). The guard puts back a context the program had current; a thread
    /// that had none keeps the primary context current.
    #[inline]
    pub(crate) fn make_current(&self, ordinal: u32) -> BackendResult<ProgramContext> {
        self.make_current_checked(ordinal, check)
    }

    /// `make_current` for release calls: a driver that is already gone counts as released.
    pub(crate) fn make_current_for_release(&self, ordinal: u32) -> BackendResult<ProgramContext> {
        self.make_current_checked(ordinal, check_release)
    }

    #[inline]
    fn make_current_checked(
        &self,
        ordinal: u32,
        check: fn(&'static str, CUresult) -> BackendResult<()>,
    ) -> BackendResult<ProgramContext> {
        if crate::queue::in_host_function() {
            return Err(host_function_call());
        }
        let ctx = self.context(ordinal)?;
        let mut current: CUcontext = ptr::null_mut();
        // SAFETY: valid out-pointer.
        check("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut current) })?;
        if current == ctx {
            CURRENT.set((ctx as usize, self.epoch.load(Ordering::Acquire)));
            return Ok(ProgramContext(ptr::null_mut()));
        }
        // SAFETY: `ctx` is a retained primary context.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) })?;
        CURRENT.set((ctx as usize, self.epoch.load(Ordering::Acquire)));
        Ok(ProgramContext(current))
    }

    #[inline]
    pub(crate) fn context(&self, ordinal: u32) -> BackendResult<CUcontext> {
        let ctx = self.slot(ordinal)?.load(Ordering::Acquire);
        if ctx.is_null() {
            return Err(BackendError::new(ErrorCode::InvalidArgument, 0, "CUDA device is not initialised"));
        }
        Ok(ctx)
    }

    /// The launch path, without a driver call when it can: returns `None` when the launch may
    /// go ahead with the thread's current context as it is (a context error from the driver is
    /// then retried once after `make_current`), else the guard of `make_current`.
    ///
    /// With one device, ordo has one context, so the launch is simply tried: on a thread that
    /// has it current (every thread after its first ordo call, unless other code switched) it
    /// runs; on any other, the driver refuses it without enqueuing anything. With several, this
    /// thread's record says whether the device's context is the one ordo left current (so
    /// launches alternating between devices switch first instead of failing first).
    #[inline(always)]
    pub(crate) fn make_current_trusted(&self, ordinal: u32) -> BackendResult<Option<ProgramContext>> {
        // One branch for the common case (one device, its context up): the slot read is
        // clamped into the table and the checks combined.
        let index = (ordinal as usize).min(MAX_CUDA_DEVICES - 1);
        let ctx = self.contexts[index].load(Ordering::Acquire);
        // The differences OR-ed together: compilers turn even `&` on booleans into a branch each.
        let differences = usize::from(ordinal as usize >= MAX_CUDA_DEVICES)
            | usize::from(ctx.is_null())
            | (self.count.load(Ordering::Acquire) ^ 1) as usize;
        if differences == 0 {
            return Ok(None);
        }
        ordo_core::cold_path();
        self.make_current_trusted_slow(ordinal)
    }

    /// The driver's `cuLaunchKernel` when `ordinal`'s launches need no context call until the
    /// device is released: one device up, its context retained, the function looked up (then
    /// `make_current_trusted` makes no call either, and a thread with another context current
    /// gets the driver's error, on which `launching` makes the context current and retries).
    pub(crate) fn single_device_launch(&self, ordinal: u32) -> Option<LaunchKernelFn> {
        let one = self.count.load(Ordering::Acquire) == 1
            && self.contexts.get(ordinal as usize).is_some_and(|c| !c.load(Ordering::Acquire).is_null());
        if one { self.launch_kernel.get().copied() } else { None }
    }

    /// For driver calls that do not check the thread's current context: `cuGraphExecKernelNodeSetParams`
    /// on a thread with no context current faults inside the driver instead of returning an
    /// error (a graph updated from a thread whose first ordo call that is). No driver call when
    /// this thread's record says the device's context is current, else `make_current`.
    #[inline]
    pub(crate) fn make_current_cached(&self, ordinal: u32) -> BackendResult<Option<ProgramContext>> {
        if crate::queue::in_host_function() {
            return Err(host_function_call());
        }
        let ctx = self.context(ordinal)?;
        if CURRENT.get() == (ctx as usize, self.epoch.load(Ordering::Acquire)) {
            return Ok(None);
        }
        self.make_current(ordinal).map(Some)
    }

    /// `make_current_trusted` with several devices, or for a bad ordinal.
    #[inline(never)]
    fn make_current_trusted_slow(&self, ordinal: u32) -> BackendResult<Option<ProgramContext>> {
        if crate::queue::in_host_function() {
            return Err(host_function_call());
        }
        let ctx = self.context(ordinal)?;
        if self.count.load(Ordering::Acquire) == 1
            || CURRENT.get() == (ctx as usize, self.epoch.load(Ordering::Acquire))
        {
            return Ok(None);
        }
        self.make_current(ordinal).map(Some)
    }

    pub(crate) fn info(&self, ordinal: u32, key: DeviceInfo) -> BackendResult<InfoValue> {
        self.context(ordinal)?;
        if let Some(v) = self.launch_limits(ordinal).info(key) {
            return Ok(v);
        }
        let mut dev = 0;
        // SAFETY: valid out-pointer.
        check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, ordinal as c_int) })?;
        let attribute = |a: CUdevice_attribute| -> BackendResult<u64> {
            let mut v: c_int = 0;
            // SAFETY: valid out-pointer, device and attribute.
            check("cuDeviceGetAttribute", unsafe { sys::cuDeviceGetAttribute(&mut v, a, dev) })?;
            Ok(v as u64)
        };
        use CUdevice_attribute::*;
        Ok(match key {
            DeviceInfo::Name => {
                let mut buf = [0 as std::ffi::c_char; 256];
                // SAFETY: the buffer is valid for its length; the driver NUL-terminates.
                check("cuDeviceGetName", unsafe { sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, dev) })?;
                // SAFETY: NUL-terminated by the driver within the buffer.
                let text = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
                InfoValue::text(&text.to_string_lossy())
            }
            DeviceInfo::ComputeCapability => InfoValue::Version(
                attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32,
                attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32,
            ),
            DeviceInfo::TotalMemory => {
                let mut bytes = 0usize;
                // SAFETY: valid out-pointer and device.
                check("cuDeviceTotalMem_v2", unsafe { sys::cuDeviceTotalMem_v2(&mut bytes, dev) })?;
                InfoValue::Int(bytes as u64)
            }
            DeviceInfo::MultiprocessorCount => InfoValue::Int(attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?),
            DeviceInfo::MaxSharedMemoryPerBlock => {
                InfoValue::Int(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?)
            }
            DeviceInfo::MaxSharedMemoryPerBlockOptin => {
                InfoValue::Int(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?)
            }
            DeviceInfo::WarpSize => InfoValue::Int(attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE)?),
            DeviceInfo::Vendor => InfoValue::text("NVIDIA"),
            DeviceInfo::DriverVersion => {
                let mut v: c_int = 0;
                // SAFETY: valid out-pointer.
                check("cuDriverGetVersion", unsafe { sys::cuDriverGetVersion(&mut v) })?;
                InfoValue::text(&format!("{}.{}", v / 1000, (v % 1000) / 10))
            }
            DeviceInfo::Uuid => {
                // SAFETY: an all-zero CUuuid (plain bytes) is valid.
                let mut uuid: sys::CUuuid = unsafe { std::mem::zeroed() };
                // SAFETY: valid out-pointer and device.
                check("cuDeviceGetUuid_v2", unsafe { sys::cuDeviceGetUuid_v2(&mut uuid, dev) })?;
                let hex: String = uuid.bytes.iter().map(|b| format!("{:02x}", *b as u8)).collect();
                InfoValue::text(&format!("GPU-{hex}"))
            }
            // The driver reports kHz.
            DeviceInfo::ClockRateMhz => InfoValue::Int(attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? / 1000),
            DeviceInfo::MemoryClockRateMhz => InfoValue::Int(attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? / 1000),
            DeviceInfo::VendorId => InfoValue::Int(0x10de),
            // Answered from the launch limits above.
            _ => return Err(BackendError::new(ErrorCode::Internal, 0, "launch limit not answered")),
        })
    }
}

/// The refusal of a driver call from inside a host function (`cuLaunchHostFunc` forbids it; a
/// synchronising call there would wait for itself).
#[cold]
fn host_function_call() -> BackendError {
    BackendError::new(
        ordo_core::ErrorCode::Busy,
        0,
        "a CUDA host function may not call the CUDA driver: the call is refused (cuLaunchHostFunc's rule)",
    )
}
