//! Init and the final teardown: bringing the backends up in order (absent and unavailable
//! platforms recorded, a panicking backend rolled back), nested references, the final shutdown
//! with its report, and the guards that keep the gate consistent if a backend unwinds. Part of
//! the runtime (`runtime/mod.rs`: its tables and gate); depends on `teardown`, `lifecycle`,
//! `report`, `backend`, `handle` and `error`.

use super::*;

impl Runtime {
    /// Takes an init reference. The first one initialises every backend in registration order:
    /// a backend without driver or devices is recorded as an absent platform, and one whose
    /// driver is present but fails to initialise as an unavailable platform with its error;
    /// neither fails `init`. A backend that panics (std builds) makes `init` fail with
    /// `Internal` after rolling back the backends already up; without std a panic unwinds
    /// through a guard that does the same. Either way the runtime is `Uninit` afterwards.
    #[inline]
    pub fn init(&self) -> Result<()> {
        if self.state.gate.try_add_reference() {
            return Ok(());
        }
        self.init_slow()
    }

    /// Takes another init reference only while the runtime is initialised (never initialises
    /// it): `Uninitialized` when it is not. What a holder of a reference uses to hand one to
    /// another holder (the typed API's objects each hold one), so that a copy made after the
    /// runtime was shut down under it does not bring the runtime up again.
    ///
    /// ```
    /// # use ordo_core::{Backend, ErrorCode, State};
    /// # use ordo_core::host::{HostArena, HostBackend, builtin};
    /// # static ARENA: HostArena<4096> = HostArena::new();
    /// # static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
    /// # static BACKENDS: [&dyn Backend; 1] = [&HOST];
    /// ordo_core::static_runtime!(static RT = &BACKENDS);
    /// let rt = &RT;
    /// assert_eq!(rt.retain().unwrap_err().code, ErrorCode::Uninitialized);
    /// rt.init()?;
    /// rt.retain()?;
    /// assert_eq!(rt.state(), State::Ready(2));
    /// # rt.shutdown()?; rt.shutdown()?;
    /// # Ok::<(), ordo_core::Error>(())
    /// ```
    #[inline]
    pub fn retain(&self) -> Result<()> {
        if self.state.gate.try_add_reference() {
            return Ok(());
        }
        self.retain_slow()
    }

    #[inline(never)]
    fn retain_slow(&self) -> Result<()> {
        match self.state.gate.begin_init(true)? {
            InitStep::Referenced => Ok(()),
            // `begin_init(true)` never asks for an initialisation.
            InitStep::MustInitialize => {
                self.state.gate.finish_init(false);
                fail(ErrorCode::Internal, "the gate asked to initialise a runtime for a retain")
            }
        }
    }

    /// How many times the runtime has been torn down (by its final shutdown, or in a `fork`
    /// child): every init reference belongs to one epoch and ends with it. A holder that notes
    /// the epoch after taking its reference can tell later whether the reference still exists
    /// (the epoch is the same) or was taken away by a final shutdown it did not make (a caller
    /// of the raw API shutting down more often than it initialised): the typed API's objects
    /// give their reference back only in their own epoch, so a stale one never takes a newer
    /// holder's reference.
    ///
    /// ```
    /// # use ordo_core::Backend;
    /// # use ordo_core::host::{HostArena, HostBackend, builtin};
    /// # static ARENA: HostArena<4096> = HostArena::new();
    /// # static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
    /// # static BACKENDS: [&dyn Backend; 1] = [&HOST];
    /// ordo_core::static_runtime!(static RT = &BACKENDS);
    /// let rt = &RT;
    /// rt.init()?;
    /// let epoch = rt.epoch();
    /// rt.init()?;
    /// rt.shutdown()?; // not the last reference: the same epoch
    /// assert_eq!(rt.epoch(), epoch);
    /// rt.shutdown()?; // the final one
    /// assert_eq!(rt.epoch(), epoch + 1);
    /// # Ok::<(), ordo_core::Error>(())
    /// ```
    #[inline]
    pub fn epoch(&self) -> u32 {
        self.state.gate.epoch()
    }

