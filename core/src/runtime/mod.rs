//! The runtime: the lifecycle gate, the object tables, init and the final teardown.
//!
//! A `Runtime` is built by a `const fn` over a fixed list of `&'static dyn Backend`, so it can
//! live in a `static` and never needs a constructor or destructor. The tables sit in an
//! `UnsafeCell` whose access is ruled by the gate: shared calls read them together, exclusive calls
//! (and init/teardown, which hold the gate in `Initializing`/`ShuttingDown`) change them alone.
//! Init and the final teardown are in `init.rs` (the teardown's walk in `teardown.rs`), operations
//! on objects in `info.rs`, `memory.rs`, `queue.rs` and `program.rs`. Depends on every other
//! module of the crate but `host`.

mod cache;
mod comm;
mod info;
mod init;
mod launch;
mod memory;
mod ordered;
#[cfg(all(test, not(loom)))]
mod ordered_tests;
mod peer;
mod program;
mod queue;
mod reference;
mod teardown;
mod timed;

mod fill;
mod fork;
mod graph;
pub(crate) use graph::{CAPTURE_USES, CaptureUse, GraphEntry};
#[cfg(feature = "std")]
mod owned;

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use owned::OwnedRuntime;

use core::cell::UnsafeCell;

use crate::alloc_table::{AllocTable, OrderedAllocs};
use crate::backend::{Backend, LaunchLimits};
use crate::capacity::{MAX_ALLOCATIONS, MAX_ORDERED_ALLOCATIONS};
use crate::capacity::{
    MAX_COMMUNICATORS, MAX_DEVICES, MAX_EVENTS, MAX_GRAPHS, MAX_KERNELS, MAX_PLATFORMS, MAX_PROGRAMS, MAX_QUEUES,
};
use crate::error::{BackendError, ErrorCode, Result, fail};
use crate::handle::{ObjectKind, RuntimeId};
use crate::lifecycle::{Gate, InitStep, ShutdownStep, State};
use crate::reentry;
use crate::report::{TeardownEvent, TeardownReport, TeardownSummary};
use crate::table::{Align32, Align64, Table};

pub use cache::{CacheStats, DEFAULT_CACHE_BYTES, MAX_CACHED_BLOCKS, MAX_CACHED_PER_QUEUE};
pub use comm::{Collective, MAX_GROUP_CALLS};
pub use info::{LiveObjects, PlatformInfo};
pub use peer::{PIN_MIN_BYTES, STAGE_CHUNK_BYTES};

pub(crate) const NO_SLOT: u32 = u32::MAX;

// Every slot of every table can be named by a handle's 16-bit index (core/build.rs checks the
// capacities too).
const _: () = assert!(
    MAX_ALLOCATIONS < crate::handle::MAX_SLOTS
        && MAX_KERNELS < crate::handle::MAX_SLOTS
        && MAX_PROGRAMS < crate::handle::MAX_SLOTS
        && MAX_EVENTS < crate::handle::MAX_SLOTS
        && MAX_QUEUES < crate::handle::MAX_SLOTS
        && MAX_DEVICES < crate::handle::MAX_SLOTS
        && MAX_GRAPHS < crate::handle::MAX_SLOTS
        && MAX_COMMUNICATORS < crate::handle::MAX_SLOTS
        // The queue-ordered allocations' handles name their slots after the main table's.
        && MAX_ALLOCATIONS + MAX_ORDERED_ALLOCATIONS < crate::handle::MAX_SLOTS,
    "ORDO_MAX_ALLOCATIONS + ORDO_MAX_ORDERED_ALLOCATIONS must stay below 65,536"
);

/// The table of queue-ordered allocations made beside other calls (`ordered.rs`).
pub(crate) type Ordered = OrderedAllocs<MAX_ORDERED_ALLOCATIONS, { MAX_ALLOCATIONS as u32 }>;
/// What `Ordered` keeps behind its lock.
pub(crate) type OrderedTable = AllocTable<MAX_ORDERED_ALLOCATIONS, { MAX_ALLOCATIONS as u32 }, true>;

pub(crate) struct PlatformEntry {
    pub backend: u8,
    /// Why the platform cannot be used (`NotPresent`: absent; any other code: unavailable), or
    /// `None` when it is present.
    pub absent: Option<BackendError>,
    /// Device table slots, in ordinal order.
    pub devices: heapless::Vec<u32, MAX_DEVICES>,
}

