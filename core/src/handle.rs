//! Generational, kind-tagged handles.
//!
//! A handle packs `kind (4 bits) | runtime (12 bits) | generation (32 bits) | slot index (16 bits)`
//! into a `u64`. Kind tags start at 1, so no valid handle is 0 and a zero handle is always
//! "null". The runtime field is the identity of the runtime that issued the handle (each runtime
//! takes one at its first init), so another runtime rejects it. The generation of a slot advances
//! whenever its object is released (including at teardown), so a handle outlives its object only
//! as a rejected, stale value. Depends on `error`.

use core::fmt;

use crate::error::{ErrorCode, Result, fail};

/// The kind of object a handle names.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// A backend (CUDA, AMDGPU, host, ...).
    Platform = 1,
    /// A device of a platform.
    Device = 2,
    /// An in-order queue (stream).
    Queue = 3,
    /// An event recorded on a queue.
    Event = 4,
    /// A loaded program (module, executable).
    Program = 5,
    /// A kernel of a loaded program.
    Kernel = 6,
    /// A memory allocation (named by its address in the API).
    Allocation = 7,
    /// A graph: work captured from a queue, launched as one submission.
    Graph = 8,
    /// A communicator: one rank of a group of devices that run collectives together.
    Communicator = 9,
}

impl ObjectKind {
    /// Every kind, in tag order.
    pub const ALL: [ObjectKind; 9] = [
        Self::Platform,
        Self::Device,
        Self::Queue,
        Self::Event,
        Self::Program,
        Self::Kernel,
        Self::Allocation,
        Self::Graph,
        Self::Communicator,
    ];

    /// The kind's lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Platform => "platform",
            Self::Device => "device",
            Self::Queue => "queue",
            Self::Event => "event",
            Self::Program => "program",
            Self::Kernel => "kernel",
            Self::Allocation => "allocation",
            Self::Graph => "graph",
            Self::Communicator => "communicator",
        }
    }

    pub(crate) const fn from_tag(tag: u8) -> Option<Self> {
        match tag {
            1 => Some(Self::Platform),
            2 => Some(Self::Device),
            3 => Some(Self::Queue),
            4 => Some(Self::Event),
            5 => Some(Self::Program),
            6 => Some(Self::Kernel),
            7 => Some(Self::Allocation),
            8 => Some(Self::Graph),
            9 => Some(Self::Communicator),
            _ => None,
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

const INDEX_BITS: u32 = 16;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
const GENERATION_SHIFT: u32 = INDEX_BITS;
const GENERATION_BITS: u32 = 32;
const RUNTIME_SHIFT: u32 = GENERATION_SHIFT + GENERATION_BITS;
const KIND_SHIFT: u32 = 60;

/// The last generation of a slot: a slot that has named this many objects plus one is retired
/// (each slot names at most 2^32 objects over the life of its runtime).
pub const MAX_GENERATION: u32 = u32::MAX;

/// The most table slots a handle can name (capacities are below this).
pub(crate) const MAX_SLOTS: usize = 1 << INDEX_BITS;

/// A runtime's identity as handles carry it: 1 to 4,095 (0 is "not yet assigned").
pub type RuntimeId = u16;

/// The largest runtime identity (12 bits).
pub const MAX_RUNTIME_ID: RuntimeId = (1 << 12) - 1;

/// An untyped handle: a kind tag, the issuing runtime's identity, a generation and a slot index
/// packed into a `u64`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RawHandle(pub u64);

impl RawHandle {
    /// The null handle.
    pub const NULL: Self = Self(0);

    #[inline]
    pub(crate) const fn pack(kind: ObjectKind, runtime: RuntimeId, generation: u32, index: u32) -> Self {
        Self(
            ((kind as u64) << KIND_SHIFT)
                | (((runtime & MAX_RUNTIME_ID) as u64) << RUNTIME_SHIFT)
                | ((generation as u64) << GENERATION_SHIFT)
                | (index as u64 & INDEX_MASK),
        )
    }

    /// The identity of the runtime that issued the handle.
    #[inline]
    pub const fn runtime(self) -> RuntimeId {
        (self.0 >> RUNTIME_SHIFT) as RuntimeId & MAX_RUNTIME_ID
    }

    /// The kind encoded in the handle, if the tag is a valid one.
    pub fn kind(self) -> Option<ObjectKind> {
        ObjectKind::from_tag((self.0 >> KIND_SHIFT) as u8)
    }

    /// The handle's top 16 bits, its kind over its runtime's identity: what a live table slot
    /// keeps as its tag, so that one compare checks both (0 for a handle with neither).
    #[inline(always)]
    pub(crate) const fn tag(self) -> u16 {
        (self.0 >> RUNTIME_SHIFT) as u16
    }

    /// Whether the handle's kind tag is `kind`'s (one shift and compare; no liveness check).
    #[inline(always)]
    pub const fn is_kind(self, kind: ObjectKind) -> bool {
        self.0 >> KIND_SHIFT == kind as u64
    }

    #[inline]
    pub(crate) const fn generation(self) -> u32 {
        (self.0 >> GENERATION_SHIFT) as u32
    }

    #[inline]
    pub(crate) const fn index(self) -> usize {
        (self.0 & INDEX_MASK) as usize
    }

    /// Checks that the handle is non-null and of kind `want`; returns `NullHandle` or
    /// `InvalidHandle` otherwise. Does not check that the object is alive.
    #[inline]
    pub(crate) fn expect_kind(self, want: ObjectKind) -> Result<()> {
        if self.is_kind(want) {
            return Ok(());
        }
        self.wrong_kind()
    }

    #[cold]
    fn wrong_kind(self) -> Result<()> {
        if self.0 == 0 {
            return fail(ErrorCode::NullHandle, "handle is null");
        }
        match self.kind() {
            Some(_) => fail(ErrorCode::InvalidHandle, "handle names an object of another kind"),
            None => fail(ErrorCode::InvalidHandle, "handle is forged (unknown kind tag)"),
        }
    }
}

impl fmt::Debug for RawHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            _ if self.0 == 0 => f.write_str("null"),
            Some(k) => write!(f, "{}#{}g{}r{}", k.name(), self.index(), self.generation(), self.runtime()),
            None => write!(f, "forged({:#x})", self.0),
        }
    }
}

