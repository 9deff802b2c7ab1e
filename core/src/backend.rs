//! The `Backend` trait: the one contract between the runtime and a driver (CUDA, HSA, host).
//!
//! Backends are thin: they translate calls and errors. The runtime owns all state, ordering and
//! validation, so a backend may assume that every object value it receives is one it returned
//! earlier, still live, for the same device, and that sizes and ranges were checked.
//!
//! Lifecycle as seen by a backend: `init` once (returns the device count), then any object call,
//! then, at teardown, for each device in reverse order: `queue_synchronize` on every queue,
//! `event_destroy`, `queue_destroy`, `program_unload`, `mem_free` (each newest first),
//! `device_release`; then `deinit`. After `deinit`, `init` may be called again.
//! Depends on `error`.

use core::ffi::c_void;

use crate::error::{BackendError, ErrorCode, Result, fail};

/// Result of a backend call.
pub type BackendResult<T> = core::result::Result<T, BackendError>;

/// Which driver a backend talks to.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// Runs kernels on the calling CPU thread (always present).
    Host = 0,
    /// NVIDIA CUDA driver API.
    Cuda = 1,
    /// AMD HSA runtime.
    Amdgpu = 2,
    /// The scripted test backend (feature `testing`).
    Scripted = 3,
}

impl BackendKind {
    /// The kind's lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Cuda => "cuda",
            Self::Amdgpu => "amdgpu",
            Self::Scripted => "scripted",
        }
    }
}

macro_rules! c_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $value:expr,)* }) => {
        $(#[$doc])*
        #[repr(u32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vdoc])* $variant = $value,)* }

        impl $name {
            /// Every value, in numeric order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];
        }

        impl TryFrom<u32> for $name {
            type Error = crate::error::Error;
            fn try_from(value: u32) -> Result<Self> {
                match value {
                    $($value => Ok(Self::$variant),)*
                    _ => fail(ErrorCode::InvalidEnumeration, concat!("unknown ", stringify!($name), " value")),
                }
            }
        }
    };
}

c_enum!(
    /// Where an allocation lives.
    MemKind {
        /// Device memory (`cuMemAlloc`).
        Device = 0,
        /// Page-locked host memory visible to the device (`cuMemAllocHost`).
        Host = 1,
        /// Managed (unified) memory migrating between host and device.
        Managed = 2,
    }
);

c_enum!(
    /// The direction of a copy.
    CopyKind {
        /// From host memory to a device allocation.
        HostToDevice = 0,
        /// From a device allocation to host memory.
        DeviceToHost = 1,
        /// Between two device allocations.
        DeviceToDevice = 2,
    }
);

c_enum!(
    /// A device property to query.
    DeviceInfo {
        /// The device's name (text).
        Name = 0,
        /// Compute capability or ISA version (major, minor).
        ComputeCapability = 1,
        /// Total memory in bytes.
        TotalMemory = 2,
        /// Number of multiprocessors / compute units.
        MultiprocessorCount = 3,
        /// Maximum threads per block.
        MaxThreadsPerBlock = 4,
        /// Shared memory per block available without opting in, in bytes.
        MaxSharedMemoryPerBlock = 5,
        /// Shared memory per block available after opting in, in bytes.
        MaxSharedMemoryPerBlockOptin = 6,
        /// Threads per warp / wavefront.
        WarpSize = 7,
    }
);

/// The value of a device property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InfoValue {
    /// A number.
    Int(u64),
    /// A version (major, minor).
    Version(u32, u32),
    /// A text, truncated to 64 bytes.
    Text(heapless::String<64>),
}

impl InfoValue {
    /// A text value, truncated at a character boundary to fit 64 bytes.
    pub fn text(s: &str) -> Self {
        let mut out = heapless::String::new();
        for c in s.chars() {
            if out.push(c).is_err() {
                break;
            }
        }
        Self::Text(out)
    }

    /// The number, if this is one.
    pub fn as_int(&self) -> Option<u64> {
        match self {
            Self::Int(v) => Some(*v),
            _ => None,
        }
    }
}

impl core::fmt::Display for InfoValue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Int(v) => write!(f, "{v}"),
            Self::Version(a, b) => write!(f, "{a}.{b}"),
            Self::Text(s) => f.write_str(s),
        }
    }
}

/// The value a fill writes, repeated `count` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FillValue {
    /// A byte.
    U8(u8),
    /// A 16-bit value.
    U16(u16),
    /// A 32-bit value.
    U32(u32),
}

impl FillValue {
    /// The width of one element in bytes.
    pub const fn width(self) -> usize {
        match self {
            Self::U8(_) => 1,
            Self::U16(_) => 2,
            Self::U32(_) => 4,
        }
    }
}