/// A device. What every launch reads comes first (`repr(C)`, after the slot's 8-byte
/// generation and tag): the backend's launch functions, the launch limits (flattened, so that
/// the ordinal fills their padding) and the ordinal, 64 bytes with the header in a
/// 64-byte-aligned slot; the backend itself (every other call, a launch the functions decline)
/// in the next line.
#[repr(C)]
pub(crate) struct DeviceEntry {
    /// The backend's launches as plain functions (`Backend::fast_launch`), when it has them.
    pub fast: Option<crate::backend::FastLaunch>,
    /// `LaunchLimits::threads_per_launch`.
    threads_per_launch: u64,
    /// `LaunchLimits::grid`.
    grid: [u32; 3],
    /// `LaunchLimits::block`.
    block: [u32; 3],
    /// `LaunchLimits::threads_per_block`.
    threads_per_block: u32,
    pub ordinal: u32,
    /// The backend itself, so that resolving a device needs no lookup in the backend list.
    pub driver: &'static dyn Backend,
    pub platform: u32,
    pub backend: u8,
    /// The device's default queue (`Runtime::default_queue`), once made; it may have been
    /// destroyed since (then the next call makes another).
    pub default_queue: Option<crate::handle::Queue>,
    /// How many of the device's queues are capturing (`Runtime::queue_begin_capture`): calls
    /// without a queue on the device are refused meanwhile (they would join the capture).
    pub capturing: u32,
    /// `Backend::ordered_concurrent`: its queue-ordered memory is made and freed under shared
    /// access, in `Tables::ordered`.
    pub ordered_shared: bool,
}

impl DeviceEntry {
    pub(crate) fn new(driver: &'static dyn Backend, backend: u8, platform: u32, ordinal: u32) -> Self {
        let limits = driver.launch_limits(ordinal);
        Self {
            driver,
            fast: driver.fast_launch(ordinal),
            threads_per_launch: limits.threads_per_launch,
            grid: limits.grid,
            block: limits.block,
            threads_per_block: limits.threads_per_block,
            ordinal,
            platform,
            backend,
            default_queue: None,
            capturing: 0,
            ordered_shared: driver.ordered_concurrent(ordinal),
        }
    }

    /// Whether `dims` fit this device's launch limits (`LaunchDims::fits` on the fields in place).
    #[inline(always)]
    pub(crate) fn fits(&self, dims: &crate::backend::LaunchDims) -> bool {
        dims.fits_parts(&self.grid, &self.block, self.threads_per_block, self.threads_per_launch)
    }

    /// What launches on this device may ask for (checked before any backend call).
    #[inline(always)]
    pub(crate) fn limits(&self) -> LaunchLimits {
        LaunchLimits {
            grid: self.grid,
            block: self.block,
            threads_per_block: self.threads_per_block,
            threads_per_launch: self.threads_per_launch,
        }
    }
}

/// A queue (or an event): a launch reads both fields, right after the slot's generation and tag.
#[repr(C)]
pub(crate) struct QueueEntry {
    pub raw: u64,
    pub device: u32,
    /// A queue: 1 while its work is being captured into a graph (`queue_begin_capture`), else
    /// 0; only exclusive calls change it. An event: 1 + the slot of the capturing queue its
    /// latest record was captured by, while that capture lasts, else 0 (`event_record` stores
    /// it under shared access; a record and the calls that read it are ordered by the caller,
    /// so relaxed access suffices).
    pub capture: core::sync::atomic::AtomicU32,
}

impl QueueEntry {
    /// A queue or event entry of a device, not capturing (not captured).
    pub(crate) fn new(device: u32, raw: u64) -> Self {
        Self { raw, device, capture: core::sync::atomic::AtomicU32::new(0) }
    }

    /// A queue: whether it is capturing. An event: whether its latest record was captured by a
    /// capture that has not ended.
    #[inline]
    pub(crate) fn capturing(&self) -> bool {
        self.capture.load(core::sync::atomic::Ordering::Relaxed) != 0
    }
}

pub(crate) type EventEntry = QueueEntry;

pub(crate) struct ProgramEntry {
    pub device: u32,
    pub raw: u64,
    /// Newest kernel of this program (kernels form a list through `KernelEntry::next`).
    pub first_kernel: u32,
    /// Global-variable ranges of this program in the allocation table (an unload walks that
    /// table only when there are some).
    pub globals: u32,
    /// References taken by `program_retain` and not yet given back: `program_unload` drops one
    /// of them while there are any, and unloads only when there are none.
    pub retained: core::sync::atomic::AtomicU32,
}

