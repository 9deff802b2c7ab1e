//! The cache of queue-ordered memory: a block that `mem_free_on` frees on a queue is kept for
//! that queue instead of going back to the driver, and the queue's next `mem_alloc_on` of the
//! same size takes it without a driver call. Safe without an event: the queue runs the work
//! that used the block before any work submitted after the allocation that reuses it. A block is
//! never handed to another queue: it goes back to the driver (in its queue's order) when its
//! queue is trimmed (`queue_trim`) or destroyed, when an allocation of the device finds the
//! driver out of memory (then the allocation is tried once more), and at the teardown (with the
//! device's memory). A cached block is no allocation: its address and handle are stale, as
//! after any free.
//!
//! Bounds: at most `MAX_CACHED_BLOCKS` blocks per runtime (`ORDO_MAX_CACHED_BLOCKS` at build
//! time, 64 by default), `MAX_CACHED_PER_QUEUE` per queue,
//! and the runtime's byte limit (`Runtime::set_cache_bytes`, `ORDO_CACHE_BYTES` with std; 0
//! turns the cache off, and memory then goes back to the driver at every free as before).
//! Fixed capacity, no heap; behind its own lock (loom's in the models), taken by shared calls.
//! Depends on `handle`, `sync` and `capacity`.

pub use crate::capacity::MAX_CACHED_BLOCKS;
use crate::capacity::MAX_DEVICES;
use crate::sync::Mutex;
use crate::sync::{AtomicUsize, Ordering::Relaxed};

/// Blocks the cache keeps for one queue.
pub const MAX_CACHED_PER_QUEUE: usize = 16;
/// The byte limit with std when neither `Runtime::set_cache_bytes` nor `ORDO_CACHE_BYTES` says
/// otherwise: 256 MiB. Without std the cache is off unless `set_cache_bytes` turns it on (a
/// firmware host's arena has no memory to spare).
pub const DEFAULT_CACHE_BYTES: usize = if cfg!(feature = "std") { 256 << 20 } else { 0 };

/// A cached block: queue-ordered memory freed on a queue, kept for it. The queue is named by
/// its device's slot and its backend value (live while the block is cached: a queue's blocks
/// leave before it is destroyed), so a queue reissued under a new handle (the same backend
/// queue, MLIR's stream pool) keeps them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Block {
    pub device: u32,
    pub raw: u64,
    pub base: u64,
    pub size: usize,
}

/// What the cache has done for one device since the runtime's init.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Bytes the cache holds for the device now.
    pub bytes: u64,
    /// Blocks it holds for the device now.
    pub blocks: u32,
    /// Queue-ordered allocations it served without a driver call.
    pub hits: u64,
    /// Queue-ordered allocations it could not serve (the driver allocated), while it was on.
    pub misses: u64,
}

struct Inner {
    blocks: heapless::Vec<Block, MAX_CACHED_BLOCKS>,
    bytes: usize,
    stats: [CacheStats; MAX_DEVICES],
}

/// The runtime's cache of queue-ordered blocks (`Tables::cache`).
pub(crate) struct BlockCache {
    inner: Mutex<Inner>,
    /// The byte limit of this epoch (0: off), written only at init (exclusive access), so
    /// read without the lock: with the cache off, the calls take no lock of it.
    limit: AtomicUsize,
}

/// Blocks taken out of the cache to be given back to the driver.
pub(crate) type Taken = heapless::Vec<Block, MAX_CACHED_BLOCKS>;

impl BlockCache {
    crate::sync::const_fn_unless_loom! {
        pub(crate) fn new() -> Self {
            Self {
                inner: Mutex::new(Inner {
                    blocks: heapless::Vec::new(),
                    bytes: 0,
                    stats: [CacheStats { bytes: 0, blocks: 0, hits: 0, misses: 0 }; MAX_DEVICES],
                }),
                limit: AtomicUsize::new(0),
            }
        }
    }

    /// At init: the byte limit for this epoch, statistics from zero (the cache is empty: the
    /// last teardown gave every block back, or forgot it).
    pub(crate) fn start(&mut self, limit: usize) {
        *self = Self::new();
        self.limit.store(limit, Relaxed);
    }

    /// Whether the cache is on this epoch (a byte limit above 0).
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.limit.load(Relaxed) != 0
    }

    /// Takes the most recently cached block of `size` bytes kept for the queue `raw` of device
    /// slot `device` (a hit of the device), or counts a miss. `None` at once while the cache is
    /// off.
    #[inline]
    pub(crate) fn take(&self, device: u32, raw: u64, size: usize) -> Option<u64> {
        if self.limit.load(Relaxed) == 0 {
            return None;
        }
        let mut inner = self.inner.lock();
        let found = inner.blocks.iter().rposition(|b| b.device == device && b.raw == raw && b.size == size);
        let stats = &mut inner.stats[device as usize];
        let Some(i) = found else {
            stats.misses += 1;
            return None;
        };
        stats.hits += 1;
        stats.bytes -= size as u64;
        stats.blocks -= 1;
        inner.bytes -= size;
        Some(inner.blocks.remove(i).base)
    }

    /// Keeps `block` for its queue: `false` (the caller gives it to the driver) while the cache
    /// is off, and when it would pass the byte limit or a block count.
    #[inline]
    pub(crate) fn put(&self, block: Block) -> bool {
        let limit = self.limit.load(Relaxed);
        if limit == 0 {
            return false;
        }
        let mut inner = self.inner.lock();
        let fits = block.size <= limit.saturating_sub(inner.bytes)
            && !inner.blocks.is_full()
            && inner.blocks.iter().filter(|b| b.device == block.device && b.raw == block.raw).count()
                < MAX_CACHED_PER_QUEUE;
        if !fits {
            return false;
        }
        inner.bytes += block.size;
        let stats = &mut inner.stats[block.device as usize];
        stats.bytes += block.size as u64;
        stats.blocks += 1;
        // Cannot fail: checked above.
        let _ = inner.blocks.push(block);
        true
    }

    /// Takes every block `take` selects (for the driver): a queue's (trim, destroy) or a
    /// device's (out of memory, teardown).
    pub(crate) fn take_where(&self, mut take: impl FnMut(&Block) -> bool) -> Taken {
        let mut inner = self.inner.lock();
        let mut out = Taken::new();
        let mut i = 0;
        while i < inner.blocks.len() {
            if take(&inner.blocks[i]) {
                let b = inner.blocks.remove(i);
                inner.bytes -= b.size;
                let stats = &mut inner.stats[b.device as usize];
                stats.bytes -= b.size as u64;
                stats.blocks -= 1;
                // Cannot fail: as many as the cache held.
                let _ = out.push(b);
            } else {
                i += 1;
            }
        }
        out
    }

    /// The device's statistics (`device`: its slot).
    pub(crate) fn stats(&self, device: u32) -> CacheStats {
        self.inner.lock().stats[device as usize]
    }

    /// Forgets every block without giving it back (a forked child, a teardown that panicked:
    /// the driver's objects are forgotten with them). The lock is made anew: in a forked child
    /// another thread of the parent may have held it at the fork (the child alone runs now).
    pub(crate) fn forget_all(&mut self) {
        *self = Self::new();
    }
}
