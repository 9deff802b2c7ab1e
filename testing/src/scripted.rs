//! The scripted backend: a backend for tests that counts live objects per
//! kind, catches double releases and calls outside init, and fails chosen calls with any error,
//! including "already released by the driver".
//!
//! It implements every method of the backend trait, and counts and can fail every one that talks
//! to a driver (`BackendOp::ALL`). It touches no memory: allocations are fake, unique address
//! ranges, and copies, fills and launches only check that their objects are live. Its kernels
//! take one 4-byte parameter; a program's global variable `name` is 64 bytes at an address fixed
//! by the program and the name; names starting with `missing` are not found; images starting with
//! `bad` are refused, with a load log. A release call that is made to fail still
//! releases its object (as a driver that reports an error on destroy has still dropped it), so
//! "zero live objects after teardown" means the runtime released everything exactly once.

mod collective;
mod control;

pub use control::ScriptedObject;

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ordo_core::{
    Backend, BackendKind, BackendOp, BackendResult, Capabilities, CopyKind, DeviceInfo, FastLaunch, FillValue, HostFn,
    InfoValue, KernelArgs, LaunchDims, LaunchLimits, MemKind, ParamLayout, ParamSlot, TensorMap, TensorMapTiled,
};
use ordo_core::{BackendError, ErrorCode};

const LIVE_CAPACITY: usize = 8192;

const ADDRESS_BASE: u64 = 0x7000_0000_0000;

struct Fault {
    /// Fail the call with this index (counted over all calls since the fault was armed)...
    at_call: Option<u64>,
    /// ...or the next call of this op.
    op: Option<BackendOp>,
    error: BackendError,
}

struct ScriptState {
    up: bool,
    devices: u32,
    present: bool,
    calls: u64,
    armed_at: u64,
    fault: Option<Fault>,
    live: heapless::Vec<(ScriptedObject, u64), LIVE_CAPACITY>,
    next_raw: u64,
    base: u64,
    next_address: u64,
    double_releases: u32,
    calls_while_down: u32,
    last_released: heapless::Vec<(ScriptedObject, u64), 64>,
    /// The last `program_load` was refused and left a log (taken by `take_load_log`).
    load_log: bool,
    /// Queues capturing, with the kernels launched on them since the capture began.
    captures: heapless::Vec<(u64, Kernels), 16>,
    /// Live graphs with the kernels of their launches, in capture order.
    graphs: heapless::Vec<(u64, Kernels), 128>,
    /// Communicators whose teardown finalize failed, with the error their destroy returns.
    finalize_failed: heapless::Vec<(u64, BackendError), 64>,
}

/// The kernels of a capture's launches (launches past the first 64 are not listed).
type Kernels = heapless::Vec<u64, 64>;

/// What the scripted fast launch functions answer (`true`: "launched"), and how many times they
/// ran: process-wide, as the functions have no backend to keep them in.
static FAST_ACCEPTS: AtomicBool = AtomicBool::new(true);
static FAST_CALLS: AtomicU64 = AtomicU64::new(0);

fn fast_packed(_: u64, _: u64, _: &LaunchDims, _: &[u8]) -> bool {
    FAST_CALLS.fetch_add(1, Ordering::SeqCst);
    FAST_ACCEPTS.load(Ordering::SeqCst)
}

fn fast_params(_: u64, _: u64, _: &LaunchDims, _: &KernelArgs<'_>) -> bool {
    FAST_CALLS.fetch_add(1, Ordering::SeqCst);
    FAST_ACCEPTS.load(Ordering::SeqCst)
}

/// A backend that counts objects and fails chosen calls. Build it in a `static`.
pub struct ScriptedBackend {
    state: spin::Mutex<ScriptState>,
    hook: spin::Mutex<Option<fn(BackendOp)>>,
    fast: AtomicBool,
}

impl ScriptedBackend {
    /// A present backend with `devices` devices.
    pub const fn new(devices: u32) -> Self {
        Self::with_address_base(devices, ADDRESS_BASE)
    }