/// Grid and block dimensions of a launch, and its dynamic shared memory in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDims {
    /// Blocks per grid (x, y, z); each at least 1.
    pub grid: [u32; 3],
    /// Threads per block (x, y, z); each at least 1.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchDims {
    /// A one-dimensional launch of `grid` blocks of `block` threads.
    pub const fn linear(grid: u32, block: u32) -> Self {
        Self { grid: [grid, 1, 1], block: [block, 1, 1], shared_mem_bytes: 0 }
    }

    /// Threads per block.
    pub fn threads_per_block(&self) -> u64 {
        self.block.iter().map(|&d| u64::from(d)).product()
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.grid.contains(&0) || self.block.contains(&0) {
            return fail(ErrorCode::InvalidValue, "grid and block dimensions must all be at least 1");
        }
        Ok(())
    }
}

/// Kernel arguments: one pointer per parameter, each to the argument's value (the layout
/// `cuLaunchKernel`'s `kernelParams` takes), with optional sizes for backends that check them.
#[derive(Clone, Copy, Debug)]
pub struct KernelArgs<'a> {
    params: &'a [*mut c_void],
    sizes: Option<&'a [usize]>,
}

impl<'a> KernelArgs<'a> {
    /// No arguments.
    pub const EMPTY: KernelArgs<'static> = KernelArgs { params: &[], sizes: None };

    /// Arguments with sizes; `params` and `sizes` must have the same length and no null pointer.
    pub fn new(params: &'a [*mut c_void], sizes: &'a [usize]) -> Result<Self> {
        if params.len() != sizes.len() {
            return fail(ErrorCode::InvalidArgument, "argument pointer and size counts differ");
        }
        Self::unsized_params(params).map(|a| Self { sizes: Some(sizes), ..a })
    }

    /// Arguments without sizes (the MLIR `mgpuLaunchKernel` form).
    pub fn unsized_params(params: &'a [*mut c_void]) -> Result<Self> {
        if params.iter().any(|p| p.is_null()) {
            return fail(ErrorCode::NullPointer, "a kernel argument pointer is null");
        }
        Ok(Self { params, sizes: None })
    }

    /// The argument pointers.
    pub fn params(&self) -> &'a [*mut c_void] {
        self.params
    }

    /// The argument sizes, when given.
    pub fn sizes(&self) -> Option<&'a [usize]> {
        self.sizes
    }

    /// Reads argument `i` as a `T`, checking its size when sizes were given.
    ///
    /// # Safety
    /// Argument `i` must point to a readable value whose first `size_of::<T>()` bytes are a valid `T`.
    pub unsafe fn read<T: Copy>(&self, i: usize) -> Result<T> {
        let Some(&p) = self.params.get(i) else {
            return fail(ErrorCode::InvalidArgument, "kernel argument index out of range");
        };
        if let Some(sizes) = self.sizes {
            if sizes[i] != core::mem::size_of::<T>() {
                return fail(ErrorCode::InvalidSize, "kernel argument size does not match the kernel's parameter");
            }
        }
        debug_assert!(!p.is_null());
        // SAFETY: the caller guarantees `p` points to a valid `T`; it may be unaligned.
        Ok(unsafe { p.cast::<T>().read_unaligned() })
    }
}

bitflags::bitflags! {
    /// What a platform's devices can do beyond the operations every backend has.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Capabilities: u32 {
        /// Queues run asynchronously to the caller (copies and launches on a queue may still be
        /// running when the call returns).
        const ASYNC_QUEUES = 1 << 0;
        /// `event_elapsed_ms` measures time.
        const EVENT_TIMING = 1 << 1;
        /// `MemKind::Managed` memory migrates between host and device.
        const MANAGED_MEMORY = 1 << 2;
        /// Kernels may use dynamic shared memory.
        const SHARED_MEMORY = 1 << 3;
        /// Device memory is directly readable by host code (the host backend).
        const HOST_ACCESSIBLE_MEMORY = 1 << 4;
    }
}

/// Names of the `Backend` methods that talk to a driver, for fault injection and call counting.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // Each variant is the `Backend` method of the same name.
pub enum BackendOp {
    Init,
    Deinit,
    DeviceRelease,
    DeviceInfo,
    MemAlloc,
    MemFree,
    Memcpy,
    Fill,
    QueueCreate,
    QueueDestroy,
    QueueSynchronize,
    QueueQuery,
    QueueWaitEvent,
    EventCreate,
    EventDestroy,
    EventRecord,
    EventSynchronize,
    EventQuery,
    EventElapsed,
    ProgramLoad,
    ProgramUnload,
    KernelGet,
    Launch,
}

