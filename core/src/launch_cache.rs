//! A thread's last launch target: what a launch found when it last looked up a queue and a
//! kernel and checked dimensions, so that the next launch with the same queue, kernel and
//! dimensions skips the lookups and the limit check. Builds with `std` on targets with 64-bit
//! atomics, outside loom (the cache is the owning thread's alone; nothing in it is shared).
//!
//! Where it lives: in the calling thread's slot of the gate (`lifecycle::Slot`), on the cache
//! lines that the thread already writes to enter a call, so a hit touches no line the call
//! would not touch anyway. Only the thread that owns the slot reads or writes it (`slots::mine`).
//!
//! Why a hit is valid: an entry records the gate's epoch of its fill. The epoch changes in every
//! exclusive section (creation, destruction) and at every init, before the tables change and
//! while no call is in flight; it is read inside a shared call, which no exclusive section
//! overlaps, with the same ordering that makes the tables themselves visible to the call. So an
//! entry whose epoch equals the current one was filled since the last change of the tables: its
//! queue and kernel are still live, on the device it names, and the dimensions it holds were
//! checked against that device's limits. Entries hold values only (handles, the backend's
//! native values, a device's slot index), no address inside the runtime, which may move between
//! its Ready periods.
//!
//! A signal handler running on the thread may launch too; the sequence number keeps a fill or a
//! read that it interrupts from mixing two entries: odd while a fill is under way (a nested
//! fill or read then does nothing), and a read whose number changed while it read is a miss.
//! Depends on `backend::LaunchDims` only; `lifecycle` holds it and the runtime's launch paths
//! use it.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed, compiler_fence};

use crate::backend::LaunchDims;

/// The target of the last launch made through one thread slot.
pub(crate) struct LaunchCache {
    /// Even when the entry is whole; odd while the owner fills it.
    seq: AtomicU32,
    /// The device's slot in the device table.
    device_slot: AtomicU32,
    /// The gate's epoch at the fill; 0: empty (the gate's epoch is at least 1 once `Ready`).
    epoch: AtomicU64,
    /// The queue's handle (the key, with `kernel` and `dims`).
    queue: AtomicU64,
    /// The kernel's handle.
    kernel: AtomicU64,
    /// The dimensions, packed (`pack`).
    dims: [AtomicU64; 4],
    /// The device's handle.
    device: AtomicU64,
    /// The backend's queue.
    queue_raw: AtomicU64,
    /// The backend's kernel.
    kernel_raw: AtomicU64,
    /// The kernel's `args_end` at the fill (`ARGS_END_UNKNOWN` before its first packed launch).
    args_end: AtomicU32,
}

/// What a hit gives: the launch target as the full lookup would have found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LaunchTarget {
    /// The device's slot in the device table.
    pub device_slot: u32,
    /// The device's handle.
    pub device: u64,
    /// The backend's queue.
    pub queue_raw: u64,
    /// The backend's kernel.
    pub kernel_raw: u64,
    /// Where the kernel's last parameter ends, or `ARGS_END_UNKNOWN`.
    pub args_end: u32,
}

/// The dimensions as four words (a hit compares them all in one branch).
#[inline(always)]
fn pack(d: &LaunchDims) -> [u64; 4] {
    let two = |a: u32, b: u32| u64::from(a) | (u64::from(b) << 32);
    [two(d.grid[0], d.grid[1]), two(d.grid[2], d.block[0]), two(d.block[1], d.block[2]), u64::from(d.shared_mem_bytes)]
}

impl LaunchCache {
    /// An empty entry.
    pub(crate) const fn new() -> Self {
        Self {
            seq: AtomicU32::new(0),
            device_slot: AtomicU32::new(0),
            epoch: AtomicU64::new(0),
            queue: AtomicU64::new(0),
            kernel: AtomicU64::new(0),
            dims: [const { AtomicU64::new(0) }; 4],
            device: AtomicU64::new(0),
            queue_raw: AtomicU64::new(0),
            kernel_raw: AtomicU64::new(0),
            args_end: AtomicU32::new(0),
        }
    }