    /// A present backend whose fake allocations start at `base` (two scripted backends in one
    /// runtime need disjoint ranges, as two real drivers' address spaces are).
    pub const fn with_address_base(devices: u32, base: u64) -> Self {
        Self {
            state: spin::Mutex::new(ScriptState {
                up: false,
                devices,
                present: true,
                calls: 0,
                armed_at: 0,
                fault: None,
                live: heapless::Vec::new(),
                next_raw: 1,
                base,
                next_address: base,
                double_releases: 0,
                calls_while_down: 0,
                last_released: heapless::Vec::new(),
                load_log: false,
                captures: heapless::Vec::new(),
                graphs: heapless::Vec::new(),
                finalize_failed: heapless::Vec::new(),
            }),
            hook: spin::Mutex::new(None),
            fast: AtomicBool::new(false),
        }
    }

    /// Counts a call; returns the injected error if this call is the chosen one.
    fn call(
        &self,
        op: BackendOp,
        needs_up: bool,
    ) -> Result<spin::MutexGuard<'_, ScriptState>, (spin::MutexGuard<'_, ScriptState>, BackendError)> {
        let hook = *self.hook.lock();
        if let Some(hook) = hook {
            hook(op);
        }
        let mut s = self.state.lock();
        let index = s.calls - s.armed_at;
        s.calls += 1;
        if needs_up && !s.up {
            s.calls_while_down += 1;
        }
        let hit = match &s.fault {
            Some(f) => f.at_call == Some(index) || f.op == Some(op),
            None => false,
        };
        if hit {
            let error = s.fault.take().map(|f| f.error).unwrap_or(BackendError::new(ErrorCode::Unknown, 0, "fault"));
            return Err((s, error));
        }
        Ok(s)
    }

    fn create(&self, op: BackendOp, kind: ScriptedObject, size: usize) -> BackendResult<u64> {
        let mut s = self.call(op, true).map_err(|(_, e)| e)?;
        let exhausted = |what| BackendError::new(ErrorCode::OutOfResources, 0, what);
        if s.live.is_full() {
            return Err(exhausted("scripted backend live-object log is full"));
        }
        let raw = if kind == ScriptedObject::Allocation {
            // Each allocation gets a fresh range with a 256-byte gap after it; sizes up to
            // isize::MAX reach here, so the arithmetic is checked (no overflow panic on input).
            let a = s.next_address;
            let span = (size as u64).checked_next_multiple_of(256).and_then(|n| n.checked_add(256));
            s.next_address = span
                .and_then(|n| a.checked_add(n))
                .ok_or_else(|| exhausted("scripted backend address space is exhausted"))?;
            a
        } else {
            s.next_raw += 1;
            s.next_raw
        };
        // Cannot fail: checked for room above, under the same lock.
        let _ = s.live.push((kind, raw));
        Ok(raw)
    }

    /// Counts `raw` (chosen by the caller) as a live object of `kind`.
    fn track(&self, op: BackendOp, kind: ScriptedObject, raw: u64) -> BackendResult<()> {
        let mut s = self.call(op, true).map_err(|(_, e)| e)?;
        if s.live.push((kind, raw)).is_err() {
            return Err(BackendError::new(ErrorCode::OutOfResources, 0, "scripted backend live-object log is full"));
        }
        Ok(())
    }

    fn release(&self, op: BackendOp, kind: ScriptedObject, raw: u64) -> BackendResult<()> {
        let (mut s, result) = match self.call(op, true) {
            Ok(s) => (s, Ok(())),
            Err((s, e)) => (s, Err(e)),
        };
        match s.live.iter().position(|&(k, r)| k == kind && r == raw) {
            Some(i) => {
                s.live.swap_remove(i);
                if s.last_released.is_full() {
                    s.last_released.remove(0);
                }
                let _ = s.last_released.push((kind, raw));
            }
            None => s.double_releases += 1,
        }
        result
    }

    fn use_object(&self, op: BackendOp, objects: &[(ScriptedObject, u64)]) -> BackendResult<()> {
        let s = self.call(op, true).map_err(|(_, e)| e)?;
        if objects.iter().any(|o| !s.live.contains(o)) {
            return Err(BackendError::new(ErrorCode::InvalidHandle, 0, "scripted backend: object is not live"));
        }
        Ok(())
    }

    /// A launch of `kernel` on `queue`: its objects live, and listed in the queue's capture if
    /// the queue captures.
    fn launch_on(&self, op: BackendOp, queue: u64, kernel: u64) -> BackendResult<()> {
        self.use_object(op, &[(ScriptedObject::Queue, queue), (ScriptedObject::Program, kernel >> 32)])?;
        let mut s = self.state.lock();
        if let Some((_, kernels)) = s.captures.iter_mut().find(|(q, _)| *q == queue) {
            let _ = kernels.push(kernel);
        }
        Ok(())
    }
}

