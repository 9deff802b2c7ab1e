//! The host backend: the embedded default, in `no_std`.
//!
//! Memory comes from a fixed arena the host supplies (`HostArena`, usually a `static`); programs
//! are named sets of host kernels registered at build time (an image is a program's name; an
//! unknown name is `InvalidBinary`); a launch runs the whole grid on the calling thread, so queues
//! are in order and events complete when recorded. Depends on `backend`, `error`, `capacity`.
//!
//! Files: `arena.rs` (where memory comes from), `state.rs` (the bookkeeping kept with an arena),
//! `kernels.rs` (host kernels, programs and their registry), `builtin.rs` (the built-in
//! program); this file is the backend itself.

mod arena;
pub mod builtin;
mod kernels;
mod state;
mod sysinfo;

pub use arena::{ArenaRegion, HOST_ALIGN, HostArena, ProvidedArena};
pub use kernels::{
    HostKernel, HostKernelFn, HostProgram, HostProgramRegistry, HostThread, MAX_REGISTERED_HOST_PROGRAMS,
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
    exec: spin::Mutex<()>,
}

/// Runs `f` as a user callback of the host device (a host function or kernel run by a queue
/// worker outside this backend): calls it makes into ordo that would wait for it fail with
/// `Busy` instead of deadlocking (std builds; without std it just runs `f`).
pub fn run_as_callback<T>(f: impl FnOnce() -> T) -> T {
    let _callback = reentry::mark();
    f()
}

/// Whether the calling thread is running a user callback of a runtime (a host kernel, a host
/// function, a teardown observer): a call that would wait for other work must then fail with
/// `Busy`. Always `false` without std.
pub fn in_callback() -> bool {
    reentry::in_callback()
}

/// A system allocator for the host backend (`HostBackend::with_heap`); with feature `std`,
/// `STD_HOST_HEAP`.
#[derive(Clone, Copy)]
pub struct HostHeap {
    /// `size > 0` zeroed bytes aligned to `HOST_ALIGN`, or null when there are none.
    pub alloc: fn(usize) -> *mut u8,
    /// Gives back a block `alloc` returned.
    ///
    /// # Safety
    /// `ptr` came from `alloc(size)` and was not given back since.
    pub free: unsafe fn(*mut u8, usize),
}

/// The process heap (`std::alloc`), as the host backend's `HostHeap`.
#[cfg(feature = "std")]
pub const STD_HOST_HEAP: HostHeap = HostHeap {
    alloc: |size| match core::alloc::Layout::from_size_align(size, HOST_ALIGN) {
        // SAFETY: a non-zero size (the backend's contract).
        Ok(layout) => unsafe { std::alloc::alloc_zeroed(layout) },
        Err(_) => core::ptr::null_mut(),
    },
    free: |ptr, size| {
        if let Ok(layout) = core::alloc::Layout::from_size_align(size, HOST_ALIGN) {
            // SAFETY: the caller's contract: `ptr` is a live block of this layout.
            unsafe { std::alloc::dealloc(ptr, layout) }
        }
    },
};

