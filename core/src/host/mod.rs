//! The host backend: the embedded default, in `no_std`.
//!
//! Memory comes from a fixed arena the host supplies (`HostArena`, usually a `static`), or with
//! a heap (`with_heap`) from a system allocator when no arena was given; programs are named sets
//! of host kernels (built in, or registered at run time: an image is a program's name; an
//! unknown name is `InvalidBinary`); a launch runs the whole grid on the calling thread, so queues
//! are in order and events complete when recorded. In front of it, `DeferredHost` (here, no
//! threads) keeps a queue's work until an execution point, and `ordo`'s `QueuedHost` (std) gives
//! each queue a thread. Depends on `backend`, `error`, `capacity`.
//!
//! Files: `arena.rs` (the region memory comes from), `memory.rs` (blocks of it, or of a heap,
//! and copies between addresses), `state.rs` (the bookkeeping kept with an arena), `kernels.rs`
//! (host kernels, programs and their registry), `builtin.rs` (the built-in program),
//! `deferred.rs` (queues that run their work at execution points),
//! `sysinfo.rs` (what the host tells about its CPU), `callbacks.rs` (user code run inside it:
//! callback marks, waits for callbacks, caught panics), `tests.rs`; this file is the backend itself.

mod arena;
pub mod builtin;
mod callbacks;
mod kernels;
mod memory;
mod queues;
mod state;
mod sysinfo;

pub use arena::{ArenaRegion, HOST_ALIGN, HostArena, ProvidedArena};
pub use callbacks::{catch_panic, in_callback, panicked, run_as_callback, waiting_for_callbacks};
pub use kernels::{
    HostKernel, HostKernelFn, HostProgram, HostProgramRegistry, HostThread, MAX_REGISTERED_HOST_PROGRAMS,
};
use kernels::{PROGRAM_PLACES, program_place};
pub use memory::HostHeap;
#[cfg(feature = "std")]
pub use memory::STD_HOST_HEAP;
pub(crate) use memory::copy_addresses;
#[cfg(feature = "std")]
pub use queues::QueuedHost;
pub use queues::{
    DEFERRED_ARG_BYTES, DEFERRED_ERRORS, DEFERRED_PARAMS, DEFERRED_PATTERN, DEFERRED_WORK, DeferredHost, HOST_CAPTURES,
};
pub use state::HostBookkeeping;
use state::{EVENT_FREE, EVENT_RECORDED_BASE, EVENT_UNRECORDED, HostState};
#[cfg(feature = "std")]
pub use sysinfo::std_host_device_info;
pub use sysinfo::{HostDeviceInfo, cpu_vendor_pci_id};

use crate::backend::{
    Backend, BackendKind, BackendResult, Capabilities, CopyKind, DeviceInfo, FillValue, HostFn, InfoValue, KernelArgs,
    LaunchDims, LaunchLimits, MemKind, ParamLayout, c_layout,
};
use crate::capacity::MAX_EVENTS;
use crate::error::{BackendError, Error, ErrorCode};
use crate::reentry;

/// Local (shared) memory a host kernel's block may ask for (`LaunchDims::shared_mem_bytes`), as
/// CUDA's default per-block limit.
pub const HOST_LOCAL_MEMORY_BYTES: u32 = 48 * 1024;

/// The host backend's launch limits: CUDA's grid and block limits, and at most 2^28 threads per
/// launch, because a launch runs its whole grid on the calling thread while it holds the host
/// device (a larger grid would keep every other host call, and the final shutdown, waiting).
pub const HOST_LAUNCH_LIMITS: LaunchLimits = LaunchLimits { threads_per_launch: 1 << 28, ..LaunchLimits::CUDA };

/// The host backend. Build it in a `static` with `HostBackend::new`.
///
/// All work that touches arena bytes (copies, fills, launches) runs under one execution lock, so
/// the host device executes one thing at a time, like a single in-order engine: any interleaving
/// of valid calls from any threads is free of data races on the arena.
pub struct HostBackend {
    arena: &'static dyn ArenaRegion,
    heap: Option<HostHeap>,
    programs: &'static [HostProgram],
    registry: Option<&'static HostProgramRegistry>,
    clock_ns: Option<fn() -> u64>,
    info: fn() -> HostDeviceInfo,
    exec: crate::sync::SpinLock<()>,
}

