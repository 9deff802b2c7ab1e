//! The no-op backend `ordo bench` measures the runtime against: every call succeeds at once, so
//! what is left of a call's cost is ordo's.

use super::*;

/// A backend whose every call succeeds at once: what is left of a call's cost is ordo's.
/// Its graphs hold one launch, of the kernel looked up last (`last_kernel`); `last_graph` is
/// the value of the graph ended last, for the update row's direct call.
pub(super) struct NoopBackend {
    next: AtomicU64,
    next_address: AtomicU64,
    last_kernel: AtomicU64,
    pub(super) last_graph: AtomicU64,
}

impl NoopBackend {
    pub(super) const fn new() -> Self {
        Self {
            next: AtomicU64::new(1),
            next_address: AtomicU64::new(1 << 40),
            last_kernel: AtomicU64::new(0),
            last_graph: AtomicU64::new(0),
        }
    }
}

impl Backend for NoopBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Scripted
    }
    fn name(&self) -> &'static str {
        "noop"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::empty()
    }
    fn init(&self) -> BackendResult<u32> {
        Ok(1)
    }
    unsafe fn deinit(&self) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn device_release(&self, _: u32) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn forget_after_fork(&self) {}
    fn device_info(&self, _: u32, _: DeviceInfo) -> BackendResult<InfoValue> {
        Ok(InfoValue::Int(0))
    }
    fn launch_limits(&self, _: u32) -> LaunchLimits {
        LaunchLimits::CUDA
    }
    fn mem_alloc(&self, _: u32, _: MemKind, size: usize) -> BackendResult<u64> {
        Ok(self.next_address.fetch_add((size as u64).next_multiple_of(256), Ordering::Relaxed))
    }
    unsafe fn mem_free(&self, _: u32, _: MemKind, _: u64, _: usize) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn mem_alloc_on(&self, _: u32, _: u64, size: usize) -> BackendResult<u64> {
        Ok(self.next_address.fetch_add((size as u64).next_multiple_of(256), Ordering::Relaxed))
    }
    unsafe fn mem_free_on(&self, _: u32, _: u64, _: u64, _: usize) -> BackendResult<()> {
        Ok(())
    }
    fn ordered_concurrent(&self, _: u32) -> bool {
        true
    }
    unsafe fn memcpy(&self, _: u32, _: CopyKind, _: u64, _: u64, _: usize, _: Option<u64>) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn fill(&self, _: u32, _: u64, _: FillValue, _: usize, _: Option<u64>) -> BackendResult<()> {
        Ok(())
    }
    fn queue_create(&self, _: u32) -> BackendResult<u64> {
        Ok(self.next.fetch_add(1, Ordering::Relaxed))
    }
    unsafe fn queue_destroy(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn queue_synchronize(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn queue_query(&self, _: u32, q: u64) -> BackendResult<bool> {
        Ok(black_box(q) != 0)
    }
    unsafe fn queue_wait_event(&self, _: u32, _: u64, _: u64) -> BackendResult<()> {
        Ok(())
    }
    fn event_create(&self, _: u32) -> BackendResult<u64> {
        Ok(self.next.fetch_add(1, Ordering::Relaxed))
    }
    unsafe fn event_destroy(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn event_record(&self, _: u32, _: u64, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn event_synchronize(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn event_query(&self, _: u32, _: u64) -> BackendResult<bool> {
        Ok(true)
    }
    unsafe fn event_elapsed_ms(&self, _: u32, _: u64, _: u64) -> BackendResult<f32> {
        Ok(0.0)
    }
    fn program_load(&self, _: u32, _: &[u8]) -> BackendResult<u64> {
        Ok(self.next.fetch_add(1, Ordering::Relaxed))
    }
    unsafe fn program_unload(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn kernel_get(&self, _: u32, program: u64, _: &str) -> BackendResult<u64> {
        self.last_kernel.store(program, Ordering::Relaxed);
        Ok(program)
    }
    unsafe fn queue_begin_capture(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn queue_end_capture(&self, _: u32, _: u64) -> BackendResult<u64> {
        let graph = self.next.fetch_add(1, Ordering::Relaxed);
        self.last_graph.store(graph, Ordering::Relaxed);
        Ok(graph)
    }
    unsafe fn graph_launch(&self, _: u32, graph: u64, q: u64) -> BackendResult<()> {
        black_box((graph, q));
        Ok(())
    }
    unsafe fn graph_kernels(&self, _: u32, _: u64, each: &mut dyn FnMut(u64)) -> BackendResult<()> {
        each(self.last_kernel.load(Ordering::Relaxed));
        Ok(())
    }
    unsafe fn graph_set_args(
        &self,
        _: u32,
        graph: u64,
        index: u32,
        k: u64,
        args: &KernelArgs<'_>,
    ) -> BackendResult<()> {
        black_box((graph, index, k, args.params().len()));
        Ok(())
    }
    unsafe fn graph_destroy(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn launch(&self, _: u32, q: u64, k: u64, _: &LaunchDims, _: &KernelArgs<'_>) -> BackendResult<()> {
        black_box((q, k));
        Ok(())
    }
    unsafe fn kernel_param_layout(&self, _: u32, _: u64, out: &mut ordo_core::ParamLayout) -> BackendResult<()> {
        // Every kernel is `(f32*, f32*, f32*, u32)`, the shape of a vector add: the typed launch
        // checks four arguments against it.
        *out = ordo_core::c_layout(&NOOP_KERNEL_PARAMS).ok_or(BackendError::new(ErrorCode::Internal, 0, "layout"))?;
        Ok(())
    }
    fn collectives(&self) -> Option<&dyn ordo_core::Collectives> {
        Some(self)
    }
}

/// A collective library that does nothing: what is left of a collective call is ordo's.
impl ordo_core::Collectives for NoopBackend {
    fn library(&self) -> BackendResult<ordo_core::CollectiveLibrary> {
        Ok(ordo_core::CollectiveLibrary { name: "noop", version: 0 })
    }
    unsafe fn comm_create_all(&self, _: &[u32], out: &mut [u64]) -> BackendResult<()> {
        for o in out {
            *o = self.next.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
    fn unique_id(&self) -> BackendResult<ordo_core::UniqueId> {
        Ok(ordo_core::UniqueId([0; 128]))
    }
    unsafe fn comm_create_rank(&self, _: u32, _: &ordo_core::UniqueId, _: u32, _: u32, _: u32) -> BackendResult<u64> {
        Ok(self.next.fetch_add(1, Ordering::Relaxed))
    }
    unsafe fn collectives(&self, calls: &[ordo_core::CollectiveCall]) -> BackendResult<()> {
        black_box(calls);
        Ok(())
    }
    unsafe fn comm_native(&self, _: u32, comm: u64) -> u64 {
        comm
    }
    unsafe fn comm_async_error(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn comm_finalize(&self, _: &[(u32, u64)]) {}
    unsafe fn comm_destroy(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn comm_abort(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
}

pub(super) const NOOP_KERNEL_PARAMS: [usize; 4] =
    [size_of::<u64>(), size_of::<u64>(), size_of::<u64>(), size_of::<u32>()];
