//! loom models of memory allocated and freed in a queue's order on a device with a pool
//! (`Backend::ordered_concurrent`, as CUDA's), whose calls change the queue-ordered table under
//! its own lock in shared calls (`core/src/runtime/ordered.rs`): every interleaving (within the
//! preemption bound) of
//! - two frees of one allocation racing, by address (`mem_free_on`) and by handle
//!   (`mem_release_on`),
//! - two threads each allocating and freeing on one queue,
//! - an allocate + free pair racing the final shutdown,
//! - a free by address racing the allocation that hands out that address;
//! - with the cache of queue-ordered blocks on (`cache.rs`), a free on one thread and an
//!   allocation of the same size on the same queue on another: the allocation takes the cached
//!   block or fresh memory, never a block still in use, and every block goes back once.
//!
//! The table's lock is loom's mutex in these builds (`sync::Mutex`), its count loom's atomic.
//! The backend (`loom_common`) fails a model that frees a block twice, frees a block it never
//! handed out, reaches it outside init, or uses the queue after its release; each model checks
//! that every block handed out was freed exactly once by the end. Planting a bug is caught:
//! giving the table's lock back between a free's lookup and its removal (in `free_locked`) fails
//! the racing frees and the two threads' pairs (a removal of an entry that is gone).
//!
//! Run with `core/loom.sh` (it sets `RUSTFLAGS="--cfg loom"` and small table capacities).
#![cfg(loom)]

mod loom_common;

use loom_common::{POOL, POOL_BLOCK, queue, ready, setup, shut_down_clean};
use ordo_core::{DevicePtr, ErrorCode};

#[test]
fn two_frees_of_one_allocation_racing() {
    loom::model(|| {
        let (b, rt, q) = ready();
        let (h, ptr) = rt.mem_alloc_on(q, POOL_BLOCK).unwrap();
        let rt2 = rt.clone();
        let by_address = loom::thread::spawn(move || rt2.mem_free_on(q, ptr));
        let by_handle = rt.mem_release_on(q, h);
        let by_address = by_address.join().unwrap();
        // One frees it; the other finds it gone (its address unknown, its handle stale).
        match (&by_address, &by_handle) {
            (Ok(()), Err(e)) => assert_eq!(e.code, ErrorCode::InvalidHandle),
            (Err(e), Ok(())) => assert_eq!(e.code, ErrorCode::NotFound),
            _ => panic!("both or neither freed: {by_address:?}, {by_handle:?}"),
        }
        assert_eq!(b.pool_counts(), (1, 1));
        assert_eq!(rt.live_objects().unwrap().allocations, 0);
        shut_down_clean(&rt);
    });
}

#[test]
fn two_threads_allocating_and_freeing_on_one_queue() {
    loom::model(|| {
        let (b, rt, q) = ready();
        let rt2 = rt.clone();
        let pair = move |rt: &ordo_core::Runtime| {
            let (_, ptr) = rt.mem_alloc_on(q, POOL_BLOCK).unwrap();
            // The memory is known by its address until its free: a lookup by address finds it.
            assert!(POOL.contains(&ptr.0));
            rt.mem_free_on(q, ptr).unwrap();
        };
        let other = loom::thread::spawn(move || pair(&rt2));
        pair(&rt);
        other.join().unwrap();
        assert_eq!(b.pool_counts(), (2, 2));
        assert_eq!(rt.live_objects().unwrap().allocations, 0);
        shut_down_clean(&rt);
    });
}

#[test]
fn a_pair_racing_the_final_shutdown() {
    loom::model(|| {
        let (b, rt, q) = ready();
        let rt2 = rt.clone();
        let pair = loom::thread::spawn(move || {
            let (_, ptr) = rt2.mem_alloc_on(q, POOL_BLOCK)?;
            rt2.mem_free_on(q, ptr)
        });
        shut_down_clean(&rt);
        match pair.join().unwrap() {
            Ok(()) => {}
            // Refused before or after the allocation: the teardown then freed it.
            Err(e) => assert_eq!(e.code, ErrorCode::Uninitialized),
        }
        let (allocs, frees) = b.pool_counts();
        assert_eq!(allocs, frees, "every block handed out was freed once (by the pair or by the teardown)");
        assert!(!b.up.load(loom::sync::atomic::Ordering::SeqCst));
    });
}

#[test]
fn a_free_racing_the_allocation_of_its_address() {
    loom::model(|| {
        let (b, rt, q) = ready();
        let rt2 = rt.clone();
        // The pool hands out `POOL[0]` first: the free may come before the allocation is
        // recorded (the address unknown) or after (it frees it).
        let free = loom::thread::spawn(move || rt2.mem_free_on(q, DevicePtr(POOL[0])));
        let (h, ptr) = rt.mem_alloc_on(q, POOL_BLOCK).unwrap();
        assert_eq!(ptr.0, POOL[0]);
        match free.join().unwrap() {
            Ok(()) => {
                let e = rt.mem_release_on(q, h).unwrap_err();
                assert_eq!(e.code, ErrorCode::InvalidHandle);
            }
            Err(e) => {
                assert_eq!(e.code, ErrorCode::NotFound);
                rt.mem_release_on(q, h).unwrap();
            }
        }
        assert_eq!(b.pool_counts(), (1, 1));
        shut_down_clean(&rt);
    });
}

#[test]
fn a_cached_free_racing_an_allocation_on_its_queue() {
    loom::model(|| {
        let (b, rt) = setup();
        rt.set_cache_bytes(POOL_BLOCK);
        rt.init().unwrap();
        let q = queue(&rt);
        let (_, first) = rt.mem_alloc_on(q, POOL_BLOCK).unwrap();
        let rt2 = rt.clone();
        let free = loom::thread::spawn(move || rt2.mem_free_on(q, first).unwrap());
        // Before the free: the pool's other block; after it: the cached block, with no call.
        let (h, second) = rt.mem_alloc_on(q, POOL_BLOCK).unwrap();
        free.join().unwrap();
        let (allocs, frees) = b.pool_counts();
        if second == first {
            assert_eq!((allocs, frees), (1, 0), "the cached block, reused without a driver call");
        } else {
            assert_eq!(second.0, POOL[1]);
            assert_eq!((allocs, frees), (2, 0), "the first block is cached, not freed");
        }
        rt.mem_release_on(q, h).unwrap();
        shut_down_clean(&rt);
        let (allocs, frees) = b.pool_counts();
        assert_eq!(allocs, frees, "every block handed out went back once (trim or teardown)");
    });
}
