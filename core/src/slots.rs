//! Per-thread counters of calls in flight, and the asymmetric barrier that orders them (builds
//! with `std`, and loom).
//!
//! A thread claims one of `SLOTS` indices on its first shared call and keeps it until it exits.
//! In every gate the counter at that index is written by that thread alone, so entering and
//! leaving a shared call is a plain load and store of a cache line no other thread writes: no
//! read-modify-write, no line bouncing between cores. Threads beyond `SLOTS`, and builds without
//! `std`, use the gate's hashed shards (a read-modify-write each way), as before.
//!
//! The entry is "store my count, then load the word"; a writer (an exclusive call, the final
//! shutdown) does "change the word, then load every count". Each side must see the other's write
//! (the Dekker handshake of `lifecycle.rs`). The reader's side is made cheap and the writer's
//! expensive: the reader puts only a compiler fence between its store and its load, and the
//! writer calls `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` (Linux 4.14+) between its change
//! and its loads. That system call runs a full memory barrier on every CPU that is running a
//! thread of this process, and a thread that is not running passed through a full barrier when it
//! was switched out. So for each reader either its store was globally visible before the writer's
//! barrier returned (the writer sees the count and waits), or its load runs after the barrier,
//! when the writer's change is visible (the reader backs off). This is how liburcu, folly's
//! `asymmetricHeavyBarrier` and the Linux kernel's `percpu-rwsem` order their fast paths.
//!
//! Where `membarrier` is missing (other systems, old kernels, seccomp filters, Miri), or under
//! loom, both sides use a `SeqCst` fence instead: the fence form of the same handshake, which
//! loom checks exactly (`core/loom.sh`). The mode is decided once per process, before any thread
//! relies on it, and never changes.
//! Depends on `sync`; `lifecycle` depends on it.

use crate::sync::{Ordering, fence};

/// Per-thread counters per gate.
#[cfg(not(loom))]
pub(crate) const SLOTS: usize = 64;
/// Per-thread counters per gate (loom models run at most four threads).
#[cfg(loom)]
pub(crate) const SLOTS: usize = 4;

#[cfg(not(loom))]
mod claim {
    use core::cell::Cell;
    use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::{Mine, SLOTS};

    /// The thread has not asked yet.
    const UNCLAIMED: u32 = u32::MAX;
    /// The thread has no slot (all taken, or it is exiting).
    const NONE: u32 = u32::MAX - 1;
    /// Set beside a claimed index when readers may use the light side (`asymmetric()`, decided
    /// once per process before the first claim returns): one thread-local read gives both.
    const ASYMMETRIC: u32 = 1 << 16;
    /// The index bits of a claimed value.
    const INDEX: u32 = ASYMMETRIC - 1;