/// A kernel. What a launch reads comes first (`repr(C)`): the backend's kernel, its device
/// and the packed arguments' end, 24 bytes with the slot's generation and tag.
#[repr(C)]
pub(crate) struct KernelEntry {
    pub raw: u64,
    /// Device slot (the program's), kept here so a launch needs no program lookup.
    pub device: u32,
    /// What launches check about the kernel's parameters, read from the backend's layout at its
    /// first launch: bits 0-15 where its last parameter ends (bytes of a packed argument
    /// buffer; `ARGS_END_UNAVAILABLE` when the backend gives no layout or it ends past
    /// 65,534), bits 16-31 how many parameters it has (0 when not known: nothing to compare);
    /// `ARGS_END_UNKNOWN` until then. A cache of fixed values, so relaxed access suffices (racing
    /// first launches store the same word).
    pub args_end: core::sync::atomic::AtomicU32,
    pub program: u32,
    pub next: u32,
}

/// `KernelEntry::args_end` before the kernel's first launch.
pub(crate) const ARGS_END_UNKNOWN: u32 = u32::MAX;
/// The end field of `KernelEntry::args_end` (its low 16 bits).
pub(crate) const ARGS_END_MASK: u32 = 0xFFFF;
/// The end field when the end is not available (no layout, or past 65,534 bytes): packed
/// launches take the checked path.
pub(crate) const ARGS_END_UNAVAILABLE: u32 = 0xFFFF;
/// Where the parameter count sits in `KernelEntry::args_end`.
pub(crate) const PARAM_COUNT_SHIFT: u32 = 16;

pub(crate) struct Tables {
    pub platforms: Table<PlatformEntry, MAX_PLATFORMS, { ObjectKind::Platform as u8 }>,
    pub devices: Table<DeviceEntry, MAX_DEVICES, { ObjectKind::Device as u8 }, Align64>,
    pub queues: Table<QueueEntry, MAX_QUEUES, { ObjectKind::Queue as u8 }, Align32>,
    pub events: Table<EventEntry, MAX_EVENTS, { ObjectKind::Event as u8 }>,
    pub programs: Table<ProgramEntry, MAX_PROGRAMS, { ObjectKind::Program as u8 }>,
    pub kernels: Table<KernelEntry, MAX_KERNELS, { ObjectKind::Kernel as u8 }, Align32>,
    pub allocations: AllocTable<MAX_ALLOCATIONS>,
    /// Queue-ordered allocations of devices whose backend makes and frees them beside other
    /// calls (`DeviceEntry::ordered_shared`): changed under its own lock in shared calls.
    pub ordered: Ordered,
    pub graphs: Table<GraphEntry, MAX_GRAPHS, { ObjectKind::Graph as u8 }>,
    pub comms: Table<comm::CommEntry, MAX_COMMUNICATORS, { ObjectKind::Communicator as u8 }>,
    /// The last clique number `comm_create_all` gave (communicators created together share one).
    pub next_clique: u32,
    /// Host-device allocations the runtime page-locked for a GPU's copies between platforms
    /// (`peer.rs`); changed under its lock in shared calls, emptied by exclusive ones.
    pub pinned: crate::sync::SpinLock<heapless::Vec<peer::Pinned, { peer::MAX_PINNED }>>,
    /// Allocations the launches of captures in progress use (`capture_uses`), moved into their
    /// graph when the capture ends; changed under its lock in shared calls. Full: the capture's
    /// graph checks none (its queue's capture mark says so).
    pub capture_uses: crate::sync::SpinLock<heapless::Vec<CaptureUse, CAPTURE_USES>>,
    /// Programs unloaded while a queue of their device captured: gone from the program table
    /// (handles and kernels stale), unloaded by the backend when the device's last capture ends
    /// (or by the teardown): (device slot, backend value). Exclusive calls only.
    pub deferred_unloads: heapless::Vec<(u32, u64), DEFERRED_UNLOADS>,
    /// Queue-ordered blocks freed on a queue and kept for its next allocations (`cache.rs`);
    /// behind its own lock, changed in shared calls.
    pub cache: cache::BlockCache,
}

