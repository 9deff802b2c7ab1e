//! Collectives: the values of a collective call (operations, element types, reductions) and the
//! `Collectives` trait a backend with a native collective library implements (CUDA over NCCL).
//! Backends without one (the host, AMDGPU) leave `Backend::collectives` at `None`; the runtime
//! then runs the reference engine (`runtime/collective/reference.rs`) over their copies.
//! Depends on `error` and the backend's result type; the runtime's communicator calls
//! (`runtime/collective/`) depend on it.

use crate::error::{ErrorCode, Result, fail};

use super::BackendResult;

macro_rules! collective_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $value:expr, $text:expr;)* }) => {
        $(#[$doc])*
        #[repr(u32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vdoc])* $variant = $value,)* }

        impl $name {
            /// Every value, in numeric order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The value's lower-case name.
            pub const fn name(self) -> &'static str {
                match self { $(Self::$variant => $text,)* }
            }
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

collective_enum!(
    /// What a collective call does on its rank (C: `ordo_collective_kind_t`).
    CollectiveKind {
        /// Every rank's `recv` gets the element-wise reduction of every rank's `send` (`count`
        /// elements each).
        AllReduce = 0, "all-reduce";
        /// Every rank's `recv` gets rank `peer`'s `send` (`count` elements; only the root's
        /// `send` is read).
        Broadcast = 1, "broadcast";
        /// Rank `peer`'s `recv` gets the reduction of every rank's `send` (only the root's
        /// `recv` is written).
        Reduce = 2, "reduce";
        /// Every rank's `recv` (`count × ranks` elements) gets every rank's `send` (`count`),
        /// in rank order.
        AllGather = 3, "all-gather";
        /// Rank r's `recv` (`count`) gets the reduction of block r of every rank's `send`
        /// (`count × ranks`).
        ReduceScatter = 4, "reduce-scatter";
        /// Sends `count` elements of `send` to rank `peer` (in a group with its receive).
        Send = 5, "send";
        /// Receives `count` elements from rank `peer` into `recv`.
        Recv = 6, "receive";
    }
);

collective_enum!(
    /// The element type of a collective's buffers (C: `ordo_data_type_t`); NCCL's `ncclDataType_t`
    /// numbering.
    DataType {
        /// `int8_t`.
        I8 = 0, "i8";
        /// `uint8_t`.
        U8 = 1, "u8";
        /// `int32_t`.
        I32 = 2, "i32";
        /// `uint32_t`.
        U32 = 3, "u32";
        /// `int64_t`.
        I64 = 4, "i64";
        /// `uint64_t`.
        U64 = 5, "u64";
        /// IEEE binary16.
        F16 = 6, "f16";
        /// `float`.
        F32 = 7, "f32";
        /// `double`.
        F64 = 8, "f64";
        /// bfloat16.
        Bf16 = 9, "bf16";
    }
);

impl DataType {
    /// The element's size in bytes.
    pub const fn size(self) -> usize {
        match self {
            Self::I8 | Self::U8 => 1,
            Self::F16 | Self::Bf16 => 2,
            Self::I32 | Self::U32 | Self::F32 => 4,
            Self::I64 | Self::U64 | Self::F64 => 8,
        }
    }
}

collective_enum!(
    /// How a reduction combines elements (C: `ordo_reduce_op_t`); NCCL's `ncclRedOp_t`
    /// numbering.
    ReduceOp {
        /// The sum.
        Sum = 0, "sum";
        /// The product.
        Prod = 1, "product";
        /// The maximum.
        Max = 2, "max";
        /// The minimum.
        Min = 3, "min";
        /// The sum divided by the number of ranks (integers: rounded toward zero).
        Avg = 4, "average";
    }
);

/// One rank's part of a collective, as the backend receives it: every value checked by the
/// runtime (see `Collectives::collectives`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollectiveCall {
    /// The backend's device ordinal of the communicator and the queue.
    pub device: u32,
    /// The communicator (a value `comm_create_all`/`comm_create_rank` returned for `device`).
    pub comm: u64,
    /// The queue the work runs on (a live queue of `device`).
    pub queue: u64,
    /// What the call does.
    pub kind: CollectiveKind,
    /// The element type.
    pub dtype: DataType,
    /// The reduction (reducing kinds only; `Sum` otherwise).
    pub op: ReduceOp,
    /// Elements per rank (see `CollectiveKind` for each buffer's length); never 0.
    pub count: usize,
    /// The root (broadcast, reduce) or the peer (send, receive); 0 otherwise.
    pub peer: u32,
    /// The address read, or 0 where the kind reads nothing on this rank.
    pub send: u64,
    /// The address written, or 0 where the kind writes nothing on this rank.
    pub recv: u64,
}

/// A unique id that names one communicator across processes (NCCL's `ncclUniqueId`: 128 bytes,
/// made by the rank that hosts the bootstrap, carried to the others by any means).
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct UniqueId(pub [u8; 128]);

impl core::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("UniqueId(..)")
    }
}