    static CLAIMED: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];

    /// Per slot, the thread pointer of the thread that claimed it as its home slot (`home`),
    /// with bit 0 set when readers may use the light side; 0 otherwise. A thread's thread
    /// pointer is unique among live threads, so a thread that finds its own here owns the slot:
    /// the fast path reads this one word instead of a thread-local, which in a shared library is
    /// a call into the dynamic loader (`__tls_get_addr`) and the lines it reads.
    static HOMES: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];

    std::thread_local! {
        /// This thread's slot, `UNCLAIMED` or `NONE` (no destructor, so it is readable while the
        /// thread's other thread-locals are destroyed). A claimed value is the index, with
        /// `ASYMMETRIC` when the light side may be used.
        static MINE: Cell<u32> = const { Cell::new(UNCLAIMED) };
        /// Gives the slot back when the thread exits.
        static RELEASER: Releaser = const { Releaser };
    }

    struct Releaser;

    impl Drop for Releaser {
        fn drop(&mut self) {
            // No call is in flight on an exiting thread's slot (calls are scoped), so every
            // gate's counter at this index is 0; the release store hands that on to the next owner.
            let index = MINE.with(|m| m.replace(NONE)) & INDEX;
            if let Some(flag) = CLAIMED.get(index as usize) {
                if let Some(tp) = thread_pointer() {
                    let home = &HOMES[index as usize];
                    if home.load(Ordering::Relaxed) & !1 == tp {
                        home.store(0, Ordering::Relaxed);
                    }
                }
                flag.store(false, Ordering::Release);
            }
        }
    }

    /// The calling thread's thread pointer (the address of its thread control block, unique
    /// among live threads), where the architecture has it in a register.
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
    #[inline(always)]
    fn thread_pointer() -> Option<usize> {
        let tp: usize;
        // SAFETY: reads the first word of the thread control block, which the x86-64 TLS ABI
        // (glibc and musl alike) keeps pointing at itself; no memory is written.
        unsafe {
            core::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags))
        };
        Some(tp)
    }

    /// The calling thread's thread pointer (`TPIDR_EL0`, unique among live threads).
    #[cfg(all(target_os = "linux", target_arch = "aarch64", not(miri)))]
    #[inline(always)]
    fn thread_pointer() -> Option<usize> {
        let tp: usize;
        // SAFETY: reads a system register that user code may read; no memory is touched.
        unsafe { core::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags)) };
        Some(tp)
    }

    /// Elsewhere (and under Miri): no thread pointer; every thread uses its thread-local.
    #[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"), not(miri))))]
    #[inline(always)]
    fn thread_pointer() -> Option<usize> {
        None
    }

    /// The slot a thread tries first: a hash of its thread pointer.
    #[inline(always)]
    fn home(tp: usize) -> usize {
        ((tp as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize % SLOTS
    }

    /// The calling thread's slot, claiming one on first use: its home slot when the home
    /// records it, else the one its thread-local names.
    #[inline(always)]
    pub(crate) fn mine() -> Option<Mine> {
        if let Some(tp) = thread_pointer() {
            let index = home(tp);
            let owner = HOMES[index].load(Ordering::Relaxed);
            if owner & !1 == tp {
                return Some(Mine { index, asymmetric: owner & 1 != 0 });
            }
        }
        crate::sync::cold_path();
        mine_local()
    }

    /// `mine` through the thread-local.
    #[inline]
    fn mine_local() -> Option<Mine> {
        let value = MINE.with(Cell::get);
        if ((value & INDEX) as usize) < SLOTS {
            return Some(Mine { index: (value & INDEX) as usize, asymmetric: value & ASYMMETRIC != 0 });
        }
        if value == UNCLAIMED { claim() } else { None }
    }

    #[cold]
    fn claim() -> Option<Mine> {
        // Register the releaser first: a thread whose thread-locals are being destroyed gets none.
        if RELEASER.try_with(|_| ()).is_err() {
            MINE.with(|m| m.set(NONE));
            return None;
        }
        let take = |index: usize| {
            let flag = &CLAIMED[index];
            !flag.load(Ordering::Relaxed)
                && flag.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
        };
        let tp = thread_pointer();
        let first = tp.map(home);
        let Some(index) = first.into_iter().chain(0..SLOTS).find(|&i| take(i)) else {
            MINE.with(|m| m.set(NONE));
            return None;
        };
        let asymmetric = super::asymmetric();
        MINE.with(|m| m.set(index as u32 | if asymmetric { ASYMMETRIC } else { 0 }));
        if let Some(tp) = tp.filter(|&tp| first == Some(index) && tp & 1 == 0) {
            // Only this thread writes its home record while it holds the slot.
            HOMES[index].store(tp | usize::from(asymmetric), Ordering::Relaxed);
        }
        Some(Mine { index, asymmetric })
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_thread_finds_its_slot_through_its_home_or_its_thread_local() {
            // Each thread gets one slot and keeps it; threads alive together get different ones,
            // and a thread whose home slot is taken still gets one (through its thread-local).
            let slots: std::vec::Vec<usize> = (0..8)
                .map(|_| std::thread::spawn(|| (0..3).map(|_| mine().unwrap().index).collect::<std::vec::Vec<_>>()))
                .collect::<std::vec::Vec<_>>()
                .into_iter()
                .map(|t| {
                    let seen = t.join().unwrap();
                    assert!(seen.windows(2).all(|w| w[0] == w[1]), "a thread keeps its slot: {seen:?}");
                    seen[0]
                })
                .collect();
            assert!(slots.iter().all(|&s| s < SLOTS));
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
            let together: std::vec::Vec<usize> = (0..4)
                .map(|_| {
                    let b = barrier.clone();
                    std::thread::spawn(move || {
                        let s = mine().unwrap().index;
                        b.wait();
                        assert_eq!(mine().unwrap().index, s);
                        s
                    })
                })
                .collect::<std::vec::Vec<_>>()
                .into_iter()
                .map(|t| t.join().unwrap())
                .collect();
            let mut sorted = together.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), together.len(), "live threads share no slot: {together:?}");
            // Where the architecture has a thread pointer, a thread that claimed its home slot
            // is recorded there (and the record is gone once it exits).
            if let Some(tp) = thread_pointer() {
                let m = mine().unwrap();
                let recorded = HOMES[home(tp)].load(Ordering::Relaxed) & !1 == tp;
                assert_eq!(recorded, m.index == home(tp));
            }
        }
    }
}

#[cfg(loom)]
mod claim {
    use core::cell::Cell;

    use loom::sync::atomic::{AtomicUsize, Ordering};

    loom::lazy_static! {
        static ref NEXT: AtomicUsize = AtomicUsize::new(0);
    }
    loom::thread_local! {
        static MINE: Cell<Option<usize>> = Cell::new(None);
    }

    /// Which threads get a slot, chosen when the models are built (`core/loom.sh` runs them
    /// under each): `ORDO_LOOM_COUNTERS=slots` (default) all, `hashed` none, `mixed` every
    /// other thread in the order they first enter.
    const COUNTERS: &str = match option_env!("ORDO_LOOM_COUNTERS") {
        Some(mode) => mode,
        None => "slots",
    };

