//! `ordo-amdgpu`: the AMDGPU backend of ordo, over the HSA runtime loaded at run time
//! (`libhsa-runtime64.so.1`, Debian's `libhsa-runtime64-1`; no ROCm needed to build).
//!
//! No AMD GPU has run this backend. It is checked two ways (docs/backends.md): against Debian's real HSA
//! runtime, which on a machine without `/dev/kfd` fails `hsa_init`, so the platform is absent
//! with that status as the reason; and against a simulated HSA library written for the tests
//! (`tests/hsa-sim`), which runs dispatches on host twins of the kernels and rejects what HSA
//! would reject.
//!
//! GPU agents are devices. Device memory comes from each GPU's coarse-grained pool, host memory
//! from the host agent's fine-grained pool, kernel arguments from its kernarg pool. Programs are
//! AMDGPU code objects (ELF), alone or in a clang offload bundle (the entry for the device's
//! ISA is loaded); their metadata note gives each kernel's argument layout, so
//! launches with argument pointers and no sizes (the MLIR form) are laid out as the compiler
//! did, hidden arguments of code object v5 included. Queues carry AQL packets, in order (barrier
//! bit); events are signals. A kernel fault stops its queue (HSA's queue-error callback): waits on
//! that queue's work return `DeviceLost` instead of hanging. Files: `sys.rs` (the HSA table), `device.rs`, `memory.rs`,
//! `program.rs`, `queue.rs`, `conv.rs` (`hsa_status_t` translation).

mod conv;
mod device;
mod memory;
mod program;
mod queue;
pub mod sys;

use spin::RwLock;

use ordo_core::{
    Backend, BackendError, BackendKind, BackendResult, Capabilities, CopyKind, DeviceInfo, ErrorCode, FillValue,
    InfoValue, KernelArgs, LaunchDims, LaunchLimits, MemKind, PeerAccess,
};

use crate::device::{Library, State};

/// ordo's built-in program for gfx90a (from `kernels/builtin.cl`): `vector_add_f32`,
/// `reduce_sum_f32`, `empty`, `noop`, `mixed_args`.
pub const BUILTIN_GFX90A: &[u8] = include_bytes!("../kernels/builtin-gfx90a.co");
/// The same program for gfx1030.
pub const BUILTIN_GFX1030: &[u8] = include_bytes!("../kernels/builtin-gfx1030.co");
/// Both, in one clang offload bundle: the built-in program image (`program_load` takes the
/// code object for the device's ISA).
pub const BUILTIN_BUNDLE: &[u8] = include_bytes!("../kernels/builtin.bundle");

/// The AMDGPU backend. Build one in a `static` with `AmdgpuBackend::new()`.
pub struct AmdgpuBackend {
    library: Library,
    state: RwLock<Option<State>>,
}

impl core::fmt::Debug for AmdgpuBackend {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AmdgpuBackend").finish_non_exhaustive()
    }
}

impl AmdgpuBackend {
    /// A backend over `ORDO_HSA_LIBRARY` when that is set at init, else `libhsa-runtime64.so.1`
    /// (nothing is loaded until `init`). Like `LD_LIBRARY_PATH`, which already decides which
    /// `libhsa-runtime64.so.1` is loaded, the variable is trusted to name an HSA runtime.
    pub const fn new() -> Self {
        Self { library: Library::Default, state: RwLock::new(None) }
    }

    /// A backend over the HSA library at `path` (a ROCm install, or the tests' simulation).
    ///
    /// # Safety
    /// The library at `path`, if one loads, is an HSA runtime: it exports the functions of
    /// `sys::Hsa` with those C signatures and HSA's behaviour (ordo calls them as declared and
    /// trusts what they return, as it trusts the CUDA driver).
    pub const unsafe fn with_library(path: &'static str) -> Self {
        Self { library: Library::Path(path), state: RwLock::new(None) }
    }

    fn with<R>(&self, f: impl FnOnce(&State) -> BackendResult<R>) -> BackendResult<R> {
        let state = self.state.read();
        match state.as_ref() {
            Some(s) => f(s),
            None => Err(BackendError::new(ErrorCode::Uninitialized, 0, "the AMDGPU backend is not initialised")),
        }
    }

    fn with_gpu<R>(&self, device: u32, f: impl FnOnce(&State, &device::Gpu) -> BackendResult<R>) -> BackendResult<R> {
        self.with(|s| f(s, s.gpu(device)?))
    }
}

