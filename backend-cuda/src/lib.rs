//! `ordo-cuda`: the CUDA backend of ordo, over cudarc's driver API with the driver library
//! loaded at run time (no CUDA toolkit needed to build; no driver at run time means an absent
//! platform, never a panic).
//!
//! Each device's primary context is retained at init and released at teardown; every call makes
//! its device's context current first (checked with `cuCtxGetCurrent`, so a thread that already
//! has it pays no switch). A context the program had current is put back after the call; a
//! thread that had none keeps ordo's primary context current (launches trust that record). Queues are blocking
//! streams, so the legacy default stream, which calls without a queue use, is ordered after all
//! work already on them; those calls also wait for their own work before returning. Events time.
//! Files: `device.rs` (driver, contexts, info, launch limits), `memory.rs`, `queue.rs` (streams,
//! events), `program.rs` (image checks, modules, kernels, launch), `collectives.rs` and `nccl.rs`
//! (collectives over NCCL), `conv.rs` (`CUresult`
//! translation).

mod collectives;
mod conv;
mod ctors;
mod device;
mod global;
mod graph;
mod image;
mod memory;
mod nccl;
pub mod nvrtc;
mod params;
mod program;
mod queue;
pub mod tensor_map;

use crate::device::LaunchKernelFn;
use ordo_core::{
    Backend, BackendKind, BackendResult, Capabilities, CopyKind, DeviceInfo, FillValue, HostFn, InfoValue, KernelArgs,
    LaunchDims, LaunchLimits, MemKind, ParamLayout,
};

pub use device::MAX_CUDA_DEVICES;
pub use program::DEFAULT_SHARED_MEMORY_LIMIT;

/// ordo's built-in CUDA program (PTX): `vector_add_f32`, `reduce_sum_f32`, `empty`, `spin_cycles`.
pub const BUILTIN_PTX: &str = include_str!("builtin.ptx");

/// The CUDA backend. Build one in a `static` with `CudaBackend::new()`.
pub struct CudaBackend {
    devices: device::Devices,
    kernels: program::KernelRegistry,
    nccl: nccl::Nccl,
}

impl core::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CudaBackend").finish_non_exhaustive()
    }
}

impl CudaBackend {
    /// A CUDA backend (nothing is loaded until `init`).
    pub const fn new() -> Self {
        Self { devices: device::Devices::new(), kernels: program::KernelRegistry::new(), nccl: nccl::Nccl::new() }
    }

    /// Takes the detail of this thread's last failed CUDA program load (the JIT error log), or
    /// an empty string; it is cleared, so it is reported once, with the failure that set it.
    pub fn take_last_error_detail() -> String {
        program::take_detail()
    }

    /// Clears this thread's CUDA error detail (before a call whose failure should not be
    /// explained by an older one).
    pub fn clear_last_error_detail() {
        program::set_detail("");
    }

    /// Runs `launch` in the device's context as this thread last made it current; if other code
    /// switched the thread's context since and the driver rejected the launch (nothing was
    /// enqueued), sets the context and launches once more.
    #[inline(always)]
    fn launching(&self, device: u32, launch: impl Fn(LaunchKernelFn) -> BackendResult<()>) -> BackendResult<()> {
        let program_context = self.devices.make_current_trusted(device)?;
        let cu_launch_kernel = self.devices.launch_kernel();
        match launch(cu_launch_kernel) {
            Err(e) if program_context.is_none() && conv::is_wrong_context(e.native) => {
                let _program_context = self.devices.make_current(device)?;
                launch(cu_launch_kernel)
            }
            other => other,
        }
    }

    /// `call` in the device's context, without a driver call when the thread's cached current
    /// context is the device's (as `launching`; a context error is retried once after
    /// `make_current`).
    fn in_context<R>(&self, device: u32, call: impl Fn() -> BackendResult<R>) -> BackendResult<R> {
        let program_context = self.devices.make_current_trusted(device)?;
        match call() {
            Err(e) if program_context.is_none() && conv::is_wrong_context(e.native) => {
                let _program_context = self.devices.make_current(device)?;
                call()
            }
            other => other,
        }
    }
}