impl Tables {
    /// Takes one program of the device in slot `device` whose unload waits (its backend value).
    pub(crate) fn take_deferred_unload(&mut self, device: u32) -> Option<u64> {
        let i = self.deferred_unloads.iter().position(|&(d, _)| d == device)?;
        Some(self.deferred_unloads.remove(i).1)
    }
}

/// Program unloads that wait for a device's captures to end (`Tables::deferred_unloads`); past
/// it an unload during a capture is refused (`InvalidArgument`).
pub(crate) const DEFERRED_UNLOADS: usize = 16;

/// The identities handed to runtimes so far (each runtime takes one at its first init).
static IDENTITIES: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// A fresh runtime identity: 1 to 4,095, in turn. After 4,095 runtimes in one process the
/// identities repeat (docs/lifecycle.md, "Handles and memory").
fn next_identity() -> RuntimeId {
    let n = IDENTITIES.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    (n % u32::from(crate::handle::MAX_RUNTIME_ID)) as RuntimeId + 1
}

impl Tables {
    /// Gives the tables their runtime's identity: handles of another runtime are then rejected.
    fn set_owner(&mut self, id: RuntimeId) {
        self.platforms.set_owner(id);
        self.devices.set_owner(id);
        self.queues.set_owner(id);
        self.events.set_owner(id);
        self.programs.set_owner(id);
        self.kernels.set_owner(id);
        self.allocations.slots.set_owner(id);
        self.ordered.lock().slots.set_owner(id);
        self.graphs.set_owner(id);
        self.comms.set_owner(id);
    }

    crate::sync::const_fn_unless_loom! {
        fn new() -> Self {
            Self {
                platforms: Table::new(),
                devices: Table::new(),
                queues: Table::new(),
                events: Table::new(),
                programs: Table::new(),
                kernels: Table::new(),
                allocations: AllocTable::new(),
                ordered: OrderedAllocs::new(),
                graphs: Table::new(),
                comms: Table::new(),
                next_clique: 0,
                pinned: crate::sync::SpinLock::new(heapless::Vec::new()),
                capture_uses: crate::sync::SpinLock::new(heapless::Vec::new()),
                deferred_unloads: heapless::Vec::new(),
                cache: cache::BlockCache::new(),
            }
        }
    }
}

/// What `shutdown` did. Small and `Copy`, so the ordinary `?` path moves a few words; the full
/// report of the last teardown is `Runtime::last_teardown_report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// An init reference was dropped; this many remain and nothing was torn down.
    Released {
        /// Init references still held.
        remaining: u32,
    },
    /// The last reference was dropped and everything was torn down.
    TornDown(TeardownSummary),
}

/// What a runtime changes: the lifecycle word, the object tables and the last teardown report.
/// Its initial state is all zeros, so a `static` of it sits in `.bss` (no file size, no flash).
/// Build runtimes with `static_runtime!`, which gives each its own.
pub struct RuntimeState {
    gate: Gate,
    tables: UnsafeCell<Tables>,
    /// The report of the last final teardown, written before the lifecycle word reopens.
    last_report: crate::sync::SpinLock<TeardownReport>,
    /// The runtime's identity (`RuntimeId`; 0 until its first init, which alone writes it).
    identity: core::sync::atomic::AtomicU32,
    /// The cache's byte limit from the next init on (`Runtime::set_cache_bytes`) plus one; 0
    /// until set (then `ORDO_CACHE_BYTES` with std, else `DEFAULT_CACHE_BYTES`), so that the
    /// state stays all zeros.
    cache_bytes: core::sync::atomic::AtomicUsize,
}

impl core::fmt::Debug for RuntimeState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RuntimeState").finish_non_exhaustive()
    }
}

// SAFETY: the tables are only reached through `with_shared`/`with_exclusive`/init/teardown, which
// hold the gate so that readers never overlap a writer.
unsafe impl Sync for RuntimeState {}

impl RuntimeState {
    crate::sync::const_fn_unless_loom! {
        /// A fresh, uninitialised state (all zeros; a plain `fn` in loom builds, which cannot
        /// make atomics in a `const fn`).
        #[allow(clippy::new_without_default, reason = "the loom build's `new` only: `Default` is not derived there")]
        pub fn new() -> Self {
            Self {
                gate: Gate::new(),
                tables: UnsafeCell::new(Tables::new()),
                last_report: crate::sync::SpinLock::new(TeardownReport::EMPTY),
                identity: core::sync::atomic::AtomicU32::new(0),
                cache_bytes: core::sync::atomic::AtomicUsize::new(0),
            }
        }
    }
}

