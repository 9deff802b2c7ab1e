//! The values that cross the backend trait, but a launch's (`launch.rs`): backend kinds, the
//! C-compatible enums (memory kinds, copy kinds, device info keys), fill values, info values,
//! tensor maps and capabilities. Depends on `error`; the trait (`backend/mod.rs`) and everything
//! above it depend on this file.

use core::ffi::c_void;

use crate::error::{ErrorCode, Result, fail};

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
        /// Existing host memory the program registered (`Runtime::host_register`): page-locked
        /// and mapped for the device at the same address. Not an allocation kind: `mem_alloc`
        /// refuses it (`InvalidEnumeration`), and `mem_free` of such a range unregisters it.
        Registered = 3,
        /// A global variable of a loaded program (`Runtime::program_global`): owned by the
        /// program and gone with it. Not an allocation kind: `mem_alloc` refuses it
        /// (`InvalidEnumeration`) and `mem_free` refuses its address (`InvalidArgument`); copies,
        /// fills and `mem_info` accept it.
        Global = 4,
        /// Device memory allocated in a queue's order (`Runtime::mem_alloc_on`: CUDA
        /// `cuMemAllocAsync` from the device's pool) and freed in a queue's order
        /// (`Runtime::mem_free_on`) or like any allocation. Not a kind `mem_alloc` takes
        /// (`InvalidEnumeration`); `mem_info` reports it.
        Ordered = 5,
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
        /// Largest block dimension x (threads).
        MaxBlockDimX = 8,
        /// Largest block dimension y (threads).
        MaxBlockDimY = 9,
        /// Largest block dimension z (threads).
        MaxBlockDimZ = 10,
        /// Largest grid dimension x (blocks).
        MaxGridDimX = 11,
        /// Largest grid dimension y (blocks).
        MaxGridDimY = 12,
        /// Largest grid dimension z (blocks).
        MaxGridDimZ = 13,
        /// Most threads in one launch (grid times block); `u64::MAX` where only the grid and
        /// block limits apply.
        MaxThreadsPerLaunch = 14,
        /// The device's vendor (text).
        Vendor = 15,
        /// The driver's version (text; CUDA: `cuDriverGetVersion`, as `13.0`).
        DriverVersion = 16,
        /// A unique identifier of the device (text; CUDA: the UUID in hexadecimal).
        Uuid = 17,
        /// Maximum clock frequency in MHz (`Unsupported` where the driver does not tell).
        ClockRateMhz = 18,
        /// Memory clock frequency in MHz (`Unsupported` where the driver does not tell).
        MemoryClockRateMhz = 19,
        /// The PCI-SIG vendor ID of the device's maker (0x10de NVIDIA, 0x1002 AMD; a CPU's:
        /// 0x8086 Intel, 0x1022 AMD, ...; `Unsupported` where unknown).
        VendorId = 20,
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

/// The longest prefix of `s` that fits in `N` bytes, cut at a character boundary.
pub fn text_prefix<const N: usize>(s: &str) -> heapless::String<N> {
    let mut out = heapless::String::new();
    for c in s.chars() {
        if out.push(c).is_err() {
            break;
        }
    }
    out
}

impl InfoValue {
    /// A text value, truncated at a character boundary to fit 64 bytes.
    pub fn text(s: &str) -> Self {
        Self::Text(text_prefix(s))
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

/// A function a queue runs on the host, in order with its other work (`Runtime::queue_host_function`).
pub type HostFn = unsafe extern "C" fn(*mut c_void);

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

/// A tiled tensor map to encode (`Backend::tensor_map_encode_tiled`; CUDA:
/// `cuTensorMapEncodeTiled`, the Hopper tensor memory accelerator's descriptor). The enumeration
/// values are CUDA's.
#[derive(Clone, Copy, Debug)]
pub struct TensorMapTiled<'a> {
    /// `CUtensorMapDataType` (0 = `UINT8` … 12 = `TFLOAT32_FTZ`).
    pub data_type: u32,
    /// The tensor's address in device memory (16-byte aligned).
    pub global_address: u64,
    /// Elements per dimension, innermost first (1 to 5 dimensions).
    pub global_dim: &'a [u64],
    /// Bytes between consecutive elements of each dimension but the innermost (one fewer).
    pub global_strides: &'a [u64],
    /// The box copied per access, in elements per dimension.
    pub box_dim: &'a [u32],
    /// Traversal stride per dimension.
    pub element_strides: &'a [u32],
    /// `CUtensorMapInterleave` (0 none, 1 16 B, 2 32 B).
    pub interleave: u32,
    /// `CUtensorMapSwizzle` (0 none, 1 32 B, 2 64 B, 3 128 B).
    pub swizzle: u32,
    /// `CUtensorMapL2promotion` (0 none, 1 64 B, 2 128 B, 3 256 B).
    pub l2_promotion: u32,
    /// `CUtensorMapFloatOOBfill` (0 none, 1 NaN).
    pub oob_fill: u32,
}

impl TensorMapTiled<'_> {
    /// Bytes per element of a `CUtensorMapDataType`, or `None` for a value ordo does not know.
    pub const fn element_bytes(data_type: u32) -> Option<u64> {
        Some(match data_type {
            0 => 1,
            1 | 6 | 9 => 2,
            2 | 3 | 7 | 10..=12 => 4,
            4 | 5 | 8 => 8,
            _ => return None,
        })
    }

    /// Whether the dimension lists fit the rank (1 to 5 dimensions; one stride fewer).
    pub fn shape_is_valid(&self) -> bool {
        let rank = self.global_dim.len();
        (1..=5).contains(&rank)
            && self.global_strides.len() == rank - 1
            && self.box_dim.len() == rank
            && self.element_strides.len() == rank
    }
}

/// An encoded tensor map: the driver's 128-byte `CUtensorMap`, to copy where a kernel reads it.
pub type TensorMap = [u64; 16];

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

/// How one device reaches another's memory (`Runtime::peer_access`): what the driver tells.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PeerAccess {
    /// The device can read and write the peer's memory directly (CUDA:
    /// `cuDeviceCanAccessPeer`); copies between them then go over the link without host memory.
    pub direct: bool,
    /// The driver's relative performance rank of the link (CUDA:
    /// `CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK`; 0 where it tells none, lower is faster).
    pub rank: u32,
    /// Atomic operations on the peer's memory are native over the link.
    pub native_atomics: bool,
    /// The two devices are one (a device reaches its own memory).
    pub same_device: bool,
}

impl PeerAccess {
    /// No direct access, nothing known of a link.
    pub const NONE: Self = Self { direct: false, rank: 0, native_atomics: false, same_device: false };
}
