//! Queue-ordered memory of a device with a pool (`Backend::ordered_concurrent`), in the core's own
//! tests so that Miri checks them: threads allocating and freeing under shared access while
//! others copy into that memory, look it up, free it twice and make exclusive calls. The
//! backend is a pool that touches no memory (device addresses from a counter), as CUDA's.

extern crate std;

use core::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::vec::Vec;

use crate::backend::*;
use crate::error::{BackendError, ErrorCode};
use crate::handle::{Device, DevicePtr, Queue};
use crate::{MAX_CACHED_PER_QUEUE, Runtime, RuntimeState, Shutdown};

/// Device memory from a counter (never reused, never touched); counts what is live.
struct Pool {
    next: AtomicU64,
    live: AtomicU64,
    /// Allocations past this many live ones are refused (`OutOfResources`).
    limit: AtomicU64,
}

impl Pool {
    const fn new() -> Self {
        Self { next: AtomicU64::new(1 << 32), live: AtomicU64::new(0), limit: AtomicU64::new(u64::MAX) }
    }

    fn take(&self, size: usize) -> u64 {
        self.live.fetch_add(1, Ordering::Relaxed);
        self.next.fetch_add((size as u64).next_multiple_of(256), Ordering::Relaxed)
    }

    fn give(&self) -> BackendResult<()> {
        self.live.fetch_sub(1, Ordering::Relaxed);
        Ok(())
    }
}