    #[inline(never)]
    fn init_slow(&self) -> Result<()> {
        #[cfg(feature = "std")]
        crate::trace::chrome::start_from_env();
        let begun = crate::trace::begin("init\0");
        let result = self.init_slower();
        crate::trace::step(
            "init",
            begun,
            &[("runtime", u64::from(self.identity()))],
            result.as_ref().err().map(|e| e.code),
        );
        result
    }

    fn init_slower(&self) -> Result<()> {
        match self.state.gate.begin_init(false)? {
            InitStep::Referenced => Ok(()),
            InitStep::MustInitialize => {
                // Rolls back and reopens the gate if a panic unwinds out of `initialize`.
                let unwind = InitUnwindGuard(self);
                // SAFETY: the gate is `Initializing`, held by this thread alone; no call is in the
                // tables (shared/exclusive entry requires `Ready`).
                let tables = unsafe { &mut *self.state.tables.get() };
                let result = self.initialize(tables);
                core::mem::forget(unwind);
                self.state.gate.finish_init(result.is_ok());
                result
            }
        }
    }

    /// Sets the byte limit of the cache of queue-ordered memory (`cache.rs`) for the runtime's
    /// next init on (the running epoch keeps its own): blocks freed with `mem_free_on` are kept,
    /// up to `bytes` in all, for their queue's next `mem_alloc_on` of the same size. 0 turns the
    /// cache off: every free goes to the driver at once, as without a cache. Until set, the
    /// limit is `ORDO_CACHE_BYTES` (with std, read at each init; a number of bytes) or
    /// `DEFAULT_CACHE_BYTES` (256 MiB with std, 0 without).
    pub fn set_cache_bytes(&self, bytes: usize) {
        self.state.cache_bytes.store(bytes.saturating_add(1), core::sync::atomic::Ordering::Relaxed);
    }

    /// The byte limit the next init gives the cache (`set_cache_bytes`).
    fn cache_limit(&self) -> usize {
        match self.state.cache_bytes.load(core::sync::atomic::Ordering::Relaxed) {
            0 => env_cache_bytes().unwrap_or(super::DEFAULT_CACHE_BYTES),
            set => set - 1,
        }
    }

    fn initialize(&self, t: &mut Tables) -> Result<()> {
        if self.backends.len() > MAX_PLATFORMS {
            return fail(ErrorCode::InvalidArgument, "more backends than ORDO_MAX_PLATFORMS");
        }
        let mut id = self.state.identity.load(core::sync::atomic::Ordering::Relaxed) as RuntimeId;
        if id == 0 {
            id = next_identity();
            self.state.identity.store(u32::from(id), core::sync::atomic::Ordering::Relaxed);
        }
        t.set_owner(id);
        t.cache.start(self.cache_limit());
        for (index, backend) in self.backends.iter().enumerate() {
            // The platform's entry goes in first, so that a roll-back sees whatever comes up; until
            // the backend's init returns, the entry says it is not usable (a roll-back while it
            // panics must not deinit it: its state is unknown, and a later init may find it `Busy`).
            let unfinished = BackendError::new(ErrorCode::Internal, 0, "the backend's init did not finish");
            let entry = PlatformEntry { backend: index as u8, absent: Some(unfinished), devices: heapless::Vec::new() };
            // Cannot fail: at most MAX_PLATFORMS backends (checked above), one entry each, and a
            // platform slot is retired only after 2^32 init cycles.
            let Ok(handle) = t.platforms.insert(entry) else {
                self.roll_back(t);
                return fail(ErrorCode::OutOfResources, "platform table is exhausted");
            };
            let slot = handle.index() as u32;
            let Ok(outcome) = reentry::contain(|| backend.init()) else {
                log::error!("ordo: platform {} panicked while initialising; rolling back", backend.name());
                self.roll_back(t);
                return fail(ErrorCode::Internal, "a backend panicked while initialising; init was rolled back");
            };
            let absent = match outcome {
                Ok(count) => self.add_devices(t, slot, index, count).err(),
                Err(e) => Some(e),
            };
            match &absent {
                Some(e) if e.code == ErrorCode::NotPresent => {
                    log::info!("ordo: platform {} is absent: {}", backend.name(), e.message)
                }
                Some(e) => log::warn!("ordo: platform {} is unavailable: {e}", backend.name()),
                None => {}
            }
            t.platforms.at_mut(slot).absent = absent;
        }
        Ok(())
    }

