//! The runtime: the lifecycle gate, the object tables, init and the final teardown.
//!
//! A `Runtime` is built by a `const fn` over a fixed list of `&'static dyn Backend`, so it can
//! live in a `static` and never needs a constructor or destructor. The tables sit in an
//! `UnsafeCell` whose access is ruled by the gate: shared calls read them together, exclusive calls
//! (and init/teardown, which hold the gate in `Initializing`/`ShuttingDown`) change them alone.
//! Operations on objects are in `ops.rs`. Depends on every other module of the crate but `host`.

mod ops;
mod teardown;

use core::cell::UnsafeCell;

use crate::alloc_table::AllocTable;
use crate::backend::Backend;
use crate::capacity::MAX_ALLOCATIONS;
use crate::capacity::{MAX_DEVICES, MAX_EVENTS, MAX_KERNELS, MAX_PLATFORMS, MAX_PROGRAMS, MAX_QUEUES};
use crate::error::{BackendError, Error, ErrorCode, Result, fail};
use crate::handle::ObjectKind;
use crate::lifecycle::{Gate, InitStep, ShutdownStep, State};
use crate::report::{TeardownEvent, TeardownReport};
use crate::table::Table;

pub use ops::PlatformInfo;

pub(crate) const NO_SLOT: u32 = u32::MAX;

pub(crate) struct PlatformEntry {
    pub backend: u8,
    /// Why the platform is absent, or `None` when it is present.
    pub absent: Option<BackendError>,
    /// Device table slots, in ordinal order.
    pub devices: heapless::Vec<u32, MAX_DEVICES>,
}

pub(crate) struct DeviceEntry {
    /// The backend itself, so that resolving a device needs no lookup in the backend list.
    pub driver: &'static dyn Backend,
    pub backend: u8,
    pub platform: u32,
    pub ordinal: u32,
}

pub(crate) struct QueueEntry {
    pub device: u32,
    pub raw: u64,
}

pub(crate) type EventEntry = QueueEntry;

pub(crate) struct ProgramEntry {
    pub device: u32,
    pub raw: u64,
    /// Newest kernel of this program (kernels form a list through `KernelEntry::next`).
    pub first_kernel: u32,
}

pub(crate) struct KernelEntry {
    pub program: u32,
    /// Device slot (the program's), kept here so a launch needs no program lookup.
    pub device: u32,
    pub raw: u64,
    pub next: u32,
}

pub(crate) struct Tables {
    pub platforms: Table<PlatformEntry, MAX_PLATFORMS>,
    pub devices: Table<DeviceEntry, MAX_DEVICES>,
    pub queues: Table<QueueEntry, MAX_QUEUES>,
    pub events: Table<EventEntry, MAX_EVENTS>,
    pub programs: Table<ProgramEntry, MAX_PROGRAMS>,
    pub kernels: Table<KernelEntry, MAX_KERNELS>,
    pub allocations: AllocTable<MAX_ALLOCATIONS>,
}

impl Tables {
    const fn new() -> Self {
        Self {
            platforms: Table::new(ObjectKind::Platform),
            devices: Table::new(ObjectKind::Device),
            queues: Table::new(ObjectKind::Queue),
            events: Table::new(ObjectKind::Event),
            programs: Table::new(ObjectKind::Program),
            kernels: Table::new(ObjectKind::Kernel),
            allocations: AllocTable::new(),
        }
    }
}

/// Live objects per kind, as the runtime's tables hold them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveObjects {
    /// Platforms (present or absent).
    pub platforms: usize,
    /// Devices.
    pub devices: usize,
    /// Queues.
    pub queues: usize,
    /// Events.
    pub events: usize,
    /// Programs.
    pub programs: usize,
    /// Kernels.
    pub kernels: usize,
    /// Allocations.
    pub allocations: usize,
}

/// What `shutdown` did.
#[allow(clippy::large_enum_variant)] // No alloc to box the report; it is returned once per epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// An init reference was dropped; this many remain and nothing was torn down.
    Released {
        /// Init references still held.
        remaining: u32,
    },
    /// The last reference was dropped and everything was torn down.
    TornDown(TeardownReport),
}

/// The ordo runtime over a fixed set of backends.
pub struct Runtime {
    backends: &'static [&'static dyn Backend],
    gate: Gate,
    tables: UnsafeCell<Tables>,
}

// SAFETY: the tables are only reached through `with_shared`/`with_exclusive`/init/teardown, which
// hold the gate so that readers never overlap a writer; backends are `Sync`.
unsafe impl Sync for Runtime {}

