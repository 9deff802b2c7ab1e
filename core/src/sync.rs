//! The synchronisation primitives the core uses, in one place, so that the lifecycle can be
//! model-checked: under `cfg(loom)` these become loom's types (as tokio's `loom` module does).
//!
//! Waiting uses a relax strategy: spin on bare metal, yield to the scheduler with feature `std`.
//! Depends on nothing in the core; `lifecycle`, `slots` and the runtime depend on it.

#[cfg(all(not(loom), feature = "std"))]
pub(crate) use core::sync::atomic::fence;
#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicUsize, Ordering, fence};

#[cfg(not(loom))]
use spin::relax::RelaxStrategy;

/// spin's relax strategy for the core's own spin locks: each failed attempt takes the core's
/// wait step (`relax`: a spin without std, a yield to the OS with std, or the host's hook), so
/// a thread waiting for a lock lets the holder run instead of spinning it out of its time slice
/// (a host-queue worker waiting for the host device's lock, many threads tracing at once).
#[derive(Debug)]
pub struct CoreRelax;

impl spin::relax::RelaxStrategy for CoreRelax {
    #[inline]
    fn relax() {
        #[cfg(not(loom))]
        relax();
        // Outside a loom model's threads these locks are plain spin locks (loom sees its own).
        #[cfg(loom)]
        core::hint::spin_loop();
    }
}

/// spin's mutex with the core's wait step (`CoreRelax`): the lock of every table and device
/// state that loom does not model.
pub(crate) type SpinLock<T> = spin::mutex::Mutex<T, CoreRelax>;
/// What `SpinLock::lock` returns.
pub(crate) type SpinGuard<'a, T> = spin::mutex::MutexGuard<'a, T, CoreRelax>;

/// A lock around data: spin's mutex (with the core's wait step), or loom's under `cfg(loom)` so
/// that the models see who waits for whom (`DeferredHost`'s locks, `core/tests/loom_deferred.rs`; the queue-ordered
/// allocations' table, `core/tests/loom_ordered.rs`).
#[cfg(not(loom))]
pub(crate) type Mutex<T> = SpinLock<T>;
/// What `Mutex::lock` returns.
#[cfg(not(loom))]
pub(crate) type MutexGuard<'a, T> = SpinGuard<'a, T>;
/// What `Mutex::lock` returns.
#[cfg(loom)]
pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

/// A lock around data: loom's mutex behind spin's `lock` (a guard, no poisoning).
#[cfg(loom)]
pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

#[cfg(loom)]
impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(loom::sync::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.0.get_mut().unwrap_or_else(|p| p.into_inner())
    }
}

/// Defines a `const fn` in real builds and a plain `fn` under `cfg(loom)`, whose atomics and
/// locks cannot be made in a `const fn` (the tables' constructors).
macro_rules! const_fn_unless_loom {
    ($(#[$attr:meta])* $vis:vis fn $name:ident() -> $ret:ty $body:block) => {
        $(#[$attr])*
        #[cfg(not(loom))]
        $vis const fn $name() -> $ret $body
        $(#[$attr])*
        #[cfg(loom)]
        $vis fn $name() -> $ret $body
    };
}
pub(crate) use const_fn_unless_loom;

/// The relax strategy of every wait in the core.
#[cfg(all(not(loom), feature = "std"))]
pub type Relax = spin::relax::Yield;
/// The relax strategy of every wait in the core.
#[cfg(all(not(loom), not(feature = "std")))]
pub type Relax = spin::relax::Spin;

/// The host's wait step (a `fn()` as an address; 0: the default `Relax`).
#[cfg(not(loom))]
static WAIT_HOOK: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// Sets the step every wait of the lifecycle takes (a thread waiting for an init or teardown in
/// another thread, a create/destroy call waiting for calls in flight): e.g. an RTOS yield or a
/// sleep, so that on a single-core priority scheduler a waiting thread lets the thread it waits
/// for run. `None` restores the default (spin without std, yield to the OS with feature `std`).
/// Process-wide; may be called at any time.
#[cfg(not(loom))]
pub fn set_wait_strategy(step: Option<fn()>) {
    WAIT_HOOK.store(step.map_or(0, |f| f as usize), core::sync::atomic::Ordering::Release);
}

/// One step of waiting for another thread.
#[inline]
pub(crate) fn relax() {
    #[cfg(not(loom))]
    match WAIT_HOOK.load(core::sync::atomic::Ordering::Acquire) {
        0 => Relax::relax(),
        // SAFETY: `set_wait_strategy` stores only addresses of `fn()` (or 0).
        hook => unsafe { core::mem::transmute::<usize, fn()>(hook)() },
    }
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// A point where a loom model may run another thread (a no-op in real builds, whose threads
/// may be preempted anywhere): for a window between two steps that take no lock, which loom
/// would otherwise run as one (`DeferredHost` between taking a piece of work and running it).
#[inline(always)]
pub(crate) fn preemption_point() {
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Marks the path that calls it as rarely taken, so that the compiler lays the other side out
/// as the straight path (`core::hint::cold_path` from Rust 1.95, written for the MSRV: a call
/// to an empty `#[cold]` function has the same effect and compiles to nothing). Exported
/// (hidden) for ordo's other crates' launch paths.
#[cold]
#[inline(always)]
pub fn cold_path() {}
