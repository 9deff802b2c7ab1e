//! The `Backend` trait: the one contract between the runtime and a driver (CUDA, HSA, host).
//!
//! Backends are thin: they translate calls and errors. The runtime owns all state, ordering and
//! validation. Every method whose soundness depends on that validation (object values, addresses,
//! sizes) is an `unsafe fn`, and the trait's docs state exactly what the runtime guarantees to
//! it (as wgpu-hal does); the methods that stay safe check what they are given themselves.
//!
//! Lifecycle as seen by a backend: `init` once (returns the device count; a second `init`
//! before `deinit` fails with `Busy`), then any object call, then, at teardown: `queue_synchronize`
//! on every queue of every device of every platform; then, for each device in reverse order,
//! `event_destroy`, `queue_destroy`, `program_unload`, `mem_free` (each newest first),
//! `device_release`; then `deinit`. After `deinit`, `init` may be called again.
//! Depends on `error`.
//!
//! The values that cross the trait live in `types.rs` and, a launch's, in `launch.rs`; this file
//! holds the trait and the names of its methods (`BackendOp`).

mod collective;
mod launch;
mod op;
mod types;

pub use collective::*;
pub use launch::*;
pub use op::BackendOp;
pub use types::*;

use core::ffi::c_void;

use crate::error::{BackendError, ErrorCode};

/// Result of a backend call.
pub type BackendResult<T> = core::result::Result<T, BackendError>;