impl Default for AmdgpuBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl Backend for AmdgpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Amdgpu
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::ASYNC_QUEUES | Capabilities::SHARED_MEMORY
    }

    fn init(&self) -> BackendResult<u32> {
        let mut state = self.state.write();
        if state.is_some() {
            return Err(BackendError::new(ErrorCode::Busy, 0, "the AMDGPU backend is already initialised"));
        }
        let s = device::open(self.library)?;
        let count = s.gpus.len() as u32;
        *state = Some(s);
        Ok(count)
    }

    unsafe fn deinit(&self) -> BackendResult<()> {
        let mut state = self.state.write();
        match state.take() {
            // SAFETY: every object was released (the runtime's teardown order); HSA was
            // initialised by `init`.
            Some(s) => conv::check_release("hsa_shut_down", unsafe { (s.hsa.hsa_shut_down)() }),
            None => Ok(()),
        }
    }

    unsafe fn forget_after_fork(&self) {
        // Threads of the parent may have held the lock (a shared call waiting on a queue): they
        // do not exist in the child, so their holds are released here, and the state (the
        // parent's HSA objects, unusable in the child) is forgotten without an HSA call.
        // SAFETY: the child has one thread, which holds no guard of this lock: every hold
        // counted now belongs to a thread that is gone.
        unsafe {
            if self.state.writer_count() > 0 {
                self.state.force_write_unlock();
            }
            for _ in 0..self.state.reader_count() {
                self.state.force_read_decrement();
            }
        }
        if let Some(mut state) = self.state.try_write() {
            std::mem::forget(state.take());
        }
    }

    unsafe fn device_release(&self, device: u32) -> BackendResult<()> {
        self.with_gpu(device, |_, _| Ok(()))
    }

    fn device_info(&self, device: u32, key: DeviceInfo) -> BackendResult<InfoValue> {
        self.with_gpu(device, |_, gpu| device::info(gpu, key))
    }

    fn launch_limits(&self, device: u32) -> LaunchLimits {
        self.with_gpu(device, |_, gpu| Ok(gpu.limits)).unwrap_or(LaunchLimits {
            grid: [0; 3],
            block: [0; 3],
            threads_per_block: 0,
            threads_per_launch: 0,
        })
    }

    fn mem_alloc(&self, device: u32, kind: MemKind, size: usize) -> BackendResult<u64> {
        self.with_gpu(device, |s, gpu| memory::alloc(s, gpu, kind, size))
    }

    unsafe fn mem_free(&self, device: u32, _kind: MemKind, addr: u64, _size: usize) -> BackendResult<()> {
        // SAFETY: forwarded contract.
        self.with_gpu(device, |s, _| unsafe { memory::free(s, addr) })
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
        // SAFETY: forwarded contract.
        self.with_gpu(device, |s, gpu| unsafe { memory::memcpy(s, gpu, kind, dst, src, size, queue) })
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
        self.with(|s| {
            let (to, from) = (s.gpu(dst_device)?, s.gpu(src_device)?);
            // SAFETY: forwarded contract (the queue is live, of one of the two devices; its
            // ordering is the same whichever device's it is).
            unsafe { memory::memcpy_peer(s, (to, dst), (from, src), size, queue.map(|(_, q)| q)) }
        })
    }

    fn peer_access(&self, device: u32, peer: u32) -> BackendResult<PeerAccess> {
        self.with(|s| {
            s.gpu(peer)?;
            let hops = s.gpu(device)?.reach.get(peer as usize).copied().flatten();
            // The link's hop count as its rank (0: a direct link; HSA ranks links no other way).
            Ok(hops.map_or(PeerAccess::NONE, |h| PeerAccess {
                direct: true,
                rank: h.saturating_sub(1),
                ..PeerAccess::NONE
            }))
        })
    }

    unsafe fn fill(
        &self,
        device: u32,
        dst: u64,
        value: FillValue,
        count: usize,
        queue: Option<u64>,
    ) -> BackendResult<()> {
        // SAFETY: forwarded contract.
        self.with_gpu(device, |s, gpu| unsafe { memory::fill(s, gpu, dst, value, count, queue) })
    }

    fn queue_create(&self, device: u32) -> BackendResult<u64> {
        self.with_gpu(device, queue::create)
    }

    unsafe fn queue_destroy(&self, device: u32, q: u64) -> BackendResult<()> {
        // SAFETY: forwarded contract.
        self.with_gpu(device, |s, gpu| unsafe { queue::destroy(s, gpu, q) })
    }

    unsafe fn queue_synchronize(&self, device: u32, q: u64) -> BackendResult<()> {
        // SAFETY: forwarded contract (a live queue).
        self.with_gpu(device, |s, _| unsafe { queue::from_value(q) }.synchronize(s))
    }

    unsafe fn queue_query(&self, device: u32, q: u64) -> BackendResult<bool> {
        // SAFETY: forwarded contract (a live queue).
        self.with_gpu(device, |s, _| unsafe { queue::from_value(q) }.idle(s))
    }

    unsafe fn queue_wait_event(&self, device: u32, q: u64, event: u64) -> BackendResult<()> {
        // SAFETY: forwarded contract.
        self.with_gpu(device, |s, _| unsafe { queue::wait_event(s, q, event) })
    }

    fn event_create(&self, device: u32) -> BackendResult<u64> {
        self.with_gpu(device, |s, _| queue::event_create(s))
    }

    unsafe fn event_destroy(&self, device: u32, event: u64) -> BackendResult<()> {
        // SAFETY: forwarded contract.
        self.with_gpu(device, |s, _| unsafe { queue::event_destroy(s, event) })
    }

    unsafe fn event_record(&self, device: u32, event: u64, q: u64) -> BackendResult<()> {
        // SAFETY: forwarded contract.
        self.with_gpu(device, |s, _| unsafe { queue::event_record(s, event, q) })
    }

    unsafe fn event_synchronize(&self, device: u32, event: u64) -> BackendResult<()> {
        // SAFETY: forwarded contract.
        self.with_gpu(device, |s, _| unsafe { queue::event_synchronize(s, event) })
    }

    unsafe fn event_query(&self, device: u32, event: u64) -> BackendResult<bool> {
        // SAFETY: forwarded contract.
        self.with_gpu(device, |s, _| unsafe { queue::event_done(s, event) })
    }

    unsafe fn event_elapsed_ms(&self, _device: u32, _start: u64, _end: u64) -> BackendResult<f32> {
        Err(BackendError::new(ErrorCode::Unsupported, 0, "AMDGPU events do not time (no profiling signals)"))
    }

    fn program_load(&self, device: u32, image: &[u8]) -> BackendResult<u64> {
        self.with_gpu(device, |s, gpu| {
            // Checked (and, from a bundle, chosen) before HSA sees it.
            let code =
                program::select(image, &gpu.isa).map_err(|m| BackendError::new(ErrorCode::InvalidBinary, 0, m))?;
            program::load(s, gpu, code)
        })
    }

    unsafe fn program_unload(&self, device: u32, p: u64) -> BackendResult<()> {
        // SAFETY: forwarded contract.
        self.with_gpu(device, |s, _| unsafe { program::unload(s, p) })
    }

    unsafe fn kernel_get(&self, device: u32, p: u64, name: &str) -> BackendResult<u64> {
        // SAFETY: forwarded contract.
        self.with_gpu(device, |s, gpu| unsafe { program::kernel(s, gpu, p, name) })
    }

    unsafe fn launch(
        &self,
        device: u32,
        q: u64,
        kernel: u64,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> BackendResult<()> {
        // SAFETY: forwarded contract (live queue and kernel; arguments as the kernel declares).
        self.with_gpu(device, |s, _| unsafe { queue::from_value(q).launch(s, program::from_value(kernel), dims, args) })
    }

    unsafe fn kernel_param_count(&self, device: u32, kernel: u64) -> BackendResult<usize> {
        // SAFETY: forwarded contract.
        self.with_gpu(device, |_, _| Ok(unsafe { program::from_value(kernel) }.meta.explicit().count()))
    }

    unsafe fn kernel_param_layout(
        &self,
        device: u32,
        kernel: u64,
        out: &mut ordo_core::ParamLayout,
    ) -> BackendResult<()> {
        self.with_gpu(device, |_, _| {
            out.clear();
            // SAFETY: forwarded contract. The explicit arguments' kernarg offsets and sizes, from
            // the code object's metadata.
            for a in unsafe { program::from_value(kernel) }.meta.explicit() {
                let slot = ordo_core::ParamSlot { offset: a.offset, size: a.size };
                if out.push(slot).is_err() {
                    return Err(BackendError::new(
                        ErrorCode::Unsupported,
                        0,
                        "kernel has more than MAX_KERNEL_PARAMS arguments",
                    ));
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_held_by_vanished_threads_are_released_after_a_fork() {
        // SAFETY: no library is loaded by this test (init fails before loading: bad path).
        let b = unsafe { AmdgpuBackend::with_library("/nonexistent/libhsa-runtime64.so.1") };
        // A parent thread in a shared call held a read guard at the fork.
        std::mem::forget(b.state.read());
        std::mem::forget(b.state.read());
        // SAFETY: the test thread holds no guard of its own.
        unsafe { b.forget_after_fork() };
        assert_eq!(b.init().unwrap_err().code, ErrorCode::NotPresent, "init runs again, not blocked");
        // And a writer that vanished mid-init.
        std::mem::forget(b.state.write());
        // SAFETY: as above.
        unsafe { b.forget_after_fork() };
        assert_eq!(b.init().unwrap_err().code, ErrorCode::NotPresent);
    }
}