impl Runtime {
    /// A runtime over `backends`, in registration order (init order; teardown runs in reverse).
    /// At most `MAX_PLATFORMS` backends are used; `init` fails with `InvalidArgument` otherwise.
    #[cfg(not(loom))]
    pub const fn new(backends: &'static [&'static dyn Backend]) -> Self {
        Self { backends, gate: Gate::new(), tables: UnsafeCell::new(Tables::new()) }
    }

    /// A runtime over `backends` (loom builds cannot make atomics in a `const fn`).
    #[cfg(loom)]
    pub fn new(backends: &'static [&'static dyn Backend]) -> Self {
        Self { backends, gate: Gate::new(), tables: UnsafeCell::new(Tables::new()) }
    }

    /// The registered backends.
    pub fn backends(&self) -> &'static [&'static dyn Backend] {
        self.backends
    }

    /// The lifecycle state right now (it may change as soon as this returns).
    pub fn state(&self) -> State {
        self.gate.state()
    }

    /// Runs `f` with shared access to the tables, as a call in flight.
    #[inline]
    fn with_shared<R>(&self, f: impl FnOnce(&Tables) -> Result<R>) -> Result<R> {
        let _in_flight = self.gate.enter_shared()?;
        // SAFETY: a shared guard excludes writers for its lifetime.
        f(unsafe { &*self.tables.get() })
    }

    /// Runs `f` with exclusive access to the tables, as a call in flight.
    fn with_exclusive<R>(&self, f: impl FnOnce(&mut Tables) -> Result<R>) -> Result<R> {
        let _writer = self.gate.enter_exclusive()?;
        // SAFETY: an exclusive guard excludes every other access for its lifetime.
        f(unsafe { &mut *self.tables.get() })
    }

    /// Takes an init reference. The first one initialises every backend in registration order;
    /// a backend without driver or devices is recorded as an absent platform. If a present backend
    /// fails, the ones already up are released in reverse order and its error is returned.
    #[inline]
    pub fn init(&self) -> Result<()> {
        if self.gate.try_add_reference() {
            return Ok(());
        }
        self.init_slow()
    }

    #[inline(never)]
    fn init_slow(&self) -> Result<()> {
        match self.gate.begin_init()? {
            InitStep::Referenced => Ok(()),
            InitStep::MustInitialize => {
                // SAFETY: the gate is `Initializing`, held by this thread alone; no call is in the
                // tables (shared/exclusive entry requires `Ready`).
                let tables = unsafe { &mut *self.tables.get() };
                let result = self.initialize(tables);
                self.gate.finish_init(result.is_ok());
                result
            }
        }
    }

    fn initialize(&self, t: &mut Tables) -> Result<()> {
        if self.backends.len() > MAX_PLATFORMS {
            return fail(ErrorCode::InvalidArgument, "more backends than ORDO_MAX_PLATFORMS");
        }
        for (index, backend) in self.backends.iter().enumerate() {
            let outcome = match backend.init() {
                Ok(count) => self.add_platform(t, index, count),
                Err(e) if e.code == ErrorCode::NotPresent => {
                    log::info!("ordo: platform {} is absent: {}", backend.name(), e.message);
                    let absent = PlatformEntry { backend: index as u8, absent: Some(e), devices: heapless::Vec::new() };
                    t.platforms
                        .insert(absent)
                        .map(|_| ())
                        .map_err(|_| Error::new(ErrorCode::Internal, "platform table"))
                }
                Err(e) => Err(e.into()),
            };
            if let Err(e) = outcome {
                log::warn!("ordo: init of platform {} failed: {e}; rolling back", backend.name());
                self.roll_back(t);
                return Err(e);
            }
        }
        Ok(())
    }

    fn add_platform(&self, t: &mut Tables, index: usize, count: u32) -> Result<()> {
        let platform = PlatformEntry { backend: index as u8, absent: None, devices: heapless::Vec::new() };
        let Ok(handle) = t.platforms.insert(platform) else {
            let _ = self.backends[index].deinit();
            return fail(ErrorCode::Internal, "platform table");
        };
        let slot = handle.index() as u32;
        for ordinal in 0..count {
            let device = DeviceEntry { driver: self.backends[index], backend: index as u8, platform: slot, ordinal };
            let Ok(d) = t.devices.insert(device) else {
                // The platform is in the table, so roll-back releases the devices added so far.
                return fail(ErrorCode::OutOfResources, "more devices than ORDO_MAX_DEVICES");
            };
            let devices = &mut t.platforms.at_mut(slot).devices;
            // Cannot overflow: it holds at most as many entries as the device table.
            let _ = devices.push(d.index() as u32);
        }
        log::info!("ordo: platform {} is up with {count} device(s)", self.backends[index].name());
        Ok(())
    }

    fn roll_back(&self, t: &mut Tables) {
        let report = teardown::tear_down(self.backends, t, &mut |_| {});
        if !report.is_clean() {
            log::warn!("ordo: roll-back after a failed init: {report}");
        }
    }

    /// Drops an init reference. The last one waits until every call in flight has returned, then
    /// releases every object in the documented order and deinitialises the backends.
    #[inline]
    pub fn shutdown(&self) -> Result<Shutdown> {
        match self.gate.try_drop_reference() {
            Some(remaining) => Ok(Shutdown::Released { remaining }),
            None => self.shutdown_observed(&mut |_| {}),
        }
    }

    /// `shutdown`, calling `observer` for each teardown step in the order it ran.
    pub fn shutdown_observed(&self, observer: &mut dyn FnMut(&TeardownEvent)) -> Result<Shutdown> {
        match self.gate.begin_shutdown()? {
            ShutdownStep::Released(remaining) => Ok(Shutdown::Released { remaining }),
            ShutdownStep::MustTearDown => {
                // SAFETY: the gate is `ShuttingDown` with no call in flight and no writer; only this
                // thread reaches the tables until `finish_shutdown`.
                let tables = unsafe { &mut *self.tables.get() };
                let report = teardown::tear_down(self.backends, tables, observer);
                self.gate.finish_shutdown();
                if report.is_clean() {
                    log::debug!("ordo: teardown complete: {report}");
                } else {
                    log::warn!("ordo: teardown finished with failures: {report}");
                }
                Ok(Shutdown::TornDown(report))
            }
        }
    }

    /// Live objects per kind (requires `Ready`).
    pub fn live_objects(&self) -> Result<LiveObjects> {
        self.with_shared(|t| {
            Ok(LiveObjects {
                platforms: t.platforms.len(),
                devices: t.devices.len(),
                queues: t.queues.len(),
                events: t.events.len(),
                programs: t.programs.len(),
                kernels: t.kernels.len(),
                allocations: t.allocations.slots.len(),
            })
        })
    }
}