impl Default for CudaBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn tensor_map_encode_tiled(
        &self,
        _device: u32,
        tensor: &ordo_core::TensorMapTiled<'_>,
    ) -> BackendResult<ordo_core::TensorMap> {
        // An encoding only (no context, no memory): the device's capability is the driver's check.
        tensor_map::encode_tiled(tensor)
    }

    fn take_load_log(&self, sink: &mut dyn FnMut(&str)) {
        let log = program::take_detail();
        if !log.is_empty() {
            sink(&log);
        }
    }

    fn collectives(&self) -> Option<&dyn ordo_core::Collectives> {
        Some(self)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::ASYNC_QUEUES
            | Capabilities::EVENT_TIMING
            | Capabilities::MANAGED_MEMORY
            | Capabilities::SHARED_MEMORY
    }

    fn init(&self) -> BackendResult<u32> {
        self.devices.init()
    }

    unsafe fn deinit(&self) -> BackendResult<()> {
        self.kernels.clear();
        ctors::forget_all();
        self.nccl.forget();
        self.devices.deinit();
        queue::forget_host_calls();
        Ok(())
    }

    unsafe fn forget_after_fork(&self) {
        // The kernel registry's lock may be held by a thread of the parent: it is not touched
        // (a re-init in the child does not reach it: CUDA refuses to work in a forked child).
        self.nccl.forget();
        self.devices.forget();
    }

    unsafe fn device_release(&self, device: u32) -> BackendResult<()> {
        self.devices.release(device)
    }

    fn device_info(&self, device: u32, key: DeviceInfo) -> BackendResult<InfoValue> {
        self.devices.info(device, key)
    }

    fn launch_limits(&self, device: u32) -> LaunchLimits {
        self.devices.launch_limits(device)
    }

    fn mem_alloc(&self, device: u32, kind: MemKind, size: usize) -> BackendResult<u64> {
        let _program_context = self.devices.make_current(device)?;
        memory::alloc(kind, size)
    }

    unsafe fn mem_free(&self, device: u32, kind: MemKind, addr: u64, _size: usize) -> BackendResult<()> {
        let _program_context = self.devices.make_current_for_release(device)?;
        // SAFETY: forwarded contract (a live allocation of this device, now current).
        unsafe { memory::free(kind, addr) }
    }

    unsafe fn queue_begin_capture(&self, device: u32, queue: u64) -> BackendResult<()> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: a live queue of the device, not capturing (the runtime's guarantee).
        unsafe { graph::begin(queue::stream(queue)) }
    }

    unsafe fn queue_end_capture(&self, device: u32, queue: u64) -> BackendResult<u64> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: a live queue of the device that is capturing.
        unsafe { graph::end(queue::stream(queue)) }
    }

    unsafe fn graph_launch(&self, device: u32, graph: u64, queue: u64) -> BackendResult<()> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: a live graph and queue of the device.
        unsafe { graph::launch(graph, queue::stream(queue)) }
    }

    unsafe fn graph_kernels(&self, _device: u32, graph: u64, each: &mut dyn FnMut(u64)) -> BackendResult<()> {
        // SAFETY: a live graph of the device.
        unsafe { graph::kernels(graph, each) };
        Ok(())
    }

    unsafe fn graph_set_args(
        &self,
        device: u32,
        graph: u64,
        index: u32,
        kernel: u64,
        args: &KernelArgs<'_>,
    ) -> BackendResult<()> {
        // Not `in_context`: the driver does not refuse an update on a thread without the context
        // (it faults), so the context is made current unless this thread's record says it is.
        let _program_context = self.devices.make_current_cached(device)?;
        // SAFETY: a live graph and kernel of the device; the arguments are the caller's contract.
        unsafe { graph::set_args(graph, index, kernel, args) }
    }

    unsafe fn graph_destroy(&self, device: u32, graph: u64) -> BackendResult<()> {
        let _program_context = self.devices.make_current_for_release(device)?;
        // SAFETY: a live graph of the device, never passed again.
        unsafe { graph::destroy(graph) }
    }

    unsafe fn mem_alloc_on(&self, device: u32, queue: u64, size: usize) -> BackendResult<u64> {
        // As a launch: no context call while one device is up (a thread with another context
        // current gets the driver's error, and the call is made again in the device's).
        // SAFETY: a live queue of the device.
        self.in_context(device, || unsafe { memory::alloc_on(size, queue::stream(queue)) })
    }

    unsafe fn mem_free_on(&self, device: u32, queue: u64, addr: u64, _size: usize) -> BackendResult<()> {
        let stream = queue::stream(queue);
        if let Ok(None) = self.devices.make_current_trusted(device) {
            // SAFETY: forwarded contract (live queue-ordered memory of this device, a live queue).
            match unsafe { memory::free_on(addr, stream) } {
                // Another context is current on this thread: nothing was freed; again below.
                Err(e) if conv::is_wrong_context(e.native) => {}
                done => return done,
            }
        }
        let _program_context = self.devices.make_current_for_release(device)?;
        // SAFETY: as above.
        unsafe { memory::free_on(addr, stream) }
    }

    fn ordered_concurrent(&self, _device: u32) -> bool {
        // The pool calls are thread-safe, and the host never touches device memory itself: a
        // copy racing a free gets the driver's answer for pool memory.
        true
    }

    unsafe fn host_register(&self, device: u32, addr: u64, size: usize) -> BackendResult<()> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: forwarded contract (host memory valid until unregistered; no overlap).
        unsafe { memory::register(addr, size) }
    }

    unsafe fn memcpy(
        &self,
        device: u32,
        kind: CopyKind,
        dst: u64,
        src: u64,
        size: usize,
        queue: Option<u64>,
    ) -> BackendResult<()> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: forwarded contract.
        unsafe { memory::copy(kind, dst, src, size, queue.map(queue::stream)) }
    }

    unsafe fn memcpy_peer(
        &self,
        dst_device: u32,
        dst: u64,
        src_device: u32,
        src: u64,
        size: usize,
        queue: Option<(u32, u64)>,
    ) -> BackendResult<()> {
        // Access both ways, so that the copy (and kernels given the other's pointers) go over the
        // link; where the driver does not allow it the copy goes through host memory (its own).
        self.devices.enable_peer(dst_device, src_device)?;
        self.devices.enable_peer(src_device, dst_device)?;
        let (dst_ctx, src_ctx) = (self.devices.context(dst_device)?, self.devices.context(src_device)?);
        if queue.is_none() {
            // Without a queue: after the source device's earlier work (the destination's: the
            // legacy default stream `cuMemcpyPeer` runs on, in its context, below).
            let _source = self.devices.make_current(src_device)?;
            memory::wait_for_earlier_work()?;
        }
        let _current = self.devices.make_current(queue.map_or(dst_device, |(d, _)| d))?;
        // SAFETY: forwarded contract: both ranges in live allocations, a live queue.
        unsafe { memory::copy_peer(dst, dst_ctx, src, src_ctx, size, queue.map(|(_, q)| queue::stream(q))) }
    }

    fn peer_access(&self, device: u32, peer: u32) -> BackendResult<ordo_core::PeerAccess> {
        self.devices.peer_access(device, peer)
    }

    unsafe fn fill(
        &self,
        device: u32,
        dst: u64,
        value: FillValue,
        count: usize,
        queue: Option<u64>,
    ) -> BackendResult<()> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: forwarded contract.
        unsafe { memory::fill(dst, value, count, queue.map(queue::stream)) }
    }

    fn queue_create(&self, device: u32) -> BackendResult<u64> {
        let _program_context = self.devices.make_current(device)?;
        queue::queue_create(false)
    }

    fn queue_create_independent(&self, device: u32) -> BackendResult<u64> {
        let _program_context = self.devices.make_current(device)?;
        queue::queue_create(true)
    }

    unsafe fn queue_destroy(&self, device: u32, q: u64) -> BackendResult<()> {
        let _program_context = self.devices.make_current_for_release(device)?;
        // SAFETY: forwarded contract (live objects of this device, now current).
        unsafe { queue::queue_destroy(q) }
    }

    unsafe fn queue_synchronize(&self, device: u32, q: u64) -> BackendResult<()> {
        let _program_context = self.devices.make_current_for_release(device)?;
        if self.nccl.any_on(device) {
            // A collective whose peer is gone never ends: the stream is polled, and a
            // communicator's error aborts it (its kernels end) and is returned.
            // SAFETY: forwarded contract (live objects of this device, now current).
            return unsafe { self.synchronize_polling(device, q) };
        }
        // SAFETY: forwarded contract (live objects of this device, now current).
        unsafe { queue::queue_synchronize(q) }
    }

    unsafe fn queue_query(&self, device: u32, q: u64) -> BackendResult<bool> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: forwarded contract (live objects of this device, now current).
        unsafe { queue::queue_query(q) }
    }

    unsafe fn queue_wait_event(&self, device: u32, q: u64, event: u64) -> BackendResult<()> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: forwarded contract (live objects of this device, now current).
        unsafe { queue::queue_wait_event(q, event) }
    }

    fn event_create(&self, device: u32) -> BackendResult<u64> {
        let _program_context = self.devices.make_current(device)?;
        queue::event_create()
    }

    unsafe fn event_destroy(&self, device: u32, event: u64) -> BackendResult<()> {
        let _program_context = self.devices.make_current_for_release(device)?;
        // SAFETY: forwarded contract (live objects of this device, now current).
        unsafe { queue::event_destroy(event) }
    }

    unsafe fn event_record(&self, device: u32, event: u64, q: u64) -> BackendResult<()> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: forwarded contract (live objects of this device, now current).
        unsafe { queue::event_record(event, q) }
    }

    unsafe fn event_synchronize(&self, device: u32, event: u64) -> BackendResult<()> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: forwarded contract (live objects of this device, now current).
        unsafe { queue::event_synchronize(event) }
    }

    unsafe fn event_query(&self, device: u32, event: u64) -> BackendResult<bool> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: forwarded contract (live objects of this device, now current).
        unsafe { queue::event_query(event) }
    }

    unsafe fn event_elapsed_ms(&self, device: u32, start: u64, end: u64) -> BackendResult<f32> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: forwarded contract (live objects of this device, now current).
        unsafe { queue::event_elapsed_ms(start, end) }
    }

    fn program_load(&self, device: u32, image: &[u8]) -> BackendResult<u64> {
        let _program_context = self.devices.make_current(device)?;
        let program = program::load(image)?;
        self.kernels.describe(program, image);
        Ok(program)
    }

    unsafe fn program_unload(&self, device: u32, program: u64) -> BackendResult<()> {
        self.kernels.forget_program(program);
        let _program_context = self.devices.make_current_for_release(device)?;
        // SAFETY: forwarded contract.
        unsafe { program::unload(program) }
    }

    unsafe fn kernel_get(&self, device: u32, program: u64, name: &str) -> BackendResult<u64> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: forwarded contract.
        let kernel = unsafe { program::kernel(program, name) }?;
        self.kernels.record(program, kernel, name);
        Ok(kernel)
    }

    #[inline]
    unsafe fn launch(
        &self,
        device: u32,
        queue: u64,
        kernel: u64,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> BackendResult<()> {
        // SAFETY: forwarded contract.
        self.launching(device, |f| unsafe { program::launch(f, &self.kernels, queue, kernel, dims, args) })
    }

    fn fast_launch(&self, device: u32) -> Option<ordo_core::FastLaunch> {
        program::fast_launch(self.devices.single_device_launch(device)?)
    }

    unsafe fn launch_packed(
        &self,
        device: u32,
        queue: u64,
        kernel: u64,
        dims: &LaunchDims,
        args: &[u8],
    ) -> BackendResult<()> {
        // SAFETY: forwarded contract.
        self.launching(device, |f| unsafe { program::launch_packed(f, &self.kernels, queue, kernel, dims, args) })
    }

    unsafe fn launch_cluster(
        &self,
        device: u32,
        queue: u64,
        kernel: u64,
        dims: &LaunchDims,
        cluster: [u32; 3],
        args: &KernelArgs<'_>,
    ) -> BackendResult<()> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: forwarded contract.
        unsafe { program::launch_cluster(&self.kernels, queue, kernel, dims, cluster, args) }
    }

    unsafe fn kernel_param_count(&self, device: u32, kernel: u64) -> BackendResult<usize> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: a live kernel of this device.
        unsafe { program::param_count(kernel, self.kernels.param_count(kernel)) }
    }

    unsafe fn kernel_param_layout(&self, device: u32, kernel: u64, out: &mut ParamLayout) -> BackendResult<()> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: a live kernel of this device (the trait's contract).
        unsafe { program::param_layout(kernel, self.kernels.param_count(kernel), out) }
    }

    unsafe fn kernel_optimal_block_size(&self, device: u32, kernel: u64, dynamic_shared: usize) -> BackendResult<u32> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: as above.
        unsafe { program::optimal_block_size(kernel, dynamic_shared) }
    }

    unsafe fn program_global(&self, device: u32, program: u64, name: &str) -> BackendResult<(u64, usize)> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: a live module of this device.
        unsafe { global::global(program, name) }
    }

    fn program_check(&self, device: u32, image: &[u8]) -> BackendResult<bool> {
        let cc = match self.devices.info(device, DeviceInfo::ComputeCapability)? {
            InfoValue::Version(major, minor) => (major, minor),
            _ => (0, 0),
        };
        Ok(program::compatible(image, cc))
    }

    unsafe fn fill_pattern(
        &self,
        device: u32,
        dst: u64,
        pattern: &[u8],
        count: usize,
        queue: Option<u64>,
    ) -> BackendResult<()> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: the trait's contract.
        unsafe { memory::fill_pattern(dst, pattern, count, queue.map(queue::stream)) }
    }

    unsafe fn queue_host_function(
        &self,
        device: u32,
        q: u64,
        f: HostFn,
        data: *mut std::ffi::c_void,
    ) -> BackendResult<()> {
        let _program_context = self.devices.make_current(device)?;
        // SAFETY: the trait's contract.
        unsafe { queue::host_function(q, f, data) }
    }
}