impl Backend for Pool {
    fn kind(&self) -> BackendKind {
        BackendKind::Scripted
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::empty()
    }
    fn init(&self) -> BackendResult<u32> {
        Ok(1)
    }
    unsafe fn deinit(&self) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn forget_after_fork(&self) {}
    unsafe fn device_release(&self, _: u32) -> BackendResult<()> {
        Ok(())
    }
    fn device_info(&self, _: u32, _: DeviceInfo) -> BackendResult<InfoValue> {
        Ok(InfoValue::Int(0))
    }
    fn launch_limits(&self, _: u32) -> LaunchLimits {
        LaunchLimits::CUDA
    }
    fn mem_alloc(&self, _: u32, _: MemKind, size: usize) -> BackendResult<u64> {
        Ok(self.take(size))
    }
    unsafe fn mem_free(&self, _: u32, _: MemKind, _: u64, _: usize) -> BackendResult<()> {
        self.give()
    }
    unsafe fn mem_alloc_on(&self, _: u32, _: u64, size: usize) -> BackendResult<u64> {
        if self.live.load(Ordering::Relaxed) >= self.limit.load(Ordering::Relaxed) {
            return Err(BackendError::new(ErrorCode::OutOfResources, 2, "pool exhausted"));
        }
        Ok(self.take(size))
    }
    unsafe fn mem_free_on(&self, _: u32, _: u64, _: u64, _: usize) -> BackendResult<()> {
        self.give()
    }
    fn ordered_concurrent(&self, _: u32) -> bool {
        true
    }
    unsafe fn memcpy(&self, _: u32, _: CopyKind, _: u64, _: u64, _: usize, _: Option<u64>) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn fill(&self, _: u32, _: u64, _: FillValue, _: usize, _: Option<u64>) -> BackendResult<()> {
        Ok(())
    }
    fn queue_create(&self, _: u32) -> BackendResult<u64> {
        Ok(self.next.fetch_add(1, Ordering::Relaxed))
    }
    unsafe fn queue_destroy(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn queue_synchronize(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn queue_query(&self, _: u32, _: u64) -> BackendResult<bool> {
        Ok(true)
    }
    unsafe fn queue_wait_event(&self, _: u32, _: u64, _: u64) -> BackendResult<()> {
        Ok(())
    }
    fn event_create(&self, _: u32) -> BackendResult<u64> {
        Ok(self.next.fetch_add(1, Ordering::Relaxed))
    }
    unsafe fn event_destroy(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn event_record(&self, _: u32, _: u64, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn event_synchronize(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn event_query(&self, _: u32, _: u64) -> BackendResult<bool> {
        Ok(true)
    }
    unsafe fn event_elapsed_ms(&self, _: u32, _: u64, _: u64) -> BackendResult<f32> {
        Ok(0.0)
    }
    fn program_load(&self, _: u32, _: &[u8]) -> BackendResult<u64> {
        Err(BackendError::new(ErrorCode::Unsupported, 0, "no programs"))
    }
    unsafe fn program_unload(&self, _: u32, _: u64) -> BackendResult<()> {
        Ok(())
    }
    unsafe fn kernel_get(&self, _: u32, _: u64, _: &str) -> BackendResult<u64> {
        Err(BackendError::new(ErrorCode::NotFound, 0, "no kernels"))
    }
    unsafe fn launch(&self, _: u32, _: u64, _: u64, _: &LaunchDims, _: &KernelArgs<'_>) -> BackendResult<()> {
        Ok(())
    }
}

/// A runtime over a fresh pool, on the heap; `free` gives it all back (after the last use).
struct Fixture {
    pool: *mut Pool,
    backends: *mut [&'static dyn Backend; 1],
    state: *mut core::mem::MaybeUninit<RuntimeState>,
    rt: *mut Runtime,
}

impl Fixture {
    fn new() -> Self {
        use std::boxed::Box;
        let pool = Box::into_raw(Box::new(Pool::new()));
        // SAFETY: each block below lives until `free`, after every use of the runtime.
        let backends = Box::into_raw(Box::new([unsafe { &*pool } as &'static dyn Backend]));
        let state = Box::into_raw(Box::new_uninit());
        // SAFETY: as above.
        let state_ref: &'static RuntimeState = RuntimeState::new_in(unsafe { &mut *state });
        // SAFETY: a fresh state, used by this runtime only; the backends live as long.
        let rt = Box::into_raw(Box::new(unsafe { Runtime::with_state(&*backends, state_ref) }));
        // Every free reaches the pool at once (the cache's own tests below turn it on).
        // SAFETY: as above.
        unsafe { &*rt }.set_cache_bytes(0);
        Self { pool, backends, state, rt }
    }

    fn parts(&self) -> (&'static Pool, &'static Runtime) {
        // SAFETY: both live until `free`, which the test calls after its last use.
        unsafe { (&*self.pool, &*self.rt) }
    }

    /// # Safety
    /// Nothing uses the runtime, its state or its backend any more (every thread joined).
    unsafe fn free(self) {
        use std::boxed::Box;
        // SAFETY: the caller's contract; each block came from `Box::into_raw`, freed once.
        unsafe {
            drop(Box::from_raw(self.rt));
            drop(Box::from_raw(self.state));
            drop(Box::from_raw(self.backends));
            drop(Box::from_raw(self.pool));
        }
    }
}

fn device(rt: &Runtime) -> Device {
    rt.device(rt.platform(0).unwrap(), 0).unwrap()
}

#[test]
fn pool_memory_is_an_allocation_like_any_other() {
    let fixture = Fixture::new();
    let (pool, rt) = fixture.parts();
    rt.init().unwrap();
    let d = device(rt);
    let q = rt.queue_create(d).unwrap();
    let m = rt.mem_alloc(d, MemKind::Device, 512).unwrap();
    let (h, p) = rt.mem_alloc_on(q, 256).unwrap();
    assert_eq!(rt.allocation_info(h).unwrap(), (p, 256, MemKind::Ordered, d));
    assert_eq!(rt.mem_info(p.offset(255)).unwrap().0, p);
    rt.copy_device(m, p, 256, Some(q)).unwrap();
    rt.copy_device(p, m.offset(256), 256, Some(q)).unwrap();
    assert_eq!(rt.copy_device(p, m, 257, Some(q)).unwrap_err().code, ErrorCode::InvalidSize);
    assert_eq!(rt.mem_free_on(q, p.offset(1)).unwrap_err().code, ErrorCode::InvalidArgument);
    assert_eq!(rt.mem_free_on(q, m).unwrap_err().code, ErrorCode::InvalidArgument);
    assert_eq!(rt.live_objects().unwrap().allocations, 2);
    // Device memory is not host memory, whichever table holds it (liboffload's `olMemcpy`
    // names host memory with no device).
    let mut host = [0u8; 8];
    let host_addr = host.as_mut_ptr() as u64;
    for (dst, src) in [(host_addr, p.0), (p.0, host_addr), (host_addr, m.0)] {
        // SAFETY: refused before any byte is copied (the host side is valid anyway).
        let r = unsafe { rt.memcpy_between(dst, None, src, None, 8, None) };
        assert_eq!(r.unwrap_err().code, ErrorCode::InvalidArgument);
    }
    rt.mem_release_on(q, h).unwrap();
    assert_eq!(rt.mem_release_on(q, h).unwrap_err().code, ErrorCode::InvalidHandle);
    assert_eq!(rt.mem_free_on(q, p).unwrap_err().code, ErrorCode::NotFound);
    assert_eq!(rt.mem_info(p).unwrap_err().code, ErrorCode::NotFound);
    // Freed at once by `mem_free` and by its handle; the teardown frees the rest.
    let (_, p2) = rt.mem_alloc_on(q, 64).unwrap();
    rt.mem_free(p2).unwrap();
    let (h3, _) = rt.mem_alloc_on(q, 64).unwrap();
    rt.mem_release(h3).unwrap();
    rt.mem_alloc_on(q, 64).unwrap();
    assert!(matches!(rt.shutdown(), Ok(Shutdown::TornDown(s)) if s.is_clean()));
    assert_eq!(pool.live.load(Ordering::Relaxed), 0);
    // SAFETY: the runtime is not used again.
    unsafe { fixture.free() };
}

/// A free by handle (`mem_release_on`) that its queue refuses changes nothing: the memory stays
/// live, known by its handle and address, and a free with a good queue then frees it once.
#[test]
fn a_free_by_handle_refused_for_its_queue_changes_nothing() {
    let fixture = Fixture::new();
    let (pool, rt) = fixture.parts();
    rt.init().unwrap();
    let d = device(rt);
    let q = rt.queue_create(d).unwrap();
    let gone = rt.queue_create(d).unwrap();
    rt.queue_destroy(gone).unwrap();
    let (h, p) = rt.mem_alloc_on(q, 128).unwrap();
    // A destroyed queue, an allocation's handle passed as the queue: the queue's errors.
    for bad in [gone, Queue(h.0)] {
        assert_eq!(rt.mem_release_on(bad, h).unwrap_err().code, ErrorCode::InvalidHandle);
        assert_eq!(rt.allocation_info(h).unwrap().0, p);
        assert_eq!(rt.mem_info(p).unwrap().0, p);
    }
    assert_eq!(pool.live.load(Ordering::Relaxed), 1);
    rt.mem_release_on(q, h).unwrap();
    assert_eq!(pool.live.load(Ordering::Relaxed), 0);
    assert_eq!(rt.mem_release_on(q, h).unwrap_err().code, ErrorCode::InvalidHandle);
    assert!(matches!(rt.shutdown(), Ok(Shutdown::TornDown(s)) if s.is_clean()));
    // SAFETY: the runtime is not used again.
    unsafe { fixture.free() };
}

/// Threads allocate, copy into, look up and free pool memory at once (two of them free each
/// allocation: one wins), beside a thread making exclusive calls: nothing is freed twice, and
/// Miri sees no data race between the shared calls' table and its lock.
#[test]
fn threads_allocate_and_free_beside_each_other_and_exclusive_calls() {
    let fixture = Fixture::new();
    let (pool, rt) = fixture.parts();
    rt.init().unwrap();
    let d = device(rt);
    // (Under Miri each round is ~30 s of interpretation; two keep the CI within its budget, and
    // the race of the two frees runs six times a run there.)
    let rounds = if cfg!(miri) { 2 } else { 500 };
    let workers: Vec<_> = (0..3)
        .map(|_| {
            thread::spawn(move || {
                let q: Queue = rt.queue_create(device(rt)).unwrap();
                for n in 0..rounds {
                    let (h, p) = rt.mem_alloc_on(q, 64 + n).unwrap();
                    rt.copy_device(p.offset(32), p, 32, Some(q)).unwrap();
                    assert_eq!(rt.mem_info(p.offset(8)).unwrap().0, p);
                    let racer = thread::spawn(move || rt.mem_free_on(q, p));
                    let mine = rt.mem_release_on(q, h);
                    let theirs = racer.join().unwrap();
                    assert!(mine.is_ok() != theirs.is_ok(), "{mine:?} {theirs:?}");
                    assert_eq!(rt.mem_info(p).unwrap_err().code, ErrorCode::NotFound);
                }
                rt.queue_destroy(q).unwrap();
            })
        })
        .collect();
    let exclusive = thread::spawn(move || {
        for _ in 0..rounds {
            let m = rt.mem_alloc(d, MemKind::Device, 128).unwrap();
            rt.mem_free(m).unwrap();
            assert_eq!(rt.mem_free(DevicePtr(m.0)).unwrap_err().code, ErrorCode::NotFound);
        }
    });
    for w in workers {
        w.join().unwrap();
    }
    exclusive.join().unwrap();
    assert_eq!(rt.live_objects().unwrap().allocations, 0);
    assert_eq!(pool.live.load(Ordering::Relaxed), 0);
    assert!(matches!(rt.shutdown(), Ok(Shutdown::TornDown(s)) if s.is_clean()));
    // SAFETY: every thread was joined; the runtime is not used again.
    unsafe { fixture.free() };
}

// ---- the cache of queue-ordered blocks (`cache.rs`) --------------------------------------------

/// A freed block waits on its queue and serves the queue's next allocation of its size without
/// a driver call, under a new handle; the old handle and address stay stale; another queue, or
/// another size, gets fresh memory; trim, destroy and the teardown give blocks back.
#[test]
fn a_freed_block_serves_its_queues_next_allocation_of_its_size() {
    let fixture = Fixture::new();
    let (pool, rt) = fixture.parts();
    rt.set_cache_bytes(1 << 20);
    rt.init().unwrap();
    let d = device(rt);
    let (q, other) = (rt.queue_create(d).unwrap(), rt.queue_create(d).unwrap());
    let (h, p) = rt.mem_alloc_on(q, 4096).unwrap();
    rt.mem_free_on(q, p).unwrap();
    assert_eq!(pool.live.load(Ordering::Relaxed), 1, "kept, not freed");
    // Stale as after any free.
    assert_eq!(rt.mem_info(p).unwrap_err().code, ErrorCode::NotFound);
    assert_eq!(rt.allocation_info(h).unwrap_err().code, ErrorCode::InvalidHandle);
    assert_eq!(rt.mem_free_on(q, p).unwrap_err().code, ErrorCode::NotFound);
    let stats = rt.cache_stats(d).unwrap();
    assert_eq!((stats.bytes, stats.blocks, stats.hits, stats.misses), (4096, 1, 0, 1));
    // Another queue and another size: fresh memory from the pool.
    let (_, p_other) = rt.mem_alloc_on(other, 4096).unwrap();
    let (_, p_small) = rt.mem_alloc_on(q, 4095).unwrap();
    assert!(p_other != p && p_small != p);
    assert_eq!(pool.live.load(Ordering::Relaxed), 3);
    // The same queue and size: the block, under a new handle.
    let (h2, p2) = rt.mem_alloc_on(q, 4096).unwrap();
    assert_eq!(p2, p);
    assert_ne!(h2, h);
    assert_eq!(rt.allocation_info(h2).unwrap(), (p, 4096, MemKind::Ordered, d));
    assert_eq!(pool.live.load(Ordering::Relaxed), 3, "no driver call");
    assert_eq!(rt.cache_stats(d).unwrap().hits, 1);
    // Trim gives the queue's blocks back; a queue's destroy too.
    rt.mem_release_on(q, h2).unwrap();
    rt.mem_free_on(q, p_small).unwrap();
    assert_eq!(rt.queue_trim(q).unwrap(), 4096 + 4095);
    assert_eq!(rt.queue_trim(q).unwrap(), 0);
    assert_eq!(pool.live.load(Ordering::Relaxed), 1);
    rt.mem_free_on(other, p_other).unwrap();
    assert_eq!(pool.live.load(Ordering::Relaxed), 1);
    rt.queue_destroy(other).unwrap();
    assert_eq!(pool.live.load(Ordering::Relaxed), 0);
    assert_eq!(rt.queue_trim(other).unwrap_err().code, ErrorCode::InvalidHandle);
    // The teardown frees what is cached, counted as memory.
    let (_, p3) = rt.mem_alloc_on(q, 64).unwrap();
    rt.mem_free_on(q, p3).unwrap();
    assert!(matches!(rt.shutdown(), Ok(Shutdown::TornDown(s)) if s.is_clean()));
    assert_eq!(pool.live.load(Ordering::Relaxed), 0);
    let report = rt.last_teardown_report().unwrap();
    assert_eq!(report.released_of(crate::ObjectKind::Allocation), 1);
    // SAFETY: the runtime is not used again.
    unsafe { fixture.free() };
}

/// The bounds: the byte limit, the blocks per queue; 0 bytes is no cache at all.
#[test]
fn the_cache_keeps_within_its_bounds() {
    let fixture = Fixture::new();
    let (pool, rt) = fixture.parts();
    rt.set_cache_bytes(10_000);
    rt.init().unwrap();
    let d = device(rt);
    let q = rt.queue_create(d).unwrap();
    let ptrs: Vec<DevicePtr> = (0..3).map(|_| rt.mem_alloc_on(q, 4096).unwrap().1).collect();
    for p in &ptrs {
        rt.mem_free_on(q, *p).unwrap();
    }
    // Two fit in 10,000 bytes; the third went to the driver.
    assert_eq!(rt.cache_stats(d).unwrap().bytes, 8192);
    assert_eq!(pool.live.load(Ordering::Relaxed), 2);
    rt.queue_trim(q).unwrap();
    let small: Vec<DevicePtr> = (0..MAX_CACHED_PER_QUEUE + 2).map(|_| rt.mem_alloc_on(q, 8).unwrap().1).collect();
    for p in &small {
        rt.mem_free_on(q, *p).unwrap();
    }
    assert_eq!(rt.cache_stats(d).unwrap().blocks as usize, MAX_CACHED_PER_QUEUE);
    assert!(matches!(rt.shutdown(), Ok(Shutdown::TornDown(s)) if s.is_clean()));
    assert_eq!(pool.live.load(Ordering::Relaxed), 0);
    // Off: every free reaches the driver, nothing is counted.
    rt.set_cache_bytes(0);
    rt.init().unwrap();
    let d = device(rt);
    let q = rt.queue_create(d).unwrap();
    let (_, p) = rt.mem_alloc_on(q, 64).unwrap();
    rt.mem_free_on(q, p).unwrap();
    assert_eq!(pool.live.load(Ordering::Relaxed), 0);
    assert_eq!(rt.cache_stats(d).unwrap(), crate::CacheStats::default());
    assert!(matches!(rt.shutdown(), Ok(Shutdown::TornDown(s)) if s.is_clean()));
    // SAFETY: the runtime is not used again.
    unsafe { fixture.free() };
}

/// A driver out of memory with blocks cached: they go back to it, and the allocation is tried
/// once more (and succeeds).
#[test]
fn a_driver_out_of_memory_gets_the_cached_blocks_back_and_one_more_try() {
    let fixture = Fixture::new();
    let (pool, rt) = fixture.parts();
    rt.set_cache_bytes(1 << 20);
    rt.init().unwrap();
    let d = device(rt);
    let q = rt.queue_create(d).unwrap();
    let (_, p) = rt.mem_alloc_on(q, 512).unwrap();
    rt.mem_free_on(q, p).unwrap();
    pool.limit.store(1, Ordering::Relaxed);
    // 1 block live (cached): a new size fails in the pool, the cache empties, the retry succeeds.
    let (_, p2) = rt.mem_alloc_on(q, 256).unwrap();
    assert_ne!(p2, p);
    assert_eq!(rt.cache_stats(d).unwrap().blocks, 0);
    assert_eq!(pool.live.load(Ordering::Relaxed), 1);
    // Nothing cached: the driver's refusal is the answer.
    assert_eq!(rt.mem_alloc_on(q, 128).unwrap_err().code, ErrorCode::OutOfResources);
    pool.limit.store(u64::MAX, Ordering::Relaxed);
    assert!(matches!(rt.shutdown(), Ok(Shutdown::TornDown(s)) if s.is_clean()));
    assert_eq!(pool.live.load(Ordering::Relaxed), 0);
    // SAFETY: the runtime is not used again.
    unsafe { fixture.free() };
}