impl RuntimeState {
    /// Initialises a state in storage the caller provides (e.g. `Box::new_uninit()`), without
    /// building the ~1 MB value on the stack first: the initial state is all zeros.
    pub fn new_in(slot: &mut core::mem::MaybeUninit<RuntimeState>) -> &mut RuntimeState {
        // SAFETY: all zeros is `RuntimeState::new()`: the lifecycle word and counters 0
        // (`Uninit`, nothing in flight), every table empty (links 0 = none, slots not live, no
        // value read), an empty report (length 0), unlocked spin locks. No field has a niche or
        // invariant that zero breaks.
        unsafe {
            slot.as_mut_ptr().write_bytes(0, 1);
            slot.assume_init_mut()
        }
    }
}

#[cfg(not(loom))]
impl Default for RuntimeState {
    fn default() -> Self {
        Self::new()
    }
}

/// The ordo runtime over a fixed set of backends: the backend list and its own `RuntimeState`.
pub struct Runtime {
    backends: &'static [&'static dyn Backend],
    state: &'static RuntimeState,
}

impl core::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Runtime")
            .field("backends", &self.backends.iter().take(8).map(|b| b.name()).collect::<heapless::Vec<_, 8>>())
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

/// Declares a `static` runtime over a backend list, with its own zeroed `RuntimeState` (so the
/// tables sit in `.bss`): `ordo_core::static_runtime!(pub static RUNTIME = &BACKENDS);`, where
/// `BACKENDS` is a `static` array of `&dyn Backend`. No constructor runs: both statics are built
/// at compile time.
#[macro_export]
macro_rules! static_runtime {
    ($(#[$attr:meta])* $vis:vis static $name:ident = $backends:expr $(;)?) => {
        $(#[$attr])*
        $vis static $name: $crate::Runtime = {
            static STATE: $crate::RuntimeState = $crate::RuntimeState::new();
            let backends: &'static [&'static dyn $crate::Backend] = $backends;
            // SAFETY: `STATE` is private to this expansion: no other runtime uses it.
            unsafe { $crate::Runtime::with_state(backends, &STATE) }
        };
    };
}

impl Runtime {
    /// A runtime over `backends`, in registration order (init order; teardown runs in reverse),
    /// keeping its state in `state`. At most `MAX_PLATFORMS` backends are used; `init` fails
    /// with `InvalidArgument` otherwise. `static_runtime!` is the safe way to build one.
    ///
    /// # Safety
    /// `state` is used by this runtime only: two runtimes over one state would share tables whose
    /// entries name backends by their place in each runtime's own list.
    pub const unsafe fn with_state(backends: &'static [&'static dyn Backend], state: &'static RuntimeState) -> Self {
        Self { backends, state }
    }

    /// The registered backends (borrowed from the runtime: an `OwnedRuntime` lends its
    /// backends only for as long as it lives).
    pub fn backends(&self) -> &[&dyn Backend] {
        self.backends
    }

    /// The lifecycle state right now (it may change as soon as this returns).
    pub fn state(&self) -> State {
        self.state.gate.state()
    }

    /// Whether the lifecycle state is `Ready` right now (it may change as soon as this
    /// returns): `matches!(self.state(), State::Ready(_))`, without counting the references
    /// (one load, where `state` also reads every thread's reference count).
    #[inline]
    pub fn is_ready(&self) -> bool {
        self.state.gate.is_ready()
    }

    /// Before a release call that a backend's own threads may hold up: each backend's `settle`,
    /// with none of the runtime's locks held (only while `Ready`: backends are not called
    /// otherwise).
    fn settle_backends(&self) {
        if self.is_ready() {
            for backend in self.backends {
                backend.settle();
            }
        }
    }

    /// Runs `f` with shared access to the tables, as a call in flight.
    #[inline]
    fn with_shared<R>(&self, f: impl FnOnce(&Tables) -> Result<R>) -> Result<R> {
        self.with_shared_inline(f)
    }

    /// `with_shared`, always inlined, for the launch paths: with an `#[inline(always)]` closure
    /// the whole launch, from the C entry point to the backend's call, is one function (no
    /// frame, no closure struct, no result copied between frames; `tests/gpu/RESULTS.md`,
    /// 2026-11-26 15:01–15:56).
    #[inline(always)]
    pub(crate) fn with_shared_inline<R>(&self, f: impl FnOnce(&Tables) -> Result<R>) -> Result<R> {
        let _in_flight = self.state.gate.enter_shared()?;
        // SAFETY: a shared guard excludes writers for its lifetime.
        f(unsafe { &*self.state.tables.get() })
    }

    /// Runs `f` with exclusive access to the tables, as a call in flight.
    fn with_exclusive<R>(&self, f: impl FnOnce(&mut Tables) -> Result<R>) -> Result<R> {
        let _writer = self.state.gate.enter_exclusive()?;
        // SAFETY: an exclusive guard excludes every other access for its lifetime.
        f(unsafe { &mut *self.state.tables.get() })
    }

    /// Test hook (feature `testing`): raises the generation of every free slot of the table of
    /// `kind` to at least `generation`, so a test reaches the end of a slot's generations
    /// without 2^32 create/destroy cycles. Requires `Ready`.
    #[cfg(feature = "testing")]
    #[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
    pub fn age_free_slots_for_testing(&self, kind: ObjectKind, generation: u32) -> Result<()> {
        self.with_exclusive(|t| {
            match kind {
                ObjectKind::Platform => t.platforms.age_free_slots(generation),
                ObjectKind::Device => t.devices.age_free_slots(generation),
                ObjectKind::Queue => t.queues.age_free_slots(generation),
                ObjectKind::Event => t.events.age_free_slots(generation),
                ObjectKind::Program => t.programs.age_free_slots(generation),
                ObjectKind::Kernel => t.kernels.age_free_slots(generation),
                ObjectKind::Allocation => {
                    t.allocations.slots.age_free_slots(generation);
                    t.ordered.lock().slots.age_free_slots(generation);
                }
                ObjectKind::Graph => t.graphs.age_free_slots(generation),
                ObjectKind::Communicator => t.comms.age_free_slots(generation),
            }
            Ok(())
        })
    }

    /// The runtime's identity, which every handle it issues carries (1 to 4,095; 0 before its
    /// first init). Two runtimes of one process have different identities unless more than
    /// 4,095 runtimes were initialised in it.
    pub fn identity(&self) -> RuntimeId {
        self.state.identity.load(core::sync::atomic::Ordering::Relaxed) as RuntimeId
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;

    use super::*;

    /// A state built in place from zeros works like `RuntimeState::new()` (Miri checks the
    /// values read from it).
    #[test]
    fn a_state_built_in_place_from_zeros_is_a_fresh_state() {
        static ARENA: crate::host::HostArena<1024> = crate::host::HostArena::new();
        static HOST: crate::host::HostBackend =
            crate::host::HostBackend::new(&ARENA, crate::host::builtin::PROGRAMS, None);
        static BACKENDS: [&dyn Backend; 1] = [&HOST];
        let storage = std::boxed::Box::into_raw(std::boxed::Box::new_uninit());
        // SAFETY: `storage` is a live heap block, freed only at the end, after its last use.
        let state: &'static RuntimeState = RuntimeState::new_in(unsafe { &mut *storage });
        // SAFETY: the state is fresh and used by this runtime only.
        let rt = unsafe { Runtime::with_state(&BACKENDS, state) };
        assert_eq!(rt.state(), State::Uninit);
        assert!(rt.last_teardown_report().is_none());
        rt.init().unwrap();
        let d = rt.device(rt.platform(0).unwrap(), 0).unwrap();
        rt.queue_create(d).unwrap();
        rt.mem_alloc(d, crate::MemKind::Device, 64).unwrap();
        assert!(matches!(rt.shutdown(), Ok(Shutdown::TornDown(s)) if s.is_clean() && s.sequence == 1));
        // SAFETY: the block came from `Box::into_raw`; the runtime over it is not used again.
        drop(unsafe { std::boxed::Box::from_raw(storage) });
    }
}

// The launch path's reads (see the entry types): a device's launch functions, limits and
// ordinal in the first 64 bytes of its slot (8 of them the slot's generation and tag), a kernel's in the first
// 24 and a queue's in the first 24 of theirs.
const _: () = {
    assert!(core::mem::offset_of!(DeviceEntry, ordinal) + 4 + 8 <= 64);
    assert!(core::mem::offset_of!(KernelEntry, args_end) + 4 + 8 <= 32);
    assert!(core::mem::size_of::<QueueEntry>() + 8 <= 32);
};