impl fmt::Display for RawHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

macro_rules! typed_handle {
    ($(#[$doc:meta])* $name:ident, $kind:expr) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub RawHandle);

        impl $name {
            /// The kind of object this handle type names.
            pub const KIND: ObjectKind = $kind;
            /// The null handle of this type.
            pub const NULL: Self = Self(RawHandle::NULL);

            /// Wraps a raw `u64` (e.g. from C) without checking it; the runtime checks it on use.
            pub const fn from_raw(raw: u64) -> Self {
                Self(RawHandle(raw))
            }

            /// The raw `u64` value (e.g. for C).
            pub const fn to_raw(self) -> u64 {
                self.0 .0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }
    };
}

typed_handle!(
    /// Names a platform (one registered backend).
    Platform,
    ObjectKind::Platform
);
typed_handle!(
    /// Names a device of a platform.
    Device,
    ObjectKind::Device
);
typed_handle!(
    /// Names an in-order queue.
    Queue,
    ObjectKind::Queue
);
typed_handle!(
    /// Names an event.
    Event,
    ObjectKind::Event
);
typed_handle!(
    /// Names a loaded program.
    Program,
    ObjectKind::Program
);
typed_handle!(
    /// Names a kernel of a loaded program.
    Kernel,
    ObjectKind::Kernel
);

typed_handle!(
    /// Names a memory allocation by its identity, not its address (`Runtime::mem_allocate`): once
    /// the allocation is freed the handle is stale, even when a newer allocation has the same
    /// address, so a release by handle never frees another allocation.
    Allocation,
    ObjectKind::Allocation
);

typed_handle!(
    /// Names a graph: the work captured from a queue (`Runtime::queue_end_capture`), launched on
    /// a queue of its device as one submission.
    Graph,
    ObjectKind::Graph
);

typed_handle!(
    /// Names a communicator: one rank of a group of devices that run collectives together
    /// (`Runtime::comm_create_all`, `Runtime::comm_create_rank`).
    Communicator,
    ObjectKind::Communicator
);

typed_handle!(
    /// Names a global variable of a loaded program (`Runtime::program_global`); it goes stale
    /// when the program is unloaded. Its memory is also named by its address, like an
    /// allocation's (kind `MemKind::Global`).
    Global,
    ObjectKind::Allocation
);

/// A device memory address, as returned by `mem_alloc`. Addresses inside an allocation (base plus
/// an offset) are accepted wherever a `DevicePtr` is.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct DevicePtr(pub u64);

impl DevicePtr {
    /// The null address.
    pub const NULL: Self = Self(0);

    /// The address `bytes` past this one (wrapping is rejected later by the allocation table).
    pub const fn offset(self, bytes: u64) -> Self {
        Self(self.0.wrapping_add(bytes))
    }

    /// The address as a raw pointer, e.g. for a host kernel argument.
    pub fn as_ptr<T>(self) -> *mut T {
        core::ptr::with_exposed_provenance_mut(self.0 as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_round_trips_and_is_never_zero() {
        for kind in ObjectKind::ALL {
            let h = RawHandle::pack(kind, 0, 0, 0);
            assert_ne!(h.0, 0);
            assert_eq!(h.kind(), Some(kind));
            let h = RawHandle::pack(kind, MAX_RUNTIME_ID, MAX_GENERATION, (1 << 16) - 1);
            assert_eq!(
                (h.kind(), h.runtime(), h.generation(), h.index()),
                (Some(kind), MAX_RUNTIME_ID, MAX_GENERATION, (1 << 16) - 1)
            );
        }
    }

    #[test]
    fn expect_kind_distinguishes_null_wrong_and_forged() {
        let q = RawHandle::pack(ObjectKind::Queue, 1, 3, 1);
        assert!(q.expect_kind(ObjectKind::Queue).is_ok());
        let code = |r: Result<()>| r.unwrap_err().code;
        assert_eq!(code(RawHandle::NULL.expect_kind(ObjectKind::Queue)), ErrorCode::NullHandle);
        assert_eq!(code(q.expect_kind(ObjectKind::Event)), ErrorCode::InvalidHandle);
        assert_eq!(code(RawHandle(0xf << 60).expect_kind(ObjectKind::Queue)), ErrorCode::InvalidHandle);
    }
}