    /// The calling thread's slot, by `COUNTERS`.
    pub(crate) fn mine() -> Option<super::Mine> {
        MINE.with(|m| {
            let number = m.get().unwrap_or_else(|| NEXT.fetch_add(1, Ordering::Relaxed));
            m.set(Some(number));
            let slot = match COUNTERS.as_bytes() {
                b"hashed" => return None,
                b"mixed" if number % 2 == 1 => return None,
                b"mixed" => number / 2,
                _ => number,
            };
            (slot < super::SLOTS).then_some(super::Mine { index: slot, asymmetric: super::asymmetric() })
        })
    }
}

pub(crate) use claim::mine;

/// The calling thread's slot, and whether readers may use the light side (`asymmetric()`,
/// kept with the slot so that a shared call reads one thread-local and no other static).
#[derive(Clone, Copy)]
pub(crate) struct Mine {
    pub(crate) index: usize,
    pub(crate) asymmetric: bool,
}

/// `membarrier(2)` on Linux (on architectures whose system-call number ordo knows).
#[cfg(all(not(loom), not(miri), target_os = "linux"))]
mod membarrier {
    use core::ffi::c_long;
    use core::sync::atomic::{AtomicU8, Ordering};

    const SYS_MEMBARRIER: Option<c_long> = if cfg!(target_arch = "x86_64") {
        Some(324)
    } else if cfg!(any(target_arch = "aarch64", target_arch = "riscv64")) {
        Some(283)
    } else if cfg!(target_arch = "x86") {
        Some(375)
    } else if cfg!(target_arch = "arm") {
        Some(389)
    } else {
        None
    };

    const CMD_QUERY: c_long = 0;
    const CMD_PRIVATE_EXPEDITED: c_long = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: c_long = 1 << 4;

    unsafe extern "C" {
        fn syscall(number: c_long, ...) -> c_long;
    }

    /// 0: not decided yet; 3: being decided; 1: registered; 2: not available.
    static MODE: AtomicU8 = AtomicU8::new(0);

    /// Whether the process is registered for expedited private barriers (decided, and
    /// registered, once; every thread sees the same answer).
    #[inline(always)]
    pub(super) fn available() -> bool {
        match MODE.load(Ordering::Acquire) {
            1 => true,
            2 => false,
            _ => decide(),
        }
    }

    #[cold]
    fn decide() -> bool {
        if MODE.compare_exchange(0, 3, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            let yes = SYS_MEMBARRIER.is_some_and(|number| {
                // SAFETY: membarrier takes three integer arguments and touches no memory of ours.
                unsafe {
                    let commands = syscall(number, CMD_QUERY, 0 as c_long, 0 as c_long);
                    let wanted = CMD_PRIVATE_EXPEDITED | CMD_REGISTER_PRIVATE_EXPEDITED;
                    commands >= 0
                        && commands & wanted == wanted
                        && syscall(number, CMD_REGISTER_PRIVATE_EXPEDITED, 0 as c_long, 0 as c_long) == 0
                }
            });
            MODE.store(if yes { 1 } else { 2 }, Ordering::Release);
            return yes;
        }
        loop {
            match MODE.load(Ordering::Acquire) {
                1 => return true,
                2 => return false,
                _ => core::hint::spin_loop(),
            }
        }
    }

    /// A full barrier on every CPU running a thread of this process. Only called once
    /// `available()` said yes; after registration the kernel documents no failure for it. Should
    /// one happen anyway, readers that relied on it could race a writer: abort rather than go on.
    pub(super) fn run() {
        let Some(number) = SYS_MEMBARRIER else { return };
        // SAFETY: as in `decide`.
        let status = unsafe { syscall(number, CMD_PRIVATE_EXPEDITED, 0 as c_long, 0 as c_long) };
        if status != 0 {
            std::eprintln!("ordo: membarrier failed after registration; aborting");
            std::process::abort();
        }
    }
}

#[cfg(not(all(not(loom), not(miri), target_os = "linux")))]
mod membarrier {
    #[inline]
    pub(super) fn available() -> bool {
        false
    }
    pub(super) fn run() {}
}

/// Whether readers may use the light side (`light(true)`): decided once per process.
#[inline]
pub(crate) fn asymmetric() -> bool {
    membarrier::available()
}

/// The reader's side, between its store and its load: a compiler fence when `asymmetric`, else
/// a `SeqCst` fence.
#[inline(always)]
pub(crate) fn light(asymmetric: bool) {
    if asymmetric {
        core::sync::atomic::compiler_fence(Ordering::SeqCst);
    } else {
        // Laid out off the straight path (where membarrier is missing it is taken every time,
        // and a fence costs far more than the jump).
        crate::sync::cold_path();
        fence(Ordering::SeqCst);
    }
}

/// The writer's side, between its change of the word and its first load of the counters.
pub(crate) fn heavy() {
    if membarrier::available() {
        membarrier::run();
    }
    fence(Ordering::SeqCst);
}