impl core::fmt::Debug for HostBackend {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HostBackend")
            .field("heap", &self.heap.is_some())
            .field("programs", &self.programs.len())
            .field("registry", &self.registry.is_some())
            .field("clock", &self.clock_ns.is_some())
            .finish_non_exhaustive()
    }
}

fn err(code: ErrorCode, message: &'static str) -> BackendError {
    BackendError::new(code, 0, message)
}

impl HostBackend {
    /// A host backend allocating from `arena` and offering `programs`. Without a clock, event
    /// timing returns `Unsupported`.
    pub const fn new(
        arena: &'static dyn ArenaRegion,
        programs: &'static [HostProgram],
        clock_ns: Option<fn() -> u64>,
    ) -> Self {
        Self {
            arena,
            heap: None,
            programs,
            registry: None,
            clock_ns,
            info: || HostDeviceInfo::UNKNOWN,
            exec: crate::sync::SpinLock::new(()),
        }
    }

    /// This backend, allocating from `heap` whenever its arena is empty at `init` (no region
    /// given): the host device's memory is then the machine's, one heap block per allocation, up
    /// to `HostDeviceInfo::memory_bytes` in all (where `info` tells it). A non-empty arena is
    /// still used as it is (firmware, or a program that provided one).
    pub const fn with_heap(self, heap: HostHeap) -> Self {
        Self { heap: Some(heap), ..self }
    }

    /// This backend, telling the CPU's clocks and maker from `info` (called on each query;
    /// `std_host_device_info` with feature `std`, a constant on firmware). Without it they are
    /// unknown (`Unsupported`).
    pub const fn with_info(self, info: fn() -> HostDeviceInfo) -> Self {
        Self { info, ..self }
    }

    /// This backend, also offering the programs of `registry` (after its own list).
    pub const fn with_registry(self, registry: &'static HostProgramRegistry) -> Self {
        Self { registry: Some(registry), ..self }
    }

    /// The bookkeeping of the arena (a backend over it is the only reader).
    fn bookkeeping(&self) -> &crate::sync::SpinLock<HostState> {
        &self.arena.bookkeeping().0
    }

    /// Bytes of the arena not allocated right now (0 when the backend is not initialised or
    /// allocates from its heap).
    pub fn free_bytes(&self) -> usize {
        self.bookkeeping().lock().free.iter().map(|&(_, blocks)| blocks as usize * HOST_ALIGN).sum()
    }

    fn event_slot(state: &mut HostState, raw: u64) -> BackendResult<&mut u64> {
        match state.events.get_mut((raw as usize).wrapping_sub(1)) {
            Some(slot) if *slot != EVENT_FREE => Ok(slot),
            _ => Err(err(ErrorCode::InvalidHandle, "host event does not exist")),
        }
    }