/// A driver behind the runtime. Object-safe; the runtime holds `&'static dyn Backend`s.
///
/// Device numbers are the backend's own ordinals `0..init()`. Object values (`u64`) are opaque to
/// the runtime.
///
/// # What the runtime guarantees to the `unsafe` methods
/// The runtime that initialised the backend (its `init` returned `Ok`) is the only caller of the
/// `unsafe` methods, and it calls them only between that `init` and the matching `deinit`, never
/// concurrently with either. For every call:
/// - `device` is an ordinal below the count `init` returned, not yet released.
/// - Every object value (queue, event, program, kernel) is one this backend returned for that
///   same device, and has not been destroyed or unloaded; a kernel's program is still loaded.
/// - Addresses and sizes of device memory (`mem_free`, the device sides of `memcpy`, `fill`) lie
///   within one live allocation this backend returned for that device: `mem_free` gets the
///   base, kind and size that `mem_alloc` was given; ranges are non-empty, do not overflow, and
///   fill destinations are aligned to the element width. The one exception is queue-ordered
///   memory of a backend whose `ordered_concurrent` is true: a range of it may have been freed
///   by a `mem_free_on` racing the call (see there).
/// - Launch dimensions are within `launch_limits(device)`.
/// - After `deinit` or `forget_after_fork`, no object value from before is passed again.
///
/// The safe methods (`init`, `device_info`, `launch_limits`, the create calls `mem_alloc`,
/// `queue_create`, `event_create`, `program_load`) must be sound for any argument: they check
/// the device ordinal and that the backend is initialised, and `program_load` checks that the
/// image is well-formed before a driver reads it.
pub trait Backend: Sync {
    /// Which driver this is.
    fn kind(&self) -> BackendKind;
    /// A short name for reports and `ordo info`.
    fn name(&self) -> &'static str {
        self.kind().name()
    }
    /// What this backend's devices can do.
    fn capabilities(&self) -> Capabilities;
    /// Loads and initialises the driver; returns the number of devices. A missing driver or no
    /// devices is `ErrorCode::NotPresent` (the platform is recorded as absent); a backend that
    /// is already initialised fails with `ErrorCode::Busy` (one backend serves one runtime).
    fn init(&self) -> BackendResult<u32>;
    /// Releases the driver after every object and device was released.
    ///
    /// # Safety
    /// See the trait docs: called once by the runtime that initialised the backend, at the end
    /// of its teardown (or roll-back), when no object of the backend is in use.
    unsafe fn deinit(&self) -> BackendResult<()>;
    /// In the child of a `fork`: forgets every object and the initialised state without calling
    /// the driver (the child's copies of the parent's driver objects must not be used), and frees
    /// any lock that a thread of the parent held, so that `init` may run again.
    ///
    /// # Safety
    /// Called in a forked child before it has other threads; no object value of this backend
    /// from before is used afterwards.
    unsafe fn forget_after_fork(&self);
    /// Waits for work that this backend runs on threads of its own (a host queue's worker) and
    /// that its release calls (`mem_free`, `program_unload`, `event_destroy`) would wait for.
    /// The runtime calls it with none of its locks held, before it takes its tables exclusively
    /// for such a call, so that other threads' calls go on meanwhile (a host function waiting for
    /// another thread's progress through ordo would otherwise wait for the release, which waits
    /// for it). Work submitted after it started is not waited for; errors stay with their queues.
    /// Any state, any thread; the default does nothing.
    fn settle(&self) {}
    /// Releases what `init` acquired for `device` (e.g. the primary context).
    ///
    /// # Safety
    /// See the trait docs; every object of the device was released first.
    unsafe fn device_release(&self, device: u32) -> BackendResult<()>;
    /// A device property (`InvalidArgument` for a device that does not exist).
    fn device_info(&self, device: u32, key: DeviceInfo) -> BackendResult<InfoValue>;
    /// The launch dimensions `device` accepts (read once per device at init; infallible so that
    /// init needs no extra driver call: backends learn them while initialising).
    fn launch_limits(&self, device: u32) -> LaunchLimits;
    /// `device`'s launches as plain functions (`FastLaunch`), for the runtime's launch path:
    /// asked once per device at init, used until the device is released. Default: none (every
    /// launch is a `launch` or `launch_packed` call). A backend that counts, injects faults into
    /// or wraps its launches returns none, so that every launch reaches those calls.
    fn fast_launch(&self, device: u32) -> Option<FastLaunch> {
        let _ = device;
        None
    }

    /// Allocates `size > 0` bytes; returns the address.
    fn mem_alloc(&self, device: u32, kind: MemKind, size: usize) -> BackendResult<u64>;
    /// Frees an allocation made by `mem_alloc` (its base address, kind and size), or unregisters
    /// a range `host_register` registered (kind `Registered`).
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn mem_free(&self, device: u32, kind: MemKind, addr: u64, size: usize) -> BackendResult<()>;
    /// Allocates `size > 0` bytes of device memory in the order of `queue` (a live queue of
    /// `device`): usable by work submitted to the queue after this call, and by other queues
    /// once they wait for an event recorded after it (CUDA: `cuMemAllocAsync` from the device's
    /// memory pool). `mem_free` (kind `Ordered`) frees it as well as `mem_free_on` does. Default
    /// (backends without pools, such as the host backend and AMDGPU): allocated at once as
    /// device memory, which is usable earlier than the queue needs it.
    ///
    /// # Safety
    /// See the trait docs: a live queue of the device.
    unsafe fn mem_alloc_on(&self, device: u32, queue: u64, size: usize) -> BackendResult<u64> {
        let _ = queue;
        self.mem_alloc(device, MemKind::Device, size)
    }
    /// Frees memory from `mem_alloc_on` (its base and size) in the order of `queue` (a live
    /// queue of `device`): after the queue's earlier work, which may still use it (CUDA:
    /// `cuMemFreeAsync`). Default: waits for the queue, then frees it with `mem_free`.
    ///
    /// # Safety
    /// See the trait docs: a live allocation from `mem_alloc_on` of this device, a live queue
    /// of it; the runtime never passes the address again.
    unsafe fn mem_free_on(&self, device: u32, queue: u64, addr: u64, size: usize) -> BackendResult<()> {
        // SAFETY: forwarded contract.
        unsafe {
            self.queue_synchronize(device, queue)?;
            self.mem_free(device, MemKind::Ordered, addr, size)
        }
    }
    /// Whether `mem_alloc_on` and `mem_free_on` of `device` may run beside the runtime's other
    /// calls on the backend, where by default the runtime makes them alone (as every allocation
    /// and free). True means, and the backend promises: the two calls are thread-safe; the host
    /// never reads or writes the device's memory itself (only the driver's calls and the
    /// device's work reach it); and another thread's call may then be given a range of
    /// queue-ordered memory that a `mem_free_on` on a third thread has just freed (the runtime
    /// looked it up a moment before the free), which the driver refuses or runs on memory of
    /// its pool, as it would a use of the memory on another queue after its free — never a
    /// fault of the host process. Asked once per device at init. Default: false (CUDA: true;
    /// the host backend's memory is the host's own).
    fn ordered_concurrent(&self, device: u32) -> bool {
        let _ = device;
        false
    }
    /// Starts capturing `queue`'s work into a graph: what is submitted to the queue from now on
    /// (launches, copies, fills, host functions, event records and waits) is recorded instead
    /// of run, until `queue_end_capture` (CUDA: `cuStreamBeginCapture` in relaxed mode).
    /// Default: `Unsupported`.
    ///
    /// # Safety
    /// See the trait docs: a live queue of the device that is not capturing.
    unsafe fn queue_begin_capture(&self, device: u32, queue: u64) -> BackendResult<()> {
        let _ = (device, queue);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend has no graphs"))
    }
    /// Ends `queue`'s capture and returns the captured work as an executable graph of the
    /// device (CUDA: `cuStreamEndCapture`, then `cuGraphInstantiate`). The queue is no longer
    /// capturing afterwards, also when this fails (a capture the driver invalidated, say).
    ///
    /// # Safety
    /// See the trait docs: a live queue of the device that is capturing.
    unsafe fn queue_end_capture(&self, device: u32, queue: u64) -> BackendResult<u64> {
        let _ = (device, queue);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend has no graphs"))
    }
    /// Launches `graph` on `queue` (both of the device), asynchronously (CUDA: `cuGraphLaunch`).
    ///
    /// # Safety
    /// See the trait docs: a live graph from `queue_end_capture` and a live queue, both of the
    /// device; the memory and kernels the graph uses are live.
    unsafe fn graph_launch(&self, device: u32, graph: u64, queue: u64) -> BackendResult<()> {
        let _ = (device, graph, queue);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend has no graphs"))
    }
    /// Calls `each` with the kernel of every launch `graph` holds, in capture order: the
    /// launches `graph_set_args` numbers from 0. Default: `Unsupported` (the runtime then
    /// counts no launches to update, and any program unloaded on the device orphans the graph).
    ///
    /// # Safety
    /// See the trait docs: a live graph of the device.
    unsafe fn graph_kernels(&self, device: u32, graph: u64, each: &mut dyn FnMut(u64)) -> BackendResult<()> {
        let _ = (device, graph, each);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend cannot list a graph's launches"))
    }
    /// Sets the arguments of launch number `index` (capture order) of `graph` for its later
    /// launches (CUDA: `cuGraphExecKernelNodeSetParams`); the launch's grid, block and shared
    /// memory stay as captured, launches already submitted keep the old arguments. Errors:
    /// `InvalidArgument` when there is no launch `index`, or it runs another kernel than
    /// `kernel`. Thread-safe against launches of the same graph. Default: `Unsupported`.
    ///
    /// # Safety
    /// See the trait docs: a live graph and kernel of the device; `args` holds one pointer to a
    /// value of each of the kernel's parameters (as `launch`).
    unsafe fn graph_set_args(
        &self,
        device: u32,
        graph: u64,
        index: u32,
        kernel: u64,
        args: &KernelArgs<'_>,
    ) -> BackendResult<()> {
        let _ = (device, graph, index, kernel, args);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend has no graphs"))
    }
    /// Destroys a graph (launches of it already submitted still run to completion).
    ///
    /// # Safety
    /// See the trait docs: a live graph of the device, never passed again.
    unsafe fn graph_destroy(&self, device: u32, graph: u64) -> BackendResult<()> {
        let _ = (device, graph);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend has no graphs"))
    }
    /// Page-locks `size > 0` bytes of existing host memory at `addr` and maps them for the device
    /// at the same address (CUDA: `cuMemHostRegister`), until `mem_free` with kind `Registered`.
    /// Backends without it keep this default: `Unsupported`.
    ///
    /// # Safety
    /// The range is host memory that stays valid until it is unregistered, and overlaps no other
    /// registered range or allocation (the runtime checks the second).
    unsafe fn host_register(&self, device: u32, addr: u64, size: usize) -> BackendResult<()> {
        let _ = (device, addr, size);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend cannot register host memory"))
    }
    /// Copies `size` bytes from `src` on device `src_device` to `dst` on device `dst_device`,
    /// two devices of this backend (a peer copy: CUDA `cuMemcpyPeerAsync`, with peer access
    /// enabled where the driver allows it). With a queue (`(device, queue)`, a queue of one of
    /// the two devices), asynchronously on it; without one, it returns when the copy is complete
    /// and starts after all work submitted earlier to both devices' queues. Default:
    /// `Unsupported`.
    ///
    /// # Safety
    /// See the trait docs: both ranges lie in live allocations of their devices, the queue is a
    /// live queue of its device.
    unsafe fn memcpy_peer(
        &self,
        dst_device: u32,
        dst: u64,
        src_device: u32,
        src: u64,
        size: usize,
        queue: Option<(u32, u64)>,
    ) -> BackendResult<()> {
        let _ = (dst_device, dst, src_device, src, size, queue);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend cannot copy between its devices"))
    }
    /// How `device` reaches `peer`'s memory (two devices of this backend): directly or not, and
    /// what the driver says of the link. Default: no direct access.
    fn peer_access(&self, device: u32, peer: u32) -> BackendResult<PeerAccess> {
        let _ = (device, peer);
        Ok(PeerAccess::NONE)
    }
    /// Copies `size` bytes; with a queue, asynchronously on it. Without a queue, returns when the
    /// copy is complete, and starts after all work submitted earlier to the device's queues.
    ///
    /// # Safety
    /// See the trait docs for the device sides and the queue; host pointers (`dst` for
    /// device-to-host, `src` for host-to-device) are valid for `size` bytes until the copy
    /// completes.
    unsafe fn memcpy(
        &self,
        device: u32,
        kind: CopyKind,
        dst: u64,
        src: u64,
        size: usize,
        queue: Option<u64>,
    ) -> BackendResult<()>;
    /// Writes `value` `count` times from `dst`; with a queue, asynchronously. Without one, ordered
    /// like `memcpy`.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn fill(
        &self,
        device: u32,
        dst: u64,
        value: FillValue,
        count: usize,
        queue: Option<u64>,
    ) -> BackendResult<()>;

    /// Creates an in-order queue.
    fn queue_create(&self, device: u32) -> BackendResult<u64>;
    /// Creates a queue whose work need not be ordered before later calls without a queue (CUDA:
    /// a non-blocking stream, as `cudaStreamNonBlocking`), for callers that synchronise their
    /// queues themselves. Default: an ordinary `queue_create` queue.
    fn queue_create_independent(&self, device: u32) -> BackendResult<u64> {
        self.queue_create(device)
    }
    /// Destroys a queue.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn queue_destroy(&self, device: u32, queue: u64) -> BackendResult<()>;
    /// Waits until all work on the queue has finished.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn queue_synchronize(&self, device: u32, queue: u64) -> BackendResult<()>;
    /// Whether all work on the queue has finished.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn queue_query(&self, device: u32, queue: u64) -> BackendResult<bool>;
    /// Makes later work on `queue` wait for `event` (an event of the same backend, possibly of
    /// another device).
    ///
    /// # Safety
    /// See the trait docs; `event` is live on its own device.
    unsafe fn queue_wait_event(&self, device: u32, queue: u64, event: u64) -> BackendResult<()>;

    /// Creates an event (with timing).
    fn event_create(&self, device: u32) -> BackendResult<u64>;
    /// Destroys an event.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn event_destroy(&self, device: u32, event: u64) -> BackendResult<()>;
    /// Records the event on a queue of the same device.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn event_record(&self, device: u32, event: u64, queue: u64) -> BackendResult<()>;
    /// Waits until the event has completed.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn event_synchronize(&self, device: u32, event: u64) -> BackendResult<()>;
    /// Whether the event has completed.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn event_query(&self, device: u32, event: u64) -> BackendResult<bool>;
    /// Milliseconds between two completed events of the same device.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn event_elapsed_ms(&self, device: u32, start: u64, end: u64) -> BackendResult<f32>;

    /// Loads a program image; the backend checks that the image is well-formed before the
    /// driver reads it (`InvalidBinary` otherwise) and copies what it keeps of it.
    fn program_load(&self, device: u32, image: &[u8]) -> BackendResult<u64>;
    /// Hands `sink` the calling thread's log of its last failed `program_load` (a JIT
    /// compiler's log), once, and clears it; does nothing when there is none. Not a driver call:
    /// a backend keeps the log per thread, apart from its objects, so this is sound in any state.
    /// Default: no log.
    fn take_load_log(&self, sink: &mut dyn FnMut(&str)) {
        let _ = sink;
    }
    /// Unloads a program; its kernels die with it.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn program_unload(&self, device: u32, program: u64) -> BackendResult<()>;
    /// Looks up a kernel by name (non-empty, no NUL); the same name must give the same value.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn kernel_get(&self, device: u32, program: u64, name: &str) -> BackendResult<u64>;
    /// Launches a kernel on a queue.
    ///
    /// # Safety
    /// See the trait docs; besides, every argument pointer points to a value of the kernel's
    /// parameter type, and the kernel's memory accesses stay within memory it may access.
    unsafe fn launch(
        &self,
        device: u32,
        queue: u64,
        kernel: u64,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> BackendResult<()>;
    /// Launches a kernel whose arguments are packed in one buffer laid out as its parameters
    /// are (`kernel_param_layout`), the form liboffload's `olLaunchKernel` passes. Counted and
    /// fault-injected as `Launch`. Default: splits the buffer by `kernel_param_layout` and calls
    /// `launch`; CUDA hands the buffer to the driver whole (`CU_LAUNCH_PARAM_BUFFER_POINTER`).
    ///
    /// # Safety
    /// As `launch`; besides, `args` ends where the kernel's last parameter does (the runtime
    /// checked it against `kernel_param_layout`), and each parameter's bytes in it are a value
    /// of the parameter's type.
    unsafe fn launch_packed(
        &self,
        device: u32,
        queue: u64,
        kernel: u64,
        dims: &LaunchDims,
        args: &[u8],
    ) -> BackendResult<()> {
        let mut layout = ParamLayout::new();
        // SAFETY: forwarded contract (a live kernel of this device).
        unsafe { self.kernel_param_layout(device, kernel, &mut layout) }?;
        let mut params = [core::mem::MaybeUninit::<*mut c_void>::uninit(); MAX_KERNEL_PARAMS];
        let mut sizes = [core::mem::MaybeUninit::<usize>::uninit(); MAX_KERNEL_PARAMS];
        for (i, slot) in layout.iter().enumerate() {
            let (offset, size) = (slot.offset as usize, slot.size as usize);
            if size == 0 || offset.checked_add(size).is_none_or(|end| end > args.len()) {
                return Err(BackendError::new(
                    ErrorCode::InvalidSize,
                    0,
                    "the argument buffer ends inside a parameter",
                ));
            }
            // In bounds (checked just above); the backend only reads through it.
            params[i].write(args[offset..].as_ptr().cast_mut().cast());
            sizes[i].write(size);
        }
        let n = layout.len();
        // SAFETY: the first `n` elements of both arrays were written just above.
        let (params, sizes) = unsafe {
            (
                core::slice::from_raw_parts(params.as_ptr().cast::<*mut c_void>(), n),
                core::slice::from_raw_parts(sizes.as_ptr().cast::<usize>(), n),
            )
        };
        // SAFETY: as many sizes as pointers, none null (each points into `args`).
        let args = unsafe { KernelArgs::new_unchecked(params, sizes) };
        // SAFETY: forwarded contract; each pointer points at its parameter's bytes.
        unsafe { self.launch(device, queue, kernel, dims, &args) }
    }
    /// Launches a kernel in thread-block clusters of `cluster` blocks (CUDA: `cuLaunchKernelEx`
    /// with a cluster-dimension attribute, devices of compute capability 9.0 and up). Backends
    /// without clusters keep this default: `Unsupported`.
    ///
    /// # Safety
    /// As `launch`; besides, every cluster dimension is at least 1 and divides the grid's.
    unsafe fn launch_cluster(
        &self,
        device: u32,
        queue: u64,
        kernel: u64,
        dims: &LaunchDims,
        cluster: [u32; 3],
        args: &KernelArgs<'_>,
    ) -> BackendResult<()> {
        let _ = (device, queue, kernel, dims, cluster, args);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend has no thread-block clusters"))
    }
    /// How many parameters a kernel takes (CUDA: `cuFuncGetParamInfo`), for callers that pass
    /// argument pointers without a count. Default: `Unsupported`.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn kernel_param_count(&self, device: u32, kernel: u64) -> BackendResult<usize> {
        let _ = (device, kernel);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend cannot count a kernel's parameters"))
    }
    /// Writes a kernel's parameter layout (offsets and sizes, in order) into `out`: CUDA from
    /// `cuFuncGetParamInfo`, the host backend from the sizes its kernels declare. Default:
    /// `Unsupported`.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn kernel_param_layout(&self, device: u32, kernel: u64, out: &mut ParamLayout) -> BackendResult<()> {
        let _ = (device, kernel, out);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend cannot describe a kernel's parameters"))
    }
    /// The address of the Rust function a host kernel runs (`HostKernel::run as usize`), for a
    /// caller that must know exactly which kernel a handle names (the typed API's safe host
    /// launches, which run only the typed kernels they were made for). Default: `None` (no such
    /// function: device code).
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn host_kernel_fn(&self, device: u32, kernel: u64) -> Option<usize> {
        let _ = (device, kernel);
        None
    }
    /// The block size (threads) that gives the kernel the highest occupancy with `dynamic_shared`
    /// bytes of dynamic shared memory per block (CUDA: `cuOccupancyMaxPotentialBlockSize`).
    /// Default: `Unsupported`.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn kernel_optimal_block_size(&self, device: u32, kernel: u64, dynamic_shared: usize) -> BackendResult<u32> {
        let _ = (device, kernel, dynamic_shared);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend cannot compute occupancy"))
    }
    /// The address and size of the global variable `name` (non-empty, no NUL) of a program
    /// (CUDA: `cuModuleGetGlobal`); it lives as long as the program. `NotFound` when there is
    /// none. Default: `Unsupported`.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn program_global(&self, device: u32, program: u64, name: &str) -> BackendResult<(u64, usize)> {
        let _ = (device, program, name);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend has no program global variables"))
    }
    /// Whether `image` (non-empty) is a program this device can load, without loading it.
    /// Default: `Unsupported`.
    fn program_check(&self, device: u32, image: &[u8]) -> BackendResult<bool> {
        let _ = (device, image);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend cannot check images without loading them"))
    }
    /// Writes `pattern` `count` times from `dst`, like `fill` (with a queue, asynchronously;
    /// without, ordered like `memcpy`). The default handles patterns `fill` can: 1, 2 or 4 bytes
    /// with `dst` aligned to that width, and patterns whose bytes are all equal; others are
    /// `Unsupported`.
    ///
    /// # Safety
    /// See the trait docs: `count * pattern.len()` bytes from `dst` (no alignment promised) lie in
    /// one live allocation of the device; `pattern` is non-empty and `count` is not 0.
    unsafe fn fill_pattern(
        &self,
        device: u32,
        dst: u64,
        pattern: &[u8],
        count: usize,
        queue: Option<u64>,
    ) -> BackendResult<()> {
        let aligned = dst % pattern.len() as u64 == 0;
        let (value, count) = match *pattern {
            [a] => (FillValue::U8(a), count),
            [a, b] if aligned => (FillValue::U16(u16::from_ne_bytes([a, b])), count),
            [a, b, c, d] if aligned => (FillValue::U32(u32::from_ne_bytes([a, b, c, d])), count),
            [a, ..] if pattern.iter().all(|&b| b == a) => (FillValue::U8(a), count * pattern.len()),
            _ => {
                return Err(BackendError::new(
                    ErrorCode::Unsupported,
                    0,
                    "this backend fills only 1-, 2- and 4-byte patterns at aligned addresses",
                ));
            }
        };
        // SAFETY: the same range, now as aligned elements of the width `fill` writes.
        unsafe { self.fill(device, dst, value, count, queue) }
    }
    /// Encodes a tiled tensor map for kernels of `device` to read (CUDA: `cuTensorMapEncodeTiled`,
    /// devices of compute capability 9.0 and up): the backend checks every field (the shape, the
    /// enumerations: `InvalidValue`, `InvalidEnumeration`), and the driver the rest (alignment,
    /// box sizes). It touches no memory. Default: `Unsupported`.
    fn tensor_map_encode_tiled(&self, device: u32, tensor: &TensorMapTiled<'_>) -> BackendResult<TensorMap> {
        let _ = (device, tensor);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend has no tensor maps"))
    }
    /// Enqueues `f(data)` on the queue: it runs on the host after all work submitted to the queue
    /// before it, and work submitted after it waits until it returns (CUDA: `cuLaunchHostFunc`).
    /// Default: `Unsupported`.
    ///
    /// # Safety
    /// See the trait docs; `f(data)` may be called from any thread, once, and must not call into
    /// the runtime or the driver.
    unsafe fn queue_host_function(&self, device: u32, queue: u64, f: HostFn, data: *mut c_void) -> BackendResult<()> {
        let _ = (device, queue, f, data);
        Err(BackendError::new(ErrorCode::Unsupported, 0, "this backend cannot run host functions on a queue"))
    }
    /// The backend's collective library (CUDA: NCCL), when it has one; without one (default:
    /// `None`) the runtime's reference engine runs its communicators' collectives.
    fn collectives(&self) -> Option<&dyn Collectives> {
        None
    }
}