    /// Adds the `count` devices of the backend at `index` (an up backend) to its platform entry
    /// in `slot`. If the device table cannot take them all, releases them, deinits the backend
    /// and returns why.
    fn add_devices(
        &self,
        t: &mut Tables,
        slot: u32,
        index: usize,
        count: u32,
    ) -> core::result::Result<(), BackendError> {
        let backend = self.backends[index];
        for ordinal in 0..count {
            let device = DeviceEntry::new(backend, index as u8, slot, ordinal);
            let Ok(d) = t.devices.insert(device) else { break };
            // Cannot overflow: it holds at most as many entries as the device table.
            let _ = t.platforms.at_mut(slot).devices.push(d.index() as u32);
        }
        if t.platforms.at(slot).devices.len() == count as usize {
            log::info!("ordo: platform {} is up with {count} device(s)", backend.name());
            return Ok(());
        }
        while let Some(d) = t.platforms.at_mut(slot).devices.pop() {
            t.devices.remove_at(d);
        }
        for ordinal in (0..count).rev() {
            // SAFETY: this runtime initialised the backend; no object of it exists yet.
            let _ = unsafe { backend.device_release(ordinal) };
        }
        // SAFETY: as above; every device was released.
        let _ = unsafe { backend.deinit() };
        Err(BackendError::new(ErrorCode::OutOfResources, 0, "more devices than ORDO_MAX_DEVICES"))
    }

    fn roll_back(&self, t: &mut Tables) {
        let report = teardown::tear_down(self.backends, t, None);
        if !report.is_clean() {
            log::warn!("ordo: roll-back after a failed init: {report}");
        }
    }

    /// Drops an init reference. The last one waits until every call in flight has returned, then
    /// releases every object in the documented order and deinitialises the backends; its full
    /// report is kept for `last_teardown_report`.
    #[inline]
    pub fn shutdown(&self) -> Result<Shutdown> {
        match self.state.gate.try_drop_reference() {
            Some(remaining) => Ok(Shutdown::Released { remaining }),
            None => self.shutdown_with(None, &mut || true, false),
        }
    }

    /// `shutdown`, calling `observer` for each teardown step in the order it ran. An observer
    /// that panics (std builds) is not called again, and the panic is recorded in the report
    /// as a failure of the step it observed; the teardown completes either way.
    pub fn shutdown_observed(&self, observer: &mut dyn FnMut(&TeardownEvent)) -> Result<Shutdown> {
        self.shutdown_with(Some(observer), &mut || true, false)
    }