impl Backend for ScriptedBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Scripted
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::all() - Capabilities::HOST_ACCESSIBLE_MEMORY
    }

    fn collectives(&self) -> Option<&dyn ordo_core::Collectives> {
        Some(self)
    }

    fn init(&self) -> BackendResult<u32> {
        let mut s = self.call(BackendOp::Init, false).map_err(|(_, e)| e)?;
        if !s.present {
            return Err(BackendError::not_present("scripted backend set absent"));
        }
        if s.up {
            return Err(BackendError::new(ErrorCode::Busy, 0, "scripted backend is already initialised"));
        }
        s.up = true;
        s.last_released.clear();
        for d in 0..s.devices {
            let _ = s.live.push((ScriptedObject::Device, u64::from(d)));
        }
        Ok(s.devices)
    }

    unsafe fn deinit(&self) -> BackendResult<()> {
        let (mut s, result) = match self.call(BackendOp::Deinit, true) {
            Ok(s) => (s, Ok(())),
            Err((s, e)) => (s, Err(e)),
        };
        s.up = false;
        result
    }

    unsafe fn device_release(&self, device: u32) -> BackendResult<()> {
        self.release(BackendOp::DeviceRelease, ScriptedObject::Device, u64::from(device))
    }

    unsafe fn forget_after_fork(&self) {
        // SAFETY: in a forked child only this thread exists: a held lock belongs to a thread of
        // the parent that will never release it.
        unsafe {
            if self.state.is_locked() {
                self.state.force_unlock();
            }
            if self.hook.is_locked() {
                self.hook.force_unlock();
            }
        }
        let mut s = self.state.lock();
        s.up = false;
        s.live.clear();
    }

    fn launch_limits(&self, _device: u32) -> LaunchLimits {
        LaunchLimits::CUDA
    }

    fn fast_launch(&self, _device: u32) -> Option<FastLaunch> {
        self.fast.load(Ordering::SeqCst).then_some(FastLaunch { packed: fast_packed, params: fast_params })
    }

    fn device_info(&self, device: u32, key: DeviceInfo) -> BackendResult<InfoValue> {
        self.use_object(BackendOp::DeviceInfo, &[(ScriptedObject::Device, u64::from(device))])?;
        Ok(match key {
            DeviceInfo::Name => InfoValue::text("scripted device"),
            DeviceInfo::ComputeCapability => InfoValue::Version(9, 0),
            DeviceInfo::Vendor | DeviceInfo::DriverVersion | DeviceInfo::Uuid => InfoValue::text("scripted"),
            _ => InfoValue::Int(1 << 20),
        })
    }

    fn mem_alloc(&self, _device: u32, _kind: MemKind, size: usize) -> BackendResult<u64> {
        self.create(BackendOp::MemAlloc, ScriptedObject::Allocation, size)
    }

    unsafe fn mem_free(&self, _device: u32, _kind: MemKind, addr: u64, _size: usize) -> BackendResult<()> {
        self.release(BackendOp::MemFree, ScriptedObject::Allocation, addr)
    }

    unsafe fn queue_begin_capture(&self, _device: u32, queue: u64) -> BackendResult<()> {
        self.use_object(BackendOp::QueueBeginCapture, &[(ScriptedObject::Queue, queue)])?;
        let _ = self.state.lock().captures.push((queue, Kernels::new()));
        Ok(())
    }

    unsafe fn queue_end_capture(&self, _device: u32, queue: u64) -> BackendResult<u64> {
        let kernels = {
            let mut s = self.state.lock();
            let at = s.captures.iter().position(|(q, _)| *q == queue);
            at.map(|i| s.captures.swap_remove(i).1).unwrap_or_default()
        };
        let graph = self.create(BackendOp::QueueEndCapture, ScriptedObject::Graph, 0)?;
        let _ = self.state.lock().graphs.push((graph, kernels));
        Ok(graph)
    }

    unsafe fn graph_kernels(&self, _device: u32, graph: u64, each: &mut dyn FnMut(u64)) -> BackendResult<()> {
        self.use_object(BackendOp::GraphKernels, &[(ScriptedObject::Graph, graph)])?;
        let kernels = self.state.lock().graphs.iter().find(|(g, _)| *g == graph).map(|(_, k)| k.clone());
        kernels.unwrap_or_default().iter().for_each(|&k| each(k));
        Ok(())
    }

    unsafe fn graph_set_args(
        &self,
        _device: u32,
        graph: u64,
        index: u32,
        kernel: u64,
        _args: &KernelArgs<'_>,
    ) -> BackendResult<()> {
        let objects = [(ScriptedObject::Graph, graph), (ScriptedObject::Program, kernel >> 32)];
        self.use_object(BackendOp::GraphSetArgs, &objects)?;
        let s = self.state.lock();
        let launched = s.graphs.iter().find(|(g, _)| *g == graph).and_then(|(_, k)| k.get(index as usize).copied());
        match launched {
            Some(k) if k == kernel => Ok(()),
            Some(_) => Err(BackendError::new(ErrorCode::InvalidArgument, 0, "the launch runs another kernel")),
            None => Err(BackendError::new(ErrorCode::InvalidArgument, 0, "the graph has no launch at this index")),
        }
    }

    unsafe fn graph_launch(&self, _device: u32, graph: u64, queue: u64) -> BackendResult<()> {
        self.use_object(BackendOp::GraphLaunch, &[(ScriptedObject::Graph, graph), (ScriptedObject::Queue, queue)])
    }

    unsafe fn graph_destroy(&self, _device: u32, graph: u64) -> BackendResult<()> {
        {
            let mut s = self.state.lock();
            if let Some(i) = s.graphs.iter().position(|(g, _)| *g == graph) {
                s.graphs.swap_remove(i);
            }
        }
        self.release(BackendOp::GraphDestroy, ScriptedObject::Graph, graph)
    }

    unsafe fn mem_alloc_on(&self, _device: u32, _queue: u64, size: usize) -> BackendResult<u64> {
        self.create(BackendOp::MemAllocOn, ScriptedObject::Allocation, size)
    }

    unsafe fn mem_free_on(&self, _device: u32, _queue: u64, addr: u64, _size: usize) -> BackendResult<()> {
        self.release(BackendOp::MemFreeOn, ScriptedObject::Allocation, addr)
    }

    fn ordered_concurrent(&self, _device: u32) -> bool {
        true // never touched by the host, state behind a lock: CUDA's shared path is checked
    }

    unsafe fn memcpy(&self, _: u32, _: CopyKind, _: u64, _: u64, _: usize, queue: Option<u64>) -> BackendResult<()> {
        match queue {
            Some(q) => self.use_object(BackendOp::Memcpy, &[(ScriptedObject::Queue, q)]),
            None => self.use_object(BackendOp::Memcpy, &[]),
        }
    }

    unsafe fn memcpy_peer(
        &self,
        _: u32,
        _: u64,
        _: u32,
        _: u64,
        _: usize,
        queue: Option<(u32, u64)>,
    ) -> BackendResult<()> {
        match queue {
            Some((_, q)) => self.use_object(BackendOp::Memcpy, &[(ScriptedObject::Queue, q)]),
            None => self.use_object(BackendOp::Memcpy, &[]),
        }
    }

    fn peer_access(&self, _: u32, _: u32) -> BackendResult<ordo_core::PeerAccess> {
        // Scripted devices reach each other's memory directly, as GPUs over a link do.
        Ok(ordo_core::PeerAccess { direct: true, rank: 0, native_atomics: false, same_device: false })
    }

    unsafe fn fill(&self, _: u32, _: u64, _: FillValue, _: usize, queue: Option<u64>) -> BackendResult<()> {
        match queue {
            Some(q) => self.use_object(BackendOp::Fill, &[(ScriptedObject::Queue, q)]),
            None => self.use_object(BackendOp::Fill, &[]),
        }
    }

    fn queue_create(&self, _device: u32) -> BackendResult<u64> {
        self.create(BackendOp::QueueCreate, ScriptedObject::Queue, 0)
    }

    unsafe fn queue_destroy(&self, _: u32, queue: u64) -> BackendResult<()> {
        self.release(BackendOp::QueueDestroy, ScriptedObject::Queue, queue)
    }

    unsafe fn queue_synchronize(&self, _: u32, queue: u64) -> BackendResult<()> {
        self.use_object(BackendOp::QueueSynchronize, &[(ScriptedObject::Queue, queue)])
    }

    unsafe fn queue_query(&self, _: u32, queue: u64) -> BackendResult<bool> {
        self.use_object(BackendOp::QueueQuery, &[(ScriptedObject::Queue, queue)]).map(|_| true)
    }

    unsafe fn queue_wait_event(&self, _: u32, queue: u64, event: u64) -> BackendResult<()> {
        self.use_object(BackendOp::QueueWaitEvent, &[(ScriptedObject::Queue, queue), (ScriptedObject::Event, event)])
    }

    fn event_create(&self, _device: u32) -> BackendResult<u64> {
        self.create(BackendOp::EventCreate, ScriptedObject::Event, 0)
    }

    unsafe fn event_destroy(&self, _: u32, event: u64) -> BackendResult<()> {
        self.release(BackendOp::EventDestroy, ScriptedObject::Event, event)
    }

    unsafe fn event_record(&self, _: u32, event: u64, queue: u64) -> BackendResult<()> {
        self.use_object(BackendOp::EventRecord, &[(ScriptedObject::Event, event), (ScriptedObject::Queue, queue)])
    }

    unsafe fn event_synchronize(&self, _: u32, event: u64) -> BackendResult<()> {
        self.use_object(BackendOp::EventSynchronize, &[(ScriptedObject::Event, event)])
    }

    unsafe fn event_query(&self, _: u32, event: u64) -> BackendResult<bool> {
        self.use_object(BackendOp::EventQuery, &[(ScriptedObject::Event, event)]).map(|_| true)
    }

    unsafe fn event_elapsed_ms(&self, _: u32, start: u64, end: u64) -> BackendResult<f32> {
        self.use_object(BackendOp::EventElapsed, &[(ScriptedObject::Event, start), (ScriptedObject::Event, end)])
            .map(|_| 0.5)
    }

    fn program_load(&self, _device: u32, image: &[u8]) -> BackendResult<u64> {
        if image.starts_with(b"bad") {
            self.call(BackendOp::ProgramLoad, true).map_err(|(_, e)| e)?.load_log = true;
            return Err(BackendError::new(ErrorCode::InvalidBinary, 0, "scripted backend: image starts with 'bad'"));
        }
        self.create(BackendOp::ProgramLoad, ScriptedObject::Program, 0)
    }

    fn take_load_log(&self, sink: &mut dyn FnMut(&str)) {
        if core::mem::take(&mut self.state.lock().load_log) {
            sink("scripted compiler: line 1: the image starts with 'bad'");
        }
    }

    unsafe fn program_unload(&self, _: u32, program: u64) -> BackendResult<()> {
        self.release(BackendOp::ProgramUnload, ScriptedObject::Program, program)
    }

    unsafe fn kernel_get(&self, _: u32, program: u64, name: &str) -> BackendResult<u64> {
        self.use_object(BackendOp::KernelGet, &[(ScriptedObject::Program, program)])?;
        if name.starts_with("missing") {
            return Err(BackendError::new(
                ErrorCode::NotFound,
                0,
                "scripted backend: kernel name starts with 'missing'",
            ));
        }
        let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
        Ok((program << 32) | u64::from(hash))
    }

    unsafe fn launch(&self, _: u32, queue: u64, kernel: u64, _: &LaunchDims, _: &KernelArgs<'_>) -> BackendResult<()> {
        self.launch_on(BackendOp::Launch, queue, kernel)
    }

    unsafe fn host_register(&self, _: u32, addr: u64, _size: usize) -> BackendResult<()> {
        self.track(BackendOp::HostRegister, ScriptedObject::Allocation, addr)
    }

    fn queue_create_independent(&self, _device: u32) -> BackendResult<u64> {
        self.create(BackendOp::QueueCreateIndependent, ScriptedObject::Queue, 0)
    }

    unsafe fn launch_cluster(
        &self,
        _: u32,
        queue: u64,
        kernel: u64,
        _: &LaunchDims,
        _: [u32; 3],
        _: &KernelArgs<'_>,
    ) -> BackendResult<()> {
        self.launch_on(BackendOp::LaunchCluster, queue, kernel)
    }

    unsafe fn kernel_param_count(&self, _: u32, kernel: u64) -> BackendResult<usize> {
        self.use_object(BackendOp::KernelParamCount, &[(ScriptedObject::Program, kernel >> 32)]).map(|()| 1)
    }

    unsafe fn kernel_param_layout(&self, _: u32, kernel: u64, out: &mut ParamLayout) -> BackendResult<()> {
        self.use_object(BackendOp::KernelParamLayout, &[(ScriptedObject::Program, kernel >> 32)])?;
        out.clear();
        let _ = out.push(ParamSlot { offset: 0, size: 4 });
        Ok(())
    }

    unsafe fn kernel_optimal_block_size(&self, _: u32, kernel: u64, _: usize) -> BackendResult<u32> {
        self.use_object(BackendOp::KernelOptimalBlockSize, &[(ScriptedObject::Program, kernel >> 32)]).map(|()| 256)
    }

    unsafe fn program_global(&self, _: u32, program: u64, name: &str) -> BackendResult<(u64, usize)> {
        let s = self.call(BackendOp::ProgramGlobal, true).map_err(|(_, e)| e)?;
        if !s.live.contains(&(ScriptedObject::Program, program)) {
            return Err(BackendError::new(ErrorCode::InvalidHandle, 0, "scripted backend: object is not live"));
        }
        if name.starts_with("missing") {
            return Err(BackendError::new(ErrorCode::NotFound, 0, "scripted backend: no such global variable"));
        }
        // 2^39 bytes above the backend's first allocation (far above any test's allocations, and
        // below the next backend's range when bases are 2^40 apart), one 64 KiB window per
        // program with 64 names' slots in it: the same (program, name) gives the same range.
        let hash = name.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))) % 64;
        Ok((s.base.wrapping_add(1 << 39).wrapping_add(program << 16).wrapping_add(hash * 256), 64))
    }

    fn program_check(&self, _device: u32, image: &[u8]) -> BackendResult<bool> {
        self.call(BackendOp::ProgramCheck, true).map_err(|(_, e)| e)?;
        Ok(!image.starts_with(b"bad"))
    }

    unsafe fn fill_pattern(&self, _: u32, _: u64, _: &[u8], _: usize, queue: Option<u64>) -> BackendResult<()> {
        match queue {
            Some(q) => self.use_object(BackendOp::FillPattern, &[(ScriptedObject::Queue, q)]),
            None => self.use_object(BackendOp::FillPattern, &[]),
        }
    }

    fn tensor_map_encode_tiled(&self, device: u32, tensor: &TensorMapTiled<'_>) -> BackendResult<TensorMap> {
        self.use_object(BackendOp::TensorMapEncodeTiled, &[(ScriptedObject::Device, u64::from(device))])?;
        if TensorMapTiled::element_bytes(tensor.data_type).is_none() {
            return Err(BackendError::new(ErrorCode::InvalidEnumeration, 0, "unknown tensor-map data type"));
        }
        // The words a driver would write: a recognisable stand-in.
        let mut map = [0u64; 16];
        map[0] = tensor.global_address;
        map[1] = u64::from(tensor.data_type);
        Ok(map)
    }

    unsafe fn queue_host_function(
        &self,
        _: u32,
        queue: u64,
        f: HostFn,
        data: *mut core::ffi::c_void,
    ) -> BackendResult<()> {
        self.use_object(BackendOp::QueueHostFunction, &[(ScriptedObject::Queue, queue)])?;
        // The scripted queue has no work pending: the function runs now, as on the host backend.
        // SAFETY: the caller's contract: `f(data)` may be called once from any thread.
        unsafe { f(data) };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_allocations_exhaust_the_fake_address_space_without_panicking() {
        let b = ScriptedBackend::new(1);
        b.init().unwrap();
        assert_eq!(b.init().unwrap_err().code, ErrorCode::Busy, "one backend, one runtime");
        let huge = isize::MAX as usize;
        assert!(b.mem_alloc(0, MemKind::Device, huge).is_ok());
        let e = b.mem_alloc(0, MemKind::Device, huge).unwrap_err();
        assert_eq!(e.code, ErrorCode::OutOfResources);
        assert_eq!(b.live(ScriptedObject::Allocation), 1, "a refused allocation changes nothing");
        assert!(b.mem_alloc(0, MemKind::Device, 64).is_ok(), "small ones still fit");
    }
}