/// Copies `size` bytes from address `src` to address `dst` (the ranges may overlap) through raw
/// pointers of exposed provenance: no reference over bytes other code may reach.
///
/// # Safety
/// Both ranges are valid for `size` bytes (reads at `src`, writes at `dst`).
pub(crate) unsafe fn copy_addresses(dst: u64, src: u64, size: usize) {
    debug_assert!(size == 0 || (dst != 0 && src != 0), "copy_addresses: a null side");
    debug_assert!(
        dst.checked_add(size as u64).is_some() && src.checked_add(size as u64).is_some(),
        "copy_addresses: a range past the address space"
    );
    // SAFETY: the caller's contract; `copy` allows overlap.
    unsafe {
        core::ptr::copy(
            core::ptr::with_exposed_provenance::<u8>(src as usize),
            core::ptr::with_exposed_provenance_mut::<u8>(dst as usize),
            size,
        )
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
            exec: spin::Mutex::new(()),
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

    /// The program in place `i`: the built-in list first, then the registry's.
    fn program_at(&self, i: usize) -> Option<&'static HostProgram> {
        match self.programs.get(i) {
            Some(p) => Some(p),
            None => self.registry?.get(i - self.programs.len()),
        }
    }

    /// The bookkeeping of the arena (a backend over it is the only reader).
    fn bookkeeping(&self) -> &spin::Mutex<HostState> {
        &self.arena.bookkeeping().0
    }

    /// Heap mode's allocation: a block of the machine's memory, within its size where known.
    fn heap_alloc(&self, s: &mut HostState, size: usize) -> BackendResult<u64> {
        let exhausted = || err(ErrorCode::OutOfResources, "the machine's memory is exhausted");
        let heap = self.heap.ok_or_else(exhausted)?;
        let limit = match (self.info)().memory_bytes {
            0 => u64::MAX,
            bytes => bytes,
        };
        let size = size.max(1);
        if s.heap_used.checked_add(size as u64).is_none_or(|total| total > limit) || size > isize::MAX as usize {
            return Err(exhausted());
        }
        let block = (heap.alloc)(size);
        if block.is_null() {
            return Err(exhausted());
        }
        s.heap_used += size as u64;
        Ok(block.expose_provenance() as u64)
    }

    /// Bytes of the arena not allocated right now (0 when the backend is not initialised or
    /// allocates from its heap).
    pub fn free_bytes(&self) -> usize {
        self.bookkeeping().lock().free.iter().map(|&(_, blocks)| blocks as usize * HOST_ALIGN).sum()
    }

    fn program_index(&self, image: &[u8]) -> Option<usize> {
        let name = image.strip_suffix(&[0]).unwrap_or(image);
        let registered = self.registry.into_iter().flat_map(|r| r.iter());
        self.programs.iter().chain(registered).position(|p| p.name.as_bytes() == name)
    }

    fn host_kernel(&self, kernel: u64) -> BackendResult<&HostKernel> {
        let program = self.program_at(((kernel >> 32) as usize).wrapping_sub(1));
        program
            .and_then(|p| p.kernels.get((kernel & 0xffff_ffff) as usize))
            .ok_or_else(|| err(ErrorCode::InvalidHandle, "host kernel does not exist"))
    }

    fn event_slot(state: &mut HostState, raw: u64) -> BackendResult<&mut u64> {
        match state.events.get_mut((raw as usize).wrapping_sub(1)) {
            Some(slot) if *slot != EVENT_FREE => Ok(slot),
            _ => Err(err(ErrorCode::InvalidHandle, "host event does not exist")),
        }
    }

    /// The state, for a safe call: `device` must be 0 and the backend initialised.
    fn checked_state(&self, device: u32) -> BackendResult<spin::MutexGuard<'_, HostState>> {
        if device != 0 {
            return Err(err(ErrorCode::InvalidArgument, "the host platform has one device, 0"));
        }
        let s = self.bookkeeping().lock();
        if !s.up {
            return Err(err(ErrorCode::Uninitialized, "the host backend is not initialised"));
        }
        Ok(s)
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
        Capabilities::HOST_ACCESSIBLE_MEMORY | timing
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
            DeviceInfo::Name => InfoValue::text("host CPU (calling thread)"),
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
        let exhausted = || err(ErrorCode::OutOfResources, "host arena exhausted");
        let mut s = self.checked_state(device)?;
        if s.heap {
            return self.heap_alloc(&mut s, size);
        }
        let need = u32::try_from(size.max(1).div_ceil(HOST_ALIGN)).map_err(|_| exhausted())?;
        let i = s.free.iter().position(|&(_, len)| len >= need).ok_or_else(exhausted)?;
        let (offset, len) = s.free[i];
        if len == need {
            s.free.remove(i);
        } else {
            s.free[i] = (offset + need, len - need);
        }
        // The address leaves as an integer; exposing the arena's provenance lets the copies,
        // fills and kernels that get it back turn it into a pointer again.
        Ok(s.base.wrapping_add(offset as usize * HOST_ALIGN).expose_provenance() as u64)
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
        debug_assert!(size > 0 && addr % HOST_ALIGN as u64 == 0, "mem_free: not an allocation this backend made");
        let mut s = self.bookkeeping().lock();
        if let (true, Some(heap)) = (s.heap, self.heap) {
            s.heap_used -= size as u64;
            drop(s);
            // SAFETY: a live allocation of this backend (the contract), made by `heap.alloc(size)`.
            unsafe { (heap.free)(core::ptr::with_exposed_provenance_mut(addr as usize), size) };
            return Ok(());
        }
        // A live allocation of this arena (the contract): its block offset and length fit in u32.
        let offset = ((addr - s.base as u64) as usize / HOST_ALIGN) as u32;
        let len = size.div_ceil(HOST_ALIGN) as u32;
        let i = s.free.partition_point(|&(o, _)| o < offset);
        let joins_prev = i > 0 && s.free[i - 1].0 + s.free[i - 1].1 == offset;
        let joins_next = i < s.free.len() && offset + len == s.free[i].0;
        match (joins_prev, joins_next) {
            (true, true) => {
                let next = s.free.remove(i);
                s.free[i - 1].1 += len + next.1;
            }
            (true, false) => s.free[i - 1].1 += len,
            (false, true) => s.free[i] = (offset, len + s.free[i].1),
            (false, false) => {
                // Cannot overflow: free ranges never outnumber live allocations plus one.
                let _ = s.free.insert(i, (offset, len));
            }
        }
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
        drop(self.checked_state(device)?);
        match self.program_index(image) {
            Some(i) => Ok(i as u64 + 1),
            None => Err(err(ErrorCode::InvalidBinary, "image names no registered host program")),
        }
    }

    unsafe fn program_unload(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }

    unsafe fn kernel_get(&self, _device: u32, program: u64, name: &str) -> BackendResult<u64> {
        let Some(p) = self.program_at((program as usize).wrapping_sub(1)) else {
            return Err(err(ErrorCode::InvalidHandle, "host program does not exist"));
        };
        match p.kernels.iter().position(|k| k.name == name) {
            Some(k) => Ok((program << 32) | k as u64),
            None => Err(err(ErrorCode::NotFound, "no kernel of that name in the program")),
        }
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
        let run = self.host_kernel(kernel)?.run;
        // The blocks' local memory: one block of it, from the device's memory, for the launch
        // (blocks run one after another, each with it zeroed first).
        let local_len = dims.shared_mem_bytes as usize;
        let local = match local_len {
            0 => 0,
            n => self.mem_alloc(device, MemKind::Device, n)?,
        };
        let ran = self.execute(|| {
            // The kernel is user code: calls it makes into ordo that would wait for this launch
            // fail with `Busy` (std builds).
            let _callback = reentry::mark();
            let local = core::ptr::with_exposed_provenance_mut::<u8>(local as usize);
            let mut t = HostThread {
                thread: [0; 3],
                block: [0; 3],
                block_dim: dims.block,
                grid_dim: dims.grid,
                local,
                local_len,
            };
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

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::DevicePtr;

    static ARENA: HostArena<{ 4 * HOST_ALIGN }> = HostArena::new();
    static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
    static BACKENDS: [&dyn Backend; 1] = [&HOST];
    crate::static_runtime!(static RT = &BACKENDS);

    /// Any interleaving of valid calls is free of data races and uninitialised reads (Miri
    /// checks this test: `cargo +nightly miri test -p ordo-core --lib host`): threads copy into,
    /// out of, fill and launch over one allocation at once, and a fresh allocation reads as zeros.
    #[test]
    fn concurrent_copies_fills_and_launches_on_one_allocation_are_sound() {
        RT.init().unwrap();
        let d = RT.device(RT.platform(0).unwrap(), 0).unwrap();
        let m = RT.mem_alloc(d, MemKind::Device, 64).unwrap();
        let mut fresh = [0xffu8; 64];
        RT.copy_from_device(&mut fresh, m).unwrap();
        assert_eq!(fresh, [0; 64], "the arena starts zeroed");
        let q = RT.queue_create(d).unwrap();
        let p = RT.program_load(d, builtin::PROGRAM_NAME.as_bytes()).unwrap();
        let add = RT.kernel_get(p, "vector_add_f32").unwrap();
        let threads: std::vec::Vec<_> = (0..3u8)
            .map(|i| {
                std::thread::spawn(move || {
                    for _ in 0..3 {
                        match i {
                            0 => RT.copy_to_device(m, &[i; 64]).unwrap(),
                            1 => RT.fill(m, crate::FillValue::U16(0x0101), 32, None).unwrap(),
                            _ => {
                                let mut out = [0u8; 64];
                                RT.copy_from_device(&mut out, m).unwrap();
                                let (a, n) = (m.as_ptr::<f32>(), 16u32);
                                let params = [
                                    core::ptr::addr_of!(a) as *mut core::ffi::c_void,
                                    core::ptr::addr_of!(a) as *mut _,
                                    core::ptr::addr_of!(a) as *mut _,
                                    core::ptr::addr_of!(n) as *mut _,
                                ];
                                const PTR: usize = core::mem::size_of::<*mut f32>();
                                let args = KernelArgs::new(&params, &[PTR, PTR, PTR, 4]).unwrap();
                                // SAFETY: (ptr, ptr, ptr, u32) over 16 floats of the allocation.
                                unsafe { RT.launch(q, add, &LaunchDims::linear(1, 16), &args) }.unwrap();
                            }
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        RT.fill(m.offset(2), crate::FillValue::U16(7), 3, None).unwrap();
        let mut out = [0u8; 8];
        RT.copy_from_device(&mut out, m).unwrap();
        assert_eq!(&out[2..8], &[7, 0, 7, 0, 7, 0]);
        assert_eq!(RT.mem_free(DevicePtr(m.0)), Ok(()));
        RT.shutdown().unwrap();
    }

    /// Each thread adds its index + 1 to the block's local counter; the last thread writes the
    /// block's sum to `out[block]`.
    unsafe fn block_sum(t: &HostThread, args: &KernelArgs<'_>) -> Result<(), Error> {
        // SAFETY: the test passes one pointer to `grid` u32s of device memory.
        let out: *mut u32 = unsafe { args.read(0) }?;
        assert!(!t.local.is_null() && t.local_len >= 4);
        let counter = t.local.cast::<u32>();
        // SAFETY: the block's local memory, at least 4 bytes, used by this thread only now.
        unsafe { counter.write_unaligned(counter.read_unaligned() + t.thread[0] + 1) };
        if t.thread[0] + 1 == t.block_dim[0] {
            // SAFETY: `out` has an entry per block.
            unsafe { out.add(t.block[0] as usize).write_unaligned(counter.read_unaligned()) };
        }
        Ok(())
    }

    static LOCAL_ARENA: HostArena<{ 4 * HOST_ALIGN }> = HostArena::new();
    static LOCAL_PROGRAMS: [HostProgram; 1] = [HostProgram {
        name: "local",
        kernels: &[HostKernel { name: "block_sum", run: block_sum, params: &[core::mem::size_of::<*mut u32>()] }],
    }];
    static LOCAL_HOST: HostBackend = HostBackend::new(&LOCAL_ARENA, &LOCAL_PROGRAMS, None);
    static LOCAL_BACKENDS: [&dyn Backend; 1] = [&LOCAL_HOST];
    crate::static_runtime!(static LOCAL_RT = &LOCAL_BACKENDS);

    /// A launch's local memory: zeroed per block, common to the block's threads, freed after the
    /// launch; more than 48 KiB is `InvalidValue`; the device reports the limit.
    #[test]
    fn blocks_have_local_memory() {
        let rt = &LOCAL_RT;
        rt.init().unwrap();
        let d = rt.device(rt.platform(0).unwrap(), 0).unwrap();
        assert_eq!(rt.device_info(d, DeviceInfo::MaxSharedMemoryPerBlockOptin).unwrap(), InfoValue::Int(48 * 1024));
        let out = rt.mem_alloc(d, MemKind::Device, 12).unwrap();
        let q = rt.queue_create(d).unwrap();
        let p = rt.program_load(d, b"local").unwrap();
        let k = rt.kernel_get(p, "block_sum").unwrap();
        let ptr = out.as_ptr::<u32>();
        let params = [core::ptr::addr_of!(ptr) as *mut core::ffi::c_void];
        let args = KernelArgs::new(&params, &[core::mem::size_of::<*mut u32>()]).unwrap();
        let free = LOCAL_HOST.free_bytes();
        let dims = LaunchDims { grid: [3, 1, 1], block: [4, 1, 1], shared_mem_bytes: 4 };
        // SAFETY: one pointer to 3 u32s of device memory.
        unsafe { rt.launch(q, k, &dims, &args) }.unwrap();
        let mut sums = [0u8; 12];
        rt.copy_from_device(&mut sums, out).unwrap();
        let word = |i: usize| u32::from_ne_bytes(sums[i * 4..i * 4 + 4].try_into().unwrap());
        assert_eq!([word(0), word(1), word(2)], [10, 10, 10], "zeroed for each block");
        assert_eq!(LOCAL_HOST.free_bytes(), free, "the local memory went back");
        let too_much = LaunchDims { shared_mem_bytes: 48 * 1024 + 1, ..dims };
        // SAFETY: as above.
        assert_eq!(unsafe { rt.launch(q, k, &too_much, &args) }.unwrap_err().code, ErrorCode::InvalidValue);
        rt.shutdown().unwrap();
    }

    unsafe extern "C" fn bump(data: *mut core::ffi::c_void) {
        // SAFETY: the test passes a live `u32`.
        unsafe { *data.cast::<u32>() += 1 };
    }

    /// The calls liboffload's API needs: fills of any pattern size at any alignment, host
    /// functions on a queue, declared parameter layouts, image checks, and no globals.
    #[test]
    fn patterns_host_functions_layouts_and_checks() {
        RT.init().unwrap();
        let d = RT.device(RT.platform(0).unwrap(), 0).unwrap();
        let m = RT.mem_alloc(d, MemKind::Device, 32).unwrap();
        let q = RT.queue_create(d).unwrap();
        // (The arena is shared with the other test: its memory may hold that test's bytes.)
        RT.copy_to_device(m, &[0; 32]).unwrap();
        RT.fill_pattern(m.offset(1), &[1, 2, 3], 30, Some(q)).unwrap();
        let mut out = [0u8; 32];
        RT.copy_from_device(&mut out, m).unwrap();
        assert_eq!(&out[..7], &[0, 1, 2, 3, 1, 2, 3]);
        assert_eq!(out[29..], [2, 3, 0]);
        let code = |r: crate::Result<()>| r.unwrap_err().code;
        assert_eq!(code(RT.fill_pattern(m, &[1, 2, 3], 31, None)), ErrorCode::InvalidSize);
        assert_eq!(code(RT.fill_pattern(m, &[], 0, None)), ErrorCode::InvalidSize);
        assert_eq!(code(RT.fill_pattern(m, &[1, 2], 34, None)), ErrorCode::InvalidSize);
        assert_eq!(RT.fill_pattern(m, &[1, 2], 0, None), Ok(()));
        let mut calls = 0u32;
        // SAFETY: `bump` takes the live `calls`.
        unsafe { RT.queue_host_function(q, bump, core::ptr::addr_of_mut!(calls).cast()) }.unwrap();
        assert_eq!(calls, 1, "host queues run the function before the call returns");
        let p = RT.program_load(d, builtin::PROGRAM_NAME.as_bytes()).unwrap();
        let add = RT.kernel_get(p, "vector_add_f32").unwrap();
        let layout = RT.kernel_param_layout(add).unwrap();
        let ptr = core::mem::size_of::<usize>() as u32;
        let want = [(0, ptr), (ptr, ptr), (2 * ptr, ptr), (3 * ptr, 4)];
        assert_eq!(layout.iter().map(|s| (s.offset, s.size)).collect::<std::vec::Vec<_>>(), want);
        assert_eq!(RT.kernel_optimal_block_size(add, 0), Ok(1));
        assert_eq!(RT.program_check(d, b"ordo.builtin"), Ok(true));
        assert_eq!(RT.program_check(d, b"nope"), Ok(false));
        assert_eq!(RT.program_check(d, b"").unwrap_err().code, ErrorCode::InvalidSize);
        assert_eq!(RT.program_global(p, "g").unwrap_err().code, ErrorCode::NotFound);
        assert_eq!(RT.mem_alloc(d, MemKind::Global, 8).unwrap_err().code, ErrorCode::InvalidEnumeration);
        RT.program_unload(p).unwrap();
        assert_eq!(RT.kernel_param_layout(add).unwrap_err().code, ErrorCode::InvalidHandle);
        RT.mem_free(m).unwrap();
        RT.shutdown().unwrap();
    }
}