    /// The state, for a safe call: `device` must be 0 and the backend initialised.
    fn checked_state(&self, device: u32) -> BackendResult<crate::sync::SpinGuard<'_, HostState>> {
        if device != 0 {
            return Err(err(ErrorCode::InvalidArgument, "the host platform has one device, 0"));
        }
        let s = self.bookkeeping().lock();
        if !s.up {
            return Err(err(ErrorCode::Uninitialized, "the host backend is not initialised"));
        }
        Ok(s)
    }

    /// What a launch of `kernel` would be refused for when it ran, checked at submission by
    /// the wrappers that run it later (`DeferredHost`, `ordo`'s `QueuedHost`): more local memory
    /// than a block has, an argument count or a given size other than the kernel declares.
    /// Returns the kernel's parameter layout (where to keep a copy of each argument).
    ///
    /// # Safety
    /// `kernel` is a live kernel of this backend (the `Backend` contract).
    pub unsafe fn check_launch(
        &self,
        device: u32,
        kernel: u64,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> BackendResult<ParamLayout> {
        let mut layout = ParamLayout::new();
        // SAFETY: forwarded contract.
        unsafe { self.kernel_param_layout(device, kernel, &mut layout) }?;
        if dims.shared_mem_bytes > HOST_LOCAL_MEMORY_BYTES {
            return Err(err(ErrorCode::InvalidValue, "more local memory than a host block has (48 KiB)"));
        }
        if args.params().len() != layout.len() {
            return Err(err(ErrorCode::InvalidArgument, "kernel argument index out of range"));
        }
        self.check_extents(kernel, args)?;
        if args.sizes().is_some_and(|given| given.iter().zip(&layout).any(|(&g, s)| g != s.size as usize)) {
            return Err(err(ErrorCode::InvalidSize, "kernel argument size does not match the kernel's parameter"));
        }
        Ok(layout)
    }

    /// Runs a launch's grid, block after block, each thread after the other, on the calling
    /// thread (its local memory at `local`, zeroed before each block).
    ///
    /// # Safety
    /// `args` are valid arguments of `run`; `local` is `local_len` bytes of the launch's own.
    unsafe fn run_grid(
        run: HostKernelFn,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
        local: u64,
        local_len: usize,
    ) -> BackendResult<()> {
        let local = core::ptr::with_exposed_provenance_mut::<u8>(local as usize);
        let mut t =
            HostThread { thread: [0; 3], block: [0; 3], block_dim: dims.block, grid_dim: dims.grid, local, local_len };
        for bz in 0..dims.grid[2] {
            for by in 0..dims.grid[1] {
                for bx in 0..dims.grid[0] {
                    t.block = [bx, by, bz];
                    if local_len > 0 {
                        // SAFETY: the launch's own allocation of `local_len` bytes.
                        unsafe { core::ptr::write_bytes(local, 0, local_len) };
                    }
                    for tz in 0..dims.block[2] {
                        for ty in 0..dims.block[1] {
                            for tx in 0..dims.block[0] {
                                t.thread = [tx, ty, tz];
                                // SAFETY: the caller of launch guarantees the arguments.
                                unsafe { run(&t, args) }.map_err(BackendError::from_error)?;
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs `work` as the host device's one piece of work in progress. From inside a host kernel
    /// (which holds the device) it fails with `Busy` instead of waiting for itself.
    fn execute<T>(&self, work: impl FnOnce() -> BackendResult<T>) -> BackendResult<T> {
        if reentry::in_callback() {
            return Err(BackendError::from_error(Error::REENTRANT));
        }
        let _device = self.exec.lock();
        work()
    }
}

impl Backend for HostBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Host
    }

    fn capabilities(&self) -> Capabilities {
        let timing = if self.clock_ns.is_some() { Capabilities::EVENT_TIMING } else { Capabilities::empty() };
        // Launches run at the call (wrappers with queues add `ASYNC_QUEUES`); a block's local
        // memory is the launch's dynamic shared memory.
        Capabilities::HOST_ACCESSIBLE_MEMORY | Capabilities::SHARED_MEMORY | timing
    }

    fn init(&self) -> BackendResult<u32> {
        let mut s = self.bookkeeping().lock();
        if s.up {
            return Err(err(ErrorCode::Busy, "the host backend is already initialised (by another runtime)"));
        }
        let (start, len) = self.arena.region();
        let skip = start.align_offset(HOST_ALIGN).min(len);
        s.free.clear();
        (s.heap, s.heap_used) = (false, 0);
        if len - skip < HOST_ALIGN {
            if self.heap.is_none() {
                return Err(BackendError::not_present("no host arena was provided (or it is smaller than 256 bytes)"));
            }
            (s.base, s.len, s.heap) = (core::ptr::null_mut(), 0, true);
            s.events = [EVENT_FREE; MAX_EVENTS];
            s.up = true;
            return Ok(1);
        }
        (s.base, s.len) = (start.wrapping_add(skip), len);
        let blocks = ((len - skip) / HOST_ALIGN).min(u32::MAX as usize) as u32;
        // Cannot fail: the list is empty.
        let _ = s.free.push((0, blocks));
        s.events = [EVENT_FREE; MAX_EVENTS];
        s.up = true;
        Ok(1)
    }

    unsafe fn deinit(&self) -> BackendResult<()> {
        let mut s = self.bookkeeping().lock();
        s.up = false;
        s.free.clear();
        (s.base, s.len) = (core::ptr::null_mut(), 0);
        Ok(())
    }

    unsafe fn forget_after_fork(&self) {
        // SAFETY: in a forked child only this thread exists, so a held lock belongs to a thread
        // of the parent that will never release it, and nothing else can be inside it.
        unsafe {
            if self.exec.is_locked() {
                self.exec.force_unlock();
            }
            if self.bookkeeping().is_locked() {
                self.bookkeeping().force_unlock();
            }
            self.deinit().ok();
        }
    }

    unsafe fn device_release(&self, _device: u32) -> BackendResult<()> {
        Ok(())
    }

    fn device_info(&self, device: u32, key: DeviceInfo) -> BackendResult<InfoValue> {
        drop(self.checked_state(device)?);
        if let Some(v) = HOST_LAUNCH_LIMITS.info(key) {
            return Ok(v);
        }
        Ok(match key {
            // Where a queue's work runs is the queue wrapper's to say (`DeferredHost`, `QueuedHost`).
            DeviceInfo::Name => InfoValue::text("host CPU (queue work on the calling thread)"),
            DeviceInfo::ComputeCapability => InfoValue::Version(0, 0),
            DeviceInfo::TotalMemory => {
                let s = self.bookkeeping().lock();
                match (self.info)().memory_bytes {
                    _ if !s.heap => InfoValue::Int(s.len as u64),
                    0 => InfoValue::Int(isize::MAX as u64),
                    bytes => InfoValue::Int(bytes),
                }
            }
            DeviceInfo::MultiprocessorCount | DeviceInfo::WarpSize => InfoValue::Int(1),
            DeviceInfo::MaxSharedMemoryPerBlock | DeviceInfo::MaxSharedMemoryPerBlockOptin => {
                InfoValue::Int(HOST_LOCAL_MEMORY_BYTES.into())
            }
            DeviceInfo::Vendor => InfoValue::text("ordo"),
            DeviceInfo::DriverVersion => InfoValue::text(env!("CARGO_PKG_VERSION")),
            DeviceInfo::Uuid => InfoValue::text("ordo-host-0"),
            DeviceInfo::ClockRateMhz | DeviceInfo::MemoryClockRateMhz | DeviceInfo::VendorId => {
                let info = (self.info)();
                match key {
                    DeviceInfo::ClockRateMhz if info.clock_mhz > 0 => InfoValue::Int(info.clock_mhz.into()),
                    DeviceInfo::MemoryClockRateMhz if info.memory_clock_mhz > 0 => {
                        InfoValue::Int(info.memory_clock_mhz.into())
                    }
                    DeviceInfo::VendorId if info.vendor_id > 0 => InfoValue::Int(info.vendor_id.into()),
                    _ => return Err(err(ErrorCode::Unsupported, "the host does not tell this property")),
                }
            }
            _ => InfoValue::Int(0),
        })
    }

    fn launch_limits(&self, _device: u32) -> LaunchLimits {
        HOST_LAUNCH_LIMITS
    }

    fn mem_alloc(&self, device: u32, _kind: MemKind, size: usize) -> BackendResult<u64> {
        let mut s = self.checked_state(device)?;
        self.take_block(&mut s, size)
    }

    unsafe fn host_register(&self, device: u32, _addr: u64, _size: usize) -> BackendResult<()> {
        // The host device works on host memory as it is: registering only names the range
        // (the runtime records it), so copies, fills and kernels may use it.
        drop(self.checked_state(device)?);
        Ok(())
    }

    unsafe fn mem_free(&self, _device: u32, kind: MemKind, addr: u64, size: usize) -> BackendResult<()> {
        if kind == MemKind::Registered {
            return Ok(()); // the caller's memory: nothing of the arena to give back
        }
        // SAFETY: the contract: a live allocation of this backend, of that size.
        unsafe { self.give_block(self.bookkeeping().lock(), addr, size) };
        Ok(())
    }

    unsafe fn memcpy(&self, _: u32, _: CopyKind, dst: u64, src: u64, size: usize, _: Option<u64>) -> BackendResult<()> {
        debug_assert!(size > 0 && dst != 0 && src != 0, "memcpy: an empty range or a null side");
        debug_assert!(dst != 0 && src != 0);
        self.execute(|| {
            // SAFETY: the runtime validated the arena side; the caller guarantees the host side.
            // Overlap is allowed (device-to-device within one allocation). The execution lock
            // keeps every other copy, fill and launch of this arena out meanwhile.
            unsafe { copy_addresses(dst, src, size) };
            Ok(())
        })
    }

    unsafe fn fill(&self, _: u32, dst: u64, value: FillValue, count: usize, _: Option<u64>) -> BackendResult<()> {
        debug_assert!(count > 0 && dst % value.width() as u64 == 0, "fill: an empty or misaligned range");
        let p = core::ptr::with_exposed_provenance_mut::<u8>(dst as usize);
        debug_assert!(p.align_offset(value.width()) == 0);
        self.execute(|| {
            // SAFETY: the runtime validated that `count` elements from `dst` lie in one live
            // allocation of this arena and that `dst` is aligned to the element width. Elements
            // are written through raw pointers, one at a time, under the execution lock.
            unsafe {
                match value {
                    FillValue::U8(v) => core::ptr::write_bytes(p, v, count),
                    FillValue::U16(v) => (0..count).for_each(|i| p.cast::<u16>().add(i).write(v)),
                    FillValue::U32(v) => (0..count).for_each(|i| p.cast::<u32>().add(i).write(v)),
                }
            }
            Ok(())
        })
    }

    fn queue_create(&self, device: u32) -> BackendResult<u64> {
        let mut s = self.checked_state(device)?;
        s.next_queue += 1;
        Ok(s.next_queue)
    }

    unsafe fn queue_destroy(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }

    unsafe fn queue_synchronize(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }

    unsafe fn queue_query(&self, _: u32, _: u64) -> BackendResult<bool> {
        Ok(true)
    }

    unsafe fn queue_wait_event(&self, _: u32, _: u64, _: u64) -> BackendResult<()> {
        Ok(())
    }

    fn event_create(&self, device: u32) -> BackendResult<u64> {
        let mut s = self.checked_state(device)?;
        let Some(i) = s.events.iter().position(|&e| e == EVENT_FREE) else {
            return Err(err(ErrorCode::OutOfResources, "host event slots exhausted"));
        };
        s.events[i] = EVENT_UNRECORDED;
        Ok(i as u64 + 1)
    }

    unsafe fn event_destroy(&self, _: u32, event: u64) -> BackendResult<()> {
        *Self::event_slot(&mut self.bookkeeping().lock(), event)? = EVENT_FREE;
        Ok(())
    }

    unsafe fn event_record(&self, _: u32, event: u64, _: u64) -> BackendResult<()> {
        let now = self.clock_ns.map_or(0, |clock| clock());
        *Self::event_slot(&mut self.bookkeeping().lock(), event)? = EVENT_RECORDED_BASE.saturating_add(now);
        Ok(())
    }

    unsafe fn event_synchronize(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }

    unsafe fn event_query(&self, _: u32, _: u64) -> BackendResult<bool> {
        Ok(true)
    }

    unsafe fn event_elapsed_ms(&self, _: u32, start: u64, end: u64) -> BackendResult<f32> {
        if self.clock_ns.is_none() {
            return Err(err(ErrorCode::Unsupported, "host backend was built without a clock"));
        }
        let mut s = self.bookkeeping().lock();
        let a = *Self::event_slot(&mut s, start)?;
        let b = *Self::event_slot(&mut s, end)?;
        if a < EVENT_RECORDED_BASE || b < EVENT_RECORDED_BASE {
            return Err(err(ErrorCode::InvalidArgument, "event was never recorded"));
        }
        Ok((b as f64 - a as f64) as f32 / 1.0e6)
    }

    fn program_load(&self, device: u32, image: &[u8]) -> BackendResult<u64> {
        let mut state = self.checked_state(device)?;
        match self.program_index(image) {
            // Place + 1 in the low 16 bits, and which load this is above them: two loads of one
            // program have different values, and so do their kernels (a graph's argument update
            // then refuses the other load's kernel, as CUDA's distinct functions are refused).
            Some(i) if i < PROGRAM_PLACES => {
                state.loads = state.loads.wrapping_add(1);
                Ok((u64::from(state.loads & 0xffff) << 16) | (i as u64 + 1))
            }
            Some(_) => Err(err(ErrorCode::OutOfResources, "more host programs than a program value can name")),
            None => Err(err(ErrorCode::InvalidBinary, "image names no registered host program")),
        }
    }

    unsafe fn program_unload(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }

    unsafe fn kernel_get(&self, _device: u32, program: u64, name: &str) -> BackendResult<u64> {
        let Some(p) = self.program_at(program_place(program)) else {
            return Err(err(ErrorCode::InvalidHandle, "host program does not exist"));
        };
        match p.kernels.iter().position(|k| k.name == name) {
            Some(k) => Ok((program << 32) | k as u64),
            None => Err(err(ErrorCode::NotFound, "no kernel of that name in the program")),
        }
    }

    unsafe fn host_kernel_fn(&self, _device: u32, kernel: u64) -> Option<usize> {
        self.host_kernel(kernel).ok().map(|k| k.run as usize)
    }

    unsafe fn launch(
        &self,
        device: u32,
        _: u64,
        kernel: u64,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> BackendResult<()> {
        debug_assert!(dims.validate(&HOST_LAUNCH_LIMITS).is_ok());
        if dims.shared_mem_bytes > HOST_LOCAL_MEMORY_BYTES {
            return Err(err(ErrorCode::InvalidValue, "more local memory than a host block has (48 KiB)"));
        }
        let host_kernel = self.host_kernel(kernel)?;
        host_kernel.check_extents(args)?;
        let run = host_kernel.run;
        // The blocks' local memory: one block of it, from the device's memory, for the launch
        // (blocks run one after another, each with it zeroed first).
        let local_len = dims.shared_mem_bytes as usize;
        let local = match local_len {
            0 => 0,
            n => self.mem_alloc(device, MemKind::Device, n)?,
        };
        let ran = self.execute(|| {
            // The kernel is user code: calls it makes into ordo that would wait for this launch
            // fail with `Busy` (std builds), and a panic in it is this launch's error (std
            // builds), the device usable afterwards.
            let _callback = reentry::mark();
            let mut prefix: heapless::String<96> = heapless::String::new();
            let _ =
                core::fmt::Write::write_fmt(&mut prefix, format_args!("host kernel '{}' panicked", host_kernel.name));
            // SAFETY: the caller of launch guarantees the arguments; `local` is this launch's.
            reentry::contain_message(&prefix, || unsafe { Self::run_grid(run, dims, args, local, local_len) })
                .unwrap_or_else(|message| Err(panicked(message)))
        });
        if local != 0 {
            // SAFETY: the allocation made above for this launch, used by nothing else now.
            let _ = unsafe { self.mem_free(device, MemKind::Device, local, local_len) };
        }
        ran
    }

    unsafe fn kernel_param_layout(&self, _: u32, kernel: u64, out: &mut ParamLayout) -> BackendResult<()> {
        let k = self.host_kernel(kernel)?;
        *out = c_layout(k.params).ok_or_else(|| err(ErrorCode::Unsupported, "host kernel declares unusable sizes"))?;
        Ok(())
    }

    unsafe fn kernel_optimal_block_size(&self, _: u32, kernel: u64, _: usize) -> BackendResult<u32> {
        // Threads run one at a time on the calling thread: no block size beats another.
        self.host_kernel(kernel).map(|_| 1)
    }

    unsafe fn program_global(&self, _: u32, _: u64, _: &str) -> BackendResult<(u64, usize)> {
        Err(err(ErrorCode::NotFound, "host programs have no global variables"))
    }

    fn program_check(&self, device: u32, image: &[u8]) -> BackendResult<bool> {
        drop(self.checked_state(device)?);
        Ok(self.program_index(image).is_some())
    }

    unsafe fn fill_pattern(&self, _: u32, dst: u64, pattern: &[u8], count: usize, _: Option<u64>) -> BackendResult<()> {
        debug_assert!(!pattern.is_empty() && count > 0 && dst != 0, "fill_pattern: an empty pattern or range");
        let p = core::ptr::with_exposed_provenance_mut::<u8>(dst as usize);
        self.execute(|| {
            for i in 0..count {
                // SAFETY: the runtime validated that `count` copies of the pattern from `dst` lie
                // in one live allocation of this arena; bytes are written through raw pointers
                // under the execution lock; `pattern` is a separate (caller's) slice.
                unsafe { core::ptr::copy_nonoverlapping(pattern.as_ptr(), p.add(i * pattern.len()), pattern.len()) };
            }
            Ok(())
        })
    }

    unsafe fn queue_host_function(&self, _: u32, _: u64, f: HostFn, data: *mut core::ffi::c_void) -> BackendResult<()> {
        // Host queues run their work when it is submitted: everything before it has finished.
        self.execute(|| {
            let _callback = reentry::mark();
            // SAFETY: the caller's contract for `f(data)`.
            unsafe { f(data) };
            Ok(())
        })
    }
}

#[cfg(all(test, not(loom)))]
mod graph_tests;
#[cfg(all(test, not(loom)))]
mod tests;