    /// Drops every init reference this process holds and tears down, waiting for calls in
    /// flight only while `patience` returns `true` (asked before each wait). When patience runs
    /// out, nothing changes (every reference is still held, nothing is torn down) and the result
    /// is `Busy`. `Ok(None)` when the runtime was not initialised. Meant for exit paths (the C
    /// library's at-exit hook), where a thread stuck inside a call must not keep the process from
    /// exiting.
    pub fn shutdown_all(&self, patience: &mut dyn FnMut() -> bool) -> Result<Option<TeardownSummary>> {
        match self.shutdown_with(None, patience, true) {
            Ok(Shutdown::TornDown(summary)) => Ok(Some(summary)),
            Ok(Shutdown::Released { .. }) => fail(ErrorCode::Internal, "shutdown_all released a reference only"),
            Err(e) if e.code == ErrorCode::Uninitialized => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn shutdown_with(
        &self,
        observer: Option<&mut dyn FnMut(&TeardownEvent)>,
        patience: &mut dyn FnMut() -> bool,
        all: bool,
    ) -> Result<Shutdown> {
        match self.state.gate.begin_shutdown(patience, all)? {
            ShutdownStep::Released(remaining) => Ok(Shutdown::Released { remaining }),
            ShutdownStep::MustTearDown => {
                let begun = crate::trace::begin("teardown\0");
                // Forgets what is left and reopens the gate if a panic unwinds out of the teardown.
                let unwind = TeardownUnwindGuard(self);
                // SAFETY: the gate is `ShuttingDown` with no call in flight and no writer; only this
                // thread reaches the tables until `finish_shutdown`.
                let tables = unsafe { &mut *self.state.tables.get() };
                let mut report = teardown::tear_down(self.backends, tables, observer);
                let mut last = self.state.last_report.lock();
                report.sequence = last.sequence + 1;
                let summary = report.summary();
                *last = report;
                if summary.is_clean() {
                    log::debug!("ordo: teardown complete: {}", *last);
                } else {
                    log::warn!("ordo: teardown finished with failures: {}", *last);
                }
                drop(last);
                core::mem::forget(unwind);
                self.state.gate.finish_shutdown();
                let failures = u64::from(summary.failures);
                crate::trace::step(
                    "teardown",
                    begun,
                    &[("runtime", u64::from(self.identity())), ("failures", failures)],
                    None,
                );
                crate::trace::checkpoint();
                Ok(Shutdown::TornDown(summary))
            }
        }
    }

    /// The report of the last final teardown (`None` before the first): every failure, the
    /// objects released per kind, and those the driver had already released.
    pub fn last_teardown_report(&self) -> Option<TeardownReport> {
        let report = self.state.last_report.lock();
        (report.sequence > 0).then(|| report.clone())
    }

    /// Releases every object of `Tables` without calling a backend (their generations advance,
    /// so every handle goes stale): after a panic in a teardown, and in a forked child.
    pub(super) fn forget_objects(t: &mut Tables) {
        t.events.forget_all();
        t.queues.forget_all();
        t.kernels.forget_all();
        t.programs.forget_all();
        t.allocations.slots.forget_all();
        t.ordered.forget_all();
        t.cache.forget_all();
        t.graphs.forget_all();
        t.comms.forget_all();
        t.pinned.get_mut().clear();
        t.devices.forget_all();
        t.platforms.forget_all();
    }
}

/// Unwinding out of `initialize` (a panic that was not contained: builds without std): roll back
/// what was brought up and return to `Uninit`, so the next `init` works.
struct InitUnwindGuard<'a>(&'a Runtime);

impl Drop for InitUnwindGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: only reached while unwinding out of `init_slow`, which holds the gate in
        // `Initializing`: no other thread reaches the tables.
        let tables = unsafe { &mut *self.0.state.tables.get() };
        self.0.roll_back(tables);
        self.0.state.gate.finish_init(false);
    }
}

/// Unwinding out of the teardown (a panic that was not contained: builds without std): forget
/// every object left (handles go stale), and return to `Uninit`, so the next `init` works.
struct TeardownUnwindGuard<'a>(&'a Runtime);

impl Drop for TeardownUnwindGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: only reached while unwinding out of the teardown, which holds the gate in
        // `ShuttingDown` with no call in flight.
        Runtime::forget_objects(unsafe { &mut *self.0.state.tables.get() });
        self.0.state.gate.finish_shutdown();
    }
}

/// `ORDO_CACHE_BYTES` as a number of bytes (with std; `None` unset, empty or not a number, which
/// is logged).
#[cfg(all(feature = "std", not(loom)))]
fn env_cache_bytes() -> Option<usize> {
    let v = std::env::var("ORDO_CACHE_BYTES").ok().filter(|v| !v.trim().is_empty())?;
    let parsed = v.trim().parse().ok();
    if parsed.is_none() {
        log::warn!("ordo: ORDO_CACHE_BYTES={v}: not a number of bytes; the default applies");
    }
    parsed
}

#[cfg(not(all(feature = "std", not(loom))))]
fn env_cache_bytes() -> Option<usize> {
    None
}