/// A collective library a backend loaded: its name and version (NCCL 2.28.3 is
/// `("NCCL", 22803)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollectiveLibrary {
    /// The library's name.
    pub name: &'static str,
    /// Its version number, as the library reports it.
    pub version: u32,
}

/// A backend's native collective library (CUDA: NCCL). Object-safe.
///
/// # What the runtime guarantees to the `unsafe` methods
/// As `Backend`'s: the backend is initialised and every device ordinal, queue and communicator
/// value is live and this backend's. Besides: a communicator value is passed only for the
/// device it was created on, never after `comm_destroy` or `comm_abort` returned; buffers of a
/// call lie in live allocations of the call's device and hold what the kind needs (`count`
/// elements, or `count × ranks` for all-gather's `recv` and reduce-scatter's `send`);
/// `peer` is below the communicator's rank count.
pub trait Collectives: Sync {
    /// The library, loaded on first use: `Err` with `NotPresent` (and the reason as its
    /// message) when it cannot be found or is too old. Safe: any thread, any time.
    fn library(&self) -> BackendResult<CollectiveLibrary>;

    /// Creates one communicator per device of `devices` (distinct ordinals of this backend),
    /// rank i on `devices[i]`, all in one group so that no device waits for another; writes
    /// them to `out` (`out.len() == devices.len()`). Nothing is left created on error.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn comm_create_all(&self, devices: &[u32], out: &mut [u64]) -> BackendResult<()>;

    /// Makes a unique id for `comm_create_rank` (its creator need not be a rank).
    fn unique_id(&self) -> BackendResult<UniqueId>;

    /// Creates rank `rank` of a communicator of `size` ranks, one per process, named by `id`,
    /// on `device`; returns when every rank has joined, or fails with `Timeout` after
    /// `timeout_ms` milliseconds (nothing left created).
    ///
    /// # Safety
    /// See the trait docs; `rank < size`.
    unsafe fn comm_create_rank(
        &self,
        device: u32,
        id: &UniqueId,
        rank: u32,
        size: u32,
        timeout_ms: u32,
    ) -> BackendResult<u64>;

    /// Enqueues every call of `calls`, in one group (the calls of one process's ranks must be
    /// made together), each on its queue.
    ///
    /// # Safety
    /// See the trait docs; every call's values were checked by the runtime.
    unsafe fn collectives(&self, calls: &[CollectiveCall]) -> BackendResult<()>;

    /// The library's own communicator (NCCL: its `ncclComm_t`), for calls ordo does not make.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn comm_native(&self, device: u32, comm: u64) -> u64;

    /// The communicator's asynchronous error, if its library has recorded one (a peer gone, a
    /// network failure): `Err` with the error, else `Ok`.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn comm_async_error(&self, device: u32, comm: u64) -> BackendResult<()>;

    /// Starts the teardown's finalize of every communicator of `comms` (device, value) and waits
    /// for them together, within the backend's bound (CUDA: `ORDO_NCCL_TIMEOUT_MS`); a
    /// communicator whose finalize failed or did not complete is aborted by its `comm_destroy`.
    /// No outcome: `comm_destroy` reports each one's.
    ///
    /// # Safety
    /// See the trait docs; the queues of every device are idle or failed.
    unsafe fn comm_finalize(&self, comms: &[(u32, u64)]);

    /// Destroys a communicator (finalizing it first when `comm_finalize` did not, with the same
    /// bounded wait); one whose finalize failed or ran out of time is aborted instead, and the
    /// failure returned. The value is never passed again either way.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn comm_destroy(&self, device: u32, comm: u64) -> BackendResult<()>;

    /// Aborts a communicator: its pending work is abandoned, its resources released, its peers'
    /// collectives fail. The value is never passed again.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn comm_abort(&self, device: u32, comm: u64) -> BackendResult<()>;
}
