//! The synchronisation primitives the core uses, in one place, so that the lifecycle can be
//! model-checked: under `cfg(loom)` these become loom's types (as tokio's `loom` module does).
//!
//! Waiting uses a relax strategy: spin on bare metal, yield to the scheduler with feature `std`.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU32, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, Ordering};

#[cfg(not(loom))]
use spin::relax::RelaxStrategy;

/// The relax strategy of every wait in the core.
#[cfg(all(not(loom), feature = "std"))]
pub type Relax = spin::relax::Yield;
/// The relax strategy of every wait in the core.
#[cfg(all(not(loom), not(feature = "std")))]
pub type Relax = spin::relax::Spin;

/// One step of waiting for another thread.
#[inline]
pub(crate) fn relax() {
    #[cfg(not(loom))]
    Relax::relax();
    #[cfg(loom)]
    loom::thread::yield_now();
}
