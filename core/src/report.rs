//! The teardown report: every failure of the final shutdown, in a fixed-capacity list, plus
//! counts of what was released. Depends on `error`, `handle` and the capacity constants.

use core::fmt;

use crate::capacity::MAX_REPORT_FAILURES;
use crate::error::{BackendError, ErrorCode};
use crate::handle::{ObjectKind, RawHandle};

/// One step of the documented teardown order.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TeardownStep {
    /// 1. Synchronise a queue.
    SynchronizeQueue = 0,
    /// 2. Destroy an event.
    DestroyEvent = 1,
    /// 3. Destroy a queue.
    DestroyQueue = 2,
    /// 4. Unload a program (its kernels die with it).
    UnloadProgram = 3,
    /// 5. Free a memory allocation.
    FreeMemory = 4,
    /// 6. Release a device.
    ReleaseDevice = 5,
    /// Then deinit the backend.
    DeinitBackend = 6,
    /// 2b. Destroy a graph (after the device's events, before its queues).
    DestroyGraph = 7,
    /// 2c. Destroy a communicator (after the device's graphs, before its queues; finalized
    /// with a bounded wait after step 1, aborted when that fails).
    DestroyCommunicator = 8,
}

impl TeardownStep {
    /// The kind of object the step acts on.
    pub const fn object_kind(self) -> ObjectKind {
        match self {
            Self::SynchronizeQueue | Self::DestroyQueue => ObjectKind::Queue,
            Self::DestroyEvent => ObjectKind::Event,
            Self::UnloadProgram => ObjectKind::Program,
            Self::FreeMemory => ObjectKind::Allocation,
            Self::ReleaseDevice => ObjectKind::Device,
            Self::DeinitBackend => ObjectKind::Platform,
            Self::DestroyGraph => ObjectKind::Graph,
            Self::DestroyCommunicator => ObjectKind::Communicator,
        }
    }

    /// A short verb phrase for the step.
    pub const fn name(self) -> &'static str {
        match self {
            Self::SynchronizeQueue => "synchronize queue",
            Self::DestroyEvent => "destroy event",
            Self::DestroyQueue => "destroy queue",
            Self::UnloadProgram => "unload program",
            Self::FreeMemory => "free memory",
            Self::ReleaseDevice => "release device",
            Self::DeinitBackend => "deinit backend",
            Self::DestroyGraph => "destroy graph",
            Self::DestroyCommunicator => "destroy communicator",
        }
    }
}

/// How one teardown step on one object ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// The backend call succeeded.
    Done,
    /// The driver had already released the object; counted, not a failure.
    ReleasedByDriver,
    /// The backend call failed; the object is forgotten all the same.
    Failed(BackendError),
}

/// One teardown step, as passed to a teardown observer, in the order the steps ran.
#[derive(Clone, Copy, Debug)]
pub struct TeardownEvent {
    /// Index of the platform (registration order).
    pub platform: u32,
    /// The backend's device ordinal (`u32::MAX` for `DeinitBackend`).
    pub device: u32,
    /// The step.
    pub step: TeardownStep,
    /// The handle the object had (the platform's handle for `DeinitBackend`; null for memory,
    /// which users know by `address`).
    pub handle: RawHandle,
    /// For memory, the address; otherwise 0.
    pub address: u64,
    /// How it ended.
    pub outcome: StepOutcome,
}

/// A failed teardown step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TeardownFailure {
    /// Index of the platform (registration order).
    pub platform: u32,
    /// The backend's device ordinal (`u32::MAX` for `DeinitBackend`).
    pub device: u32,
    /// The step that failed (its object kind is `step.object_kind()`).
    pub step: TeardownStep,
    /// The handle the object had (null for memory, which users know by `address`).
    pub handle: RawHandle,
    /// For memory, the allocation's base address; otherwise 0.
    pub address: u64,
    /// The translated error code.
    pub code: ErrorCode,
    /// The backend's own code.
    pub native: i64,
    /// The backend's message (for a driver's error, the driver's name for it).
    pub message: &'static str,
    /// The driver call that failed, or empty.
    pub call: &'static str,
}