    /// The target recorded for `queue`, `kernel` and `dims` at `epoch`, if that is the entry.
    /// One branch for the key on the way to a hit.
    #[inline(always)]
    pub(crate) fn get(&self, epoch: u64, queue: u64, kernel: u64, dims: &LaunchDims) -> Option<LaunchTarget> {
        let seq = self.seq.load(Relaxed);
        compiler_fence(core::sync::atomic::Ordering::Acquire);
        let d = pack(dims);
        let key = (self.epoch.load(Relaxed) ^ epoch)
            | (self.queue.load(Relaxed) ^ queue)
            | (self.kernel.load(Relaxed) ^ kernel)
            | (self.dims[0].load(Relaxed) ^ d[0])
            | (self.dims[1].load(Relaxed) ^ d[1])
            | (self.dims[2].load(Relaxed) ^ d[2])
            | (self.dims[3].load(Relaxed) ^ d[3])
            | u64::from(seq & 1);
        let target = LaunchTarget {
            device_slot: self.device_slot.load(Relaxed),
            device: self.device.load(Relaxed),
            queue_raw: self.queue_raw.load(Relaxed),
            kernel_raw: self.kernel_raw.load(Relaxed),
            args_end: self.args_end.load(Relaxed),
        };
        compiler_fence(core::sync::atomic::Ordering::Acquire);
        // A nested fill (a signal handler) between the two reads changed the number.
        if (key != 0) | (self.seq.load(Relaxed) != seq) {
            return None;
        }
        Some(target)
    }

    /// Records `target` for `queue`, `kernel` and `dims` at `epoch` (unless a fill that this
    /// one interrupts is under way).
    #[inline]
    pub(crate) fn fill(&self, epoch: u64, queue: u64, kernel: u64, dims: &LaunchDims, target: &LaunchTarget) {
        let seq = self.seq.load(Relaxed);
        if seq & 1 != 0 {
            return;
        }
        self.seq.store(seq.wrapping_add(1), Relaxed);
        compiler_fence(core::sync::atomic::Ordering::Release);
        let d = pack(dims);
        self.epoch.store(epoch, Relaxed);
        self.queue.store(queue, Relaxed);
        self.kernel.store(kernel, Relaxed);
        for (slot, word) in self.dims.iter().zip(d) {
            slot.store(word, Relaxed);
        }
        self.device_slot.store(target.device_slot, Relaxed);
        self.device.store(target.device, Relaxed);
        self.queue_raw.store(target.queue_raw, Relaxed);
        self.kernel_raw.store(target.kernel_raw, Relaxed);
        self.args_end.store(target.args_end, Relaxed);
        compiler_fence(core::sync::atomic::Ordering::Release);
        self.seq.store(seq.wrapping_add(2), Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(grid: [u32; 3], block: [u32; 3], shm: u32) -> LaunchDims {
        LaunchDims { grid, block, shared_mem_bytes: shm }
    }

    const T: LaunchTarget = LaunchTarget { device_slot: 2, device: 7, queue_raw: 11, kernel_raw: 13, args_end: 16 };

    #[test]
    fn a_hit_needs_the_same_epoch_queue_kernel_and_every_dimension() {
        let c = LaunchCache::new();
        let d = dims([4, 5, 6], [7, 8, 9], 10);
        assert_eq!(c.get(1, 3, 5, &d), None, "empty");
        c.fill(1, 3, 5, &d, &T);
        assert_eq!(c.get(1, 3, 5, &d), Some(T));
        assert_eq!(c.get(2, 3, 5, &d), None, "another epoch");
        assert_eq!(c.get(1, 4, 5, &d), None, "another queue");
        assert_eq!(c.get(1, 3, 6, &d), None, "another kernel");
        for i in 0..3 {
            let mut g = d;
            g.grid[i] += 1;
            assert_eq!(c.get(1, 3, 5, &g), None, "grid {i}");
            let mut b = d;
            b.block[i] += 1;
            assert_eq!(c.get(1, 3, 5, &b), None, "block {i}");
        }
        assert_eq!(c.get(1, 3, 5, &dims([4, 5, 6], [7, 8, 9], 11)), None, "shared memory");
        // Dimensions that would pack alike if the words overlapped.
        assert_eq!(c.get(1, 3, 5, &dims([5, 4, 6], [7, 8, 9], 10)), None);
        let other = LaunchTarget { device_slot: 1, ..T };
        c.fill(2, 3, 5, &d, &other);
        assert_eq!(c.get(2, 3, 5, &d), Some(other));
        assert_eq!(c.get(1, 3, 5, &d), None, "the old epoch is gone");
    }

    #[test]
    fn an_entry_being_filled_is_never_read_and_not_filled_again() {
        let c = LaunchCache::new();
        let d = dims([1, 1, 1], [1, 1, 1], 0);
        c.fill(1, 3, 5, &d, &T);
        // As a signal handler sees it in the middle of its thread's fill.
        c.seq.fetch_add(1, Relaxed);
        assert_eq!(c.get(1, 3, 5, &d), None);
        c.fill(1, 3, 5, &d, &LaunchTarget { device_slot: 9, ..T });
        assert_eq!(c.device_slot.load(Relaxed), 2, "a nested fill leaves the entry alone");
        c.seq.fetch_add(1, Relaxed);
        assert_eq!(c.get(1, 3, 5, &d), Some(T));
    }
}