impl BackendOp {
    /// Every op.
    pub const ALL: [BackendOp; 23] = [
        Self::Init,
        Self::Deinit,
        Self::DeviceRelease,
        Self::DeviceInfo,
        Self::MemAlloc,
        Self::MemFree,
        Self::Memcpy,
        Self::Fill,
        Self::QueueCreate,
        Self::QueueDestroy,
        Self::QueueSynchronize,
        Self::QueueQuery,
        Self::QueueWaitEvent,
        Self::EventCreate,
        Self::EventDestroy,
        Self::EventRecord,
        Self::EventSynchronize,
        Self::EventQuery,
        Self::EventElapsed,
        Self::ProgramLoad,
        Self::ProgramUnload,
        Self::KernelGet,
        Self::Launch,
    ];
}

/// A driver behind the runtime. Object-safe; the runtime holds `&'static dyn Backend`s.
///
/// Device numbers are the backend's own ordinals `0..init()`. Object values (`u64`) are opaque to
/// the runtime. Every method except `kind`, `name`, `init` and `deinit` is called only between a
/// successful `init` and the following `deinit`, and never concurrently with `init`/`deinit`.
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
    /// devices is `ErrorCode::NotPresent` (the platform is recorded as absent, not an error).
    fn init(&self) -> BackendResult<u32>;
    /// Releases the driver after every object and device was released.
    fn deinit(&self) -> BackendResult<()>;
    /// Releases what `init` acquired for `device` (e.g. the primary context).
    fn device_release(&self, device: u32) -> BackendResult<()>;
    /// A device property.
    fn device_info(&self, device: u32, key: DeviceInfo) -> BackendResult<InfoValue>;

    /// Allocates `size > 0` bytes; returns the address.
    fn mem_alloc(&self, device: u32, kind: MemKind, size: usize) -> BackendResult<u64>;
    /// Frees an allocation made by `mem_alloc` (its base address, kind and size).
    fn mem_free(&self, device: u32, kind: MemKind, addr: u64, size: usize) -> BackendResult<()>;
    /// Copies `size` bytes; with a queue, asynchronously on it.
    ///
    /// # Safety
    /// The device side was validated by the runtime; host pointers (`dst` for device-to-host, `src`
    /// for host-to-device) must be valid for `size` bytes until the copy completes.
    unsafe fn memcpy(
        &self,
        device: u32,
        kind: CopyKind,
        dst: u64,
        src: u64,
        size: usize,
        queue: Option<u64>,
    ) -> BackendResult<()>;
    /// Writes `value` `count` times from `dst` (a validated device range); with a queue, async.
    fn fill(&self, device: u32, dst: u64, value: FillValue, count: usize, queue: Option<u64>) -> BackendResult<()>;

    /// Creates an in-order queue.
    fn queue_create(&self, device: u32) -> BackendResult<u64>;
    /// Destroys a queue.
    fn queue_destroy(&self, device: u32, queue: u64) -> BackendResult<()>;
    /// Waits until all work on the queue has finished.
    fn queue_synchronize(&self, device: u32, queue: u64) -> BackendResult<()>;
    /// Whether all work on the queue has finished.
    fn queue_query(&self, device: u32, queue: u64) -> BackendResult<bool>;
    /// Makes later work on `queue` wait for `event` (which may belong to another device).
    fn queue_wait_event(&self, device: u32, queue: u64, event: u64) -> BackendResult<()>;

    /// Creates an event (with timing).
    fn event_create(&self, device: u32) -> BackendResult<u64>;
    /// Destroys an event.
    fn event_destroy(&self, device: u32, event: u64) -> BackendResult<()>;
    /// Records the event on a queue of the same device.
    fn event_record(&self, device: u32, event: u64, queue: u64) -> BackendResult<()>;
    /// Waits until the event has completed.
    fn event_synchronize(&self, device: u32, event: u64) -> BackendResult<()>;
    /// Whether the event has completed.
    fn event_query(&self, device: u32, event: u64) -> BackendResult<bool>;
    /// Milliseconds between two completed events of the same device.
    fn event_elapsed_ms(&self, device: u32, start: u64, end: u64) -> BackendResult<f32>;

    /// Loads a program image; the backend copies what it keeps of `image`.
    fn program_load(&self, device: u32, image: &[u8]) -> BackendResult<u64>;
    /// Unloads a program; its kernels die with it.
    fn program_unload(&self, device: u32, program: u64) -> BackendResult<()>;
    /// Looks up a kernel by name; the same name must give the same value.
    fn kernel_get(&self, device: u32, program: u64, name: &str) -> BackendResult<u64>;
    /// Launches a kernel on a queue.
    ///
    /// # Safety
    /// Every argument pointer must point to a value of the kernel's parameter type, and the
    /// kernel's memory accesses must stay within memory it may access.
    unsafe fn launch(
        &self,
        device: u32,
        queue: u64,
        kernel: u64,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> BackendResult<()>;
}