impl TeardownFailure {
    /// The failure's detail as users read it: `[call: ]message[ (native)]`.
    pub const fn detail(&self) -> crate::error::ErrorDetail {
        crate::Error { code: self.code, native: self.native, message: self.message, call: self.call }.detail()
    }
}

/// What the final shutdown did: counts of released objects and every failure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TeardownReport {
    /// Which final teardown of its runtime this was (1 for the first; 0 in a report that no
    /// teardown wrote).
    pub sequence: u64,
    /// Failures in the order they happened (at most `MAX_REPORT_FAILURES`).
    pub failures: heapless::Vec<TeardownFailure, MAX_REPORT_FAILURES>,
    /// Failures that did not fit in `failures`.
    pub overflow: u32,
    /// Objects released per kind (indexed by `ObjectKind as usize - 1`), including failed
    /// releases: each object is released exactly once either way. Kernels are counted when
    /// their program is unloaded. Queue synchronisations are not counted here.
    pub released: [u32; 9],
    /// Steps whose object the driver had already released.
    pub released_by_driver: u32,
}

/// The gist of a final teardown, as `Runtime::shutdown` returns it (a few words, `Copy`); the
/// full report is `Runtime::last_teardown_report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TeardownSummary {
    /// Which final teardown of the runtime this was (1 for the first).
    pub sequence: u64,
    /// Failed steps (`TeardownReport::failure_count`).
    pub failures: u32,
    /// Steps whose object the driver had already released.
    pub released_by_driver: u32,
}

impl TeardownSummary {
    /// No step failed.
    pub fn is_clean(&self) -> bool {
        self.failures == 0
    }
}

impl TeardownReport {
    /// A report of nothing (what `Default` gives, usable in a `const`).
    pub const EMPTY: Self =
        Self { sequence: 0, failures: heapless::Vec::new(), overflow: 0, released: [0; 9], released_by_driver: 0 };

    /// The report's gist.
    pub fn summary(&self) -> TeardownSummary {
        TeardownSummary {
            sequence: self.sequence,
            failures: self.failure_count(),
            released_by_driver: self.released_by_driver,
        }
    }

    /// Counts `n` objects of `kind` released without a step of their own (kernels).
    pub(crate) fn count_released(&mut self, kind: ObjectKind, n: u32) {
        self.released[kind as usize - 1] += n;
    }

    /// No step failed.
    pub fn is_clean(&self) -> bool {
        self.failures.is_empty() && self.overflow == 0
    }

    /// The number of failed steps, including those that overflowed the list.
    pub fn failure_count(&self) -> u32 {
        self.failures.len() as u32 + self.overflow
    }

    /// Objects of `kind` released.
    pub fn released_of(&self, kind: ObjectKind) -> u32 {
        self.released[kind as usize - 1]
    }

    pub(crate) fn record(&mut self, event: &TeardownEvent) {
        if event.step != TeardownStep::SynchronizeQueue {
            self.released[event.step.object_kind() as usize - 1] += 1;
        }
        match event.outcome {
            StepOutcome::Done => {}
            StepOutcome::ReleasedByDriver => self.released_by_driver += 1,
            StepOutcome::Failed(e) => {
                let failure = TeardownFailure {
                    platform: event.platform,
                    device: event.device,
                    step: event.step,
                    handle: event.handle,
                    address: event.address,
                    code: e.code,
                    native: e.native,
                    message: e.message,
                    call: e.call,
                };
                if self.failures.push(failure).is_err() {
                    self.overflow += 1;
                }
            }
        }
    }
}

impl fmt::Display for TeardownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "released:")?;
        for kind in ObjectKind::ALL {
            write!(f, " {} {}", self.released_of(kind), kind.name())?;
        }
        write!(f, "; released by driver: {}; failures: {}", self.released_by_driver, self.failure_count())?;
        for x in &self.failures {
            write!(f, "\n  platform {} device {}: {} ", x.platform, x.device, x.step.name())?;
            if x.address != 0 {
                write!(f, "{:#x}", x.address)?;
            } else {
                write!(f, "{:?}", x.handle)?;
            }
            write!(f, " failed: {}: {}", x.code, x.detail())?;
        }
        if self.overflow > 0 {
            write!(f, "\n  ... and {} more", self.overflow)?;
        }
        Ok(())
    }
}
