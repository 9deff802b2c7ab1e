//! Queue-ordered memory of a device with memory pools (the scripted backend says so, as CUDA
//! does: `Backend::ordered_concurrent`): `mem_alloc_on` and `mem_free_on` run beside other calls
//! in flight instead of waiting for them, in a table of their own, and stay what they were —
//! allocations like any other, freed once, refused after their free, released by the teardown,
//! counted against `ORDO_MAX_ORDERED_ALLOCATIONS`, consistent in a forked child.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::Duration;

use ordo_core::capacity::MAX_ORDERED_ALLOCATIONS;
use ordo_core::{BackendOp, DevicePtr, ErrorCode, FillValue, MemKind, Shutdown};
use ordo_tests::{code, device, scripted_runtime};

static HOLD_FILLS: AtomicBool = AtomicBool::new(false);
static FILLS_HELD: AtomicUsize = AtomicUsize::new(0);

/// The scripted backend's hook: a fill waits while `HOLD_FILLS` is set (a call in flight).
fn hold_fills(op: BackendOp) {
    if op == BackendOp::Fill && HOLD_FILLS.load(Ordering::Acquire) {
        FILLS_HELD.fetch_add(1, Ordering::AcqRel);
        while HOLD_FILLS.load(Ordering::Acquire) {
            thread::yield_now();
        }
        FILLS_HELD.fetch_sub(1, Ordering::AcqRel);
    }
}

/// While another thread's fill is in flight (held in the backend), queue-ordered memory is
/// allocated and freed (by address and by handle) without waiting for it, where an ordinary
/// allocation waits until the fill returns.
#[test]
fn pool_memory_is_made_and_freed_beside_a_call_in_flight() {
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    let q = rt.queue_create(d).unwrap();
    let m = rt.mem_alloc(d, MemKind::Device, 256).unwrap();
    b.set_hook(Some(hold_fills));
    HOLD_FILLS.store(true, Ordering::Release);
    let filler = thread::spawn(move || rt.fill(m, FillValue::U8(1), 256, None));
    while FILLS_HELD.load(Ordering::Acquire) == 0 {
        thread::yield_now();
    }
    // The fill is in flight: queue-ordered memory comes and goes meanwhile (an exclusive call
    // would wait for the fill, which waits for this test).
    let (done_tx, done_rx) = mpsc::channel();
    thread::spawn(move || {
        let r = (|| {
            let (h, p) = rt.mem_alloc_on(q, 4096)?;
            assert_eq!(rt.allocation_info(h)?.2, MemKind::Ordered);
            assert_eq!(rt.mem_info(p.offset(100))?.0, p);
            rt.copy_device(p.offset(64), p, 64, Some(q))?;
            rt.mem_free_on(q, p)?;
            let (h2, _) = rt.mem_alloc_on(q, 64)?;
            rt.mem_release_on(q, h2)
        })();
        done_tx.send(r).unwrap();
    });
    let beside = done_rx.recv_timeout(Duration::from_secs(20));
    // An ordinary allocation is exclusive: it waits for the fill in flight.
    let (alloc_tx, alloc_rx) = mpsc::channel();
    thread::spawn(move || alloc_tx.send(rt.mem_alloc(d, MemKind::Device, 64)).unwrap());
    let early = alloc_rx.recv_timeout(Duration::from_millis(200));
    HOLD_FILLS.store(false, Ordering::Release);
    filler.join().unwrap().unwrap();
    b.set_hook(None);
    beside.expect("queue-ordered memory waited for the call in flight").unwrap();
    assert!(early.is_err(), "an exclusive allocation ran while a call was in flight");
    let late = alloc_rx.recv_timeout(Duration::from_secs(30)).expect("the allocation finishes after the fill");
    rt.mem_free(late.unwrap()).unwrap();
    assert_eq!(rt.live_objects().unwrap().allocations, 1);
    rt.mem_free(m).unwrap();
    assert!(matches!(rt.shutdown(), Ok(Shutdown::TornDown(s)) if s.is_clean()));
    assert_eq!(b.live_total(), 0);
    assert_eq!(b.double_releases(), 0);
}

/// Threads free one allocation at once, by address and by handle: it is freed once; the others
/// get `NotFound` or `InvalidHandle`.
#[test]
fn racing_frees_of_one_allocation_free_it_once() {
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    let q = rt.queue_create(d).unwrap();
    const THREADS: usize = 6;
    for _ in 0..100 {
        let (h, p) = rt.mem_alloc_on(q, 128).unwrap();
        let barrier = Arc::new(Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|i| {
                let barrier = barrier.clone();
                thread::spawn(move || {
                    barrier.wait();
                    if i % 2 == 0 { rt.mem_free_on(q, p) } else { rt.mem_release_on(q, h) }
                })
            })
            .collect();
        let freed: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(freed.iter().filter(|r| r.is_ok()).count(), 1, "{freed:?}");
        assert!(freed.iter().all(|r| matches!(
            r.as_ref().map_err(|e| e.code),
            Ok(()) | Err(ErrorCode::NotFound | ErrorCode::InvalidHandle)
        )));
    }
    assert_eq!(rt.live_objects().unwrap().allocations, 0);
    rt.shutdown().unwrap();
    assert_eq!(b.double_releases(), 0);
    assert_eq!(b.live_total(), 0);
}

/// Threads allocate, use and free queue-ordered memory while others create and destroy
/// queues and ordinary allocations (exclusive calls): every call succeeds, nothing is released
/// twice, and the teardown finds the tables and the backend empty.
#[test]
fn pool_memory_beside_creates_and_destroys() {
    let (b, rt) = scripted_runtime(2);
    rt.init().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..6)
        .map(|i| {
            thread::spawn(move || {
                let d = device(rt, i % 2).unwrap();
                let q = rt.queue_create(d).unwrap();
                for n in 0..400usize {
                    let (h, p) = rt.mem_alloc_on(q, 64 + n).unwrap();
                    rt.fill(p, FillValue::U8(n as u8), 64, Some(q)).unwrap();
                    rt.copy_device(p.offset(32), p, 32, Some(q)).unwrap();
                    assert_eq!(rt.mem_info(p.offset(63)).unwrap().0, p);
                    if n % 2 == 0 {
                        rt.mem_free_on(q, p).unwrap()
                    } else {
                        rt.mem_release_on(q, h).unwrap()
                    }
                    assert_eq!(code(rt.mem_info(p)), ErrorCode::NotFound);
                }
                rt.queue_destroy(q).unwrap();
            })
        })
        .collect();
    let churners: Vec<_> = (0..2)
        .map(|i| {
            let stop = stop.clone();
            thread::spawn(move || {
                let d = device(rt, i).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    let q = rt.queue_create(d).unwrap();
                    let m = rt.mem_alloc(d, MemKind::Device, 256).unwrap();
                    rt.mem_free(m).unwrap();
                    rt.queue_destroy(q).unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for c in churners {
        c.join().unwrap();
    }
    assert_eq!(rt.live_objects().unwrap().allocations, 0);
    assert!(matches!(rt.shutdown(), Ok(Shutdown::TornDown(s)) if s.is_clean()));
    assert_eq!(b.double_releases(), 0);
    assert_eq!(b.live_total(), 0);
}

/// The table of queue-ordered allocations holds `MAX_ORDERED_ALLOCATIONS`; one more is
/// `OutOfResources` and changes nothing (the backend's allocation is given back). Its handles
/// work with every allocation call (`mem_release`, `allocation_info`, `mem_free`), go stale once
/// freed, and the teardown frees what is left.
#[test]
fn the_table_fills_up_changes_nothing_and_the_teardown_empties_it() {
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    let q = rt.queue_create(d).unwrap();
    let made: Vec<(ordo_core::Allocation, DevicePtr)> =
        (0..MAX_ORDERED_ALLOCATIONS).map(|_| rt.mem_alloc_on(q, 32).unwrap()).collect();
    let live = rt.live_objects().unwrap();
    assert_eq!(live.allocations, MAX_ORDERED_ALLOCATIONS);
    let backend_live = b.live_total();
    let full = rt.mem_alloc_on(q, 32).unwrap_err();
    assert_eq!(full.code, ErrorCode::OutOfResources);
    assert!(full.message.contains("ORDO_MAX_ORDERED_ALLOCATIONS"), "{full}");
    assert_eq!(rt.live_objects().unwrap(), live);
    assert_eq!(b.live_total(), backend_live);
    // Ordinary allocations have their own table.
    let m = rt.mem_alloc(d, MemKind::Device, 64).unwrap();
    // Every allocation call takes these handles and addresses.
    let (h0, p0) = made[0];
    assert_eq!(rt.allocation_info(h0).unwrap(), (p0, 32, MemKind::Ordered, d));
    rt.mem_release(h0).unwrap();
    assert_eq!(code(rt.mem_release(h0)), ErrorCode::InvalidHandle);
    assert_eq!(code(rt.allocation_info(h0)), ErrorCode::InvalidHandle);
    assert_eq!(code(rt.mem_release_on(q, h0)), ErrorCode::InvalidHandle);
    let (h1, p1) = made[1];
    rt.mem_free(p1).unwrap();
    assert_eq!(code(rt.mem_free_on(q, p1)), ErrorCode::NotFound);
    assert_eq!(code(rt.mem_release_on(q, h1)), ErrorCode::InvalidHandle);
    assert_eq!(code(rt.host_unregister(made[2].1)), ErrorCode::InvalidArgument);
    assert_eq!(code(rt.mem_free_on(q, made[2].1.offset(1))), ErrorCode::InvalidArgument);
    assert_eq!(code(rt.mem_free_on(q, m)), ErrorCode::InvalidArgument, "not queue-ordered");
    // Room again.
    let (h, _) = rt.mem_alloc_on(q, 32).unwrap();
    assert_eq!(rt.allocation_info(h).unwrap().2, MemKind::Ordered);
    let Ok(Shutdown::TornDown(s)) = rt.shutdown() else { panic!("torn down") };
    assert!(s.is_clean());
    assert_eq!(b.live_total(), 0);
    assert_eq!(b.double_releases(), 0);
    // The handles of the last epoch are stale in the next.
    rt.init().unwrap();
    assert_eq!(code(rt.allocation_info(h)), ErrorCode::InvalidHandle);
    assert_eq!(rt.live_objects().unwrap().allocations, 0);
    rt.shutdown().unwrap();
}

/// The pair's shared side checks everything in one branch and leaves the errors to other code:
/// each refusal is the documented one, in the documented order (the size before the queue; the
/// address before the queue; then the queue, its device and its capture), and changes nothing.
#[test]
fn refusals_come_in_the_documented_order_and_change_nothing() {
    let (b, rt) = scripted_runtime(2);
    rt.init().unwrap();
    let (d0, d1) = (device(rt, 0).unwrap(), device(rt, 1).unwrap());
    let (q0, q1) = (rt.queue_create(d0).unwrap(), rt.queue_create(d1).unwrap());
    let stale = rt.queue_create(d0).unwrap();
    rt.queue_destroy(stale).unwrap();
    assert_eq!(code(rt.mem_alloc_on(stale, 0)), ErrorCode::InvalidSize);
    assert_eq!(code(rt.mem_alloc_on(stale, usize::MAX)), ErrorCode::InvalidSize);
    assert_eq!(code(rt.mem_alloc_on(q0, isize::MAX as usize + 1)), ErrorCode::InvalidSize);
    assert_eq!(code(rt.mem_alloc_on(stale, 64)), ErrorCode::InvalidHandle);
    let (h, p) = rt.mem_alloc_on(q0, 64).unwrap();
    let (live, backend_live) = (rt.live_objects().unwrap(), b.live_total());
    rt.queue_begin_capture(q1).unwrap();
    assert_eq!(code(rt.mem_alloc_on(q1, 64)), ErrorCode::InvalidArgument, "capturing");
    let g = rt.queue_end_capture(q1).unwrap();
    rt.graph_destroy(g).unwrap();
    assert_eq!(code(rt.mem_free_on(stale, DevicePtr(0))), ErrorCode::NullPointer);
    assert_eq!(code(rt.mem_free_on(stale, p.offset(1))), ErrorCode::InvalidArgument, "inside");
    assert_eq!(code(rt.mem_free_on(stale, p.offset(1 << 40))), ErrorCode::NotFound);
    assert_eq!(code(rt.mem_free_on(stale, p)), ErrorCode::InvalidHandle);
    assert_eq!(code(rt.mem_free_on(q1, p)), ErrorCode::InvalidArgument, "another device's queue");
    assert_eq!(code(rt.mem_release_on(q1, h)), ErrorCode::InvalidArgument, "another device's queue");
    rt.queue_begin_capture(q0).unwrap();
    assert_eq!(code(rt.mem_free_on(q0, p)), ErrorCode::InvalidArgument, "capturing");
    let g = rt.queue_end_capture(q0).unwrap();
    rt.graph_destroy(g).unwrap();
    assert_eq!(rt.live_objects().unwrap(), live);
    assert_eq!(b.live_total(), backend_live);
    assert_eq!(rt.allocation_info(h).unwrap(), (p, 64, MemKind::Ordered, d0));
    rt.mem_free_on(q0, p).unwrap();
    assert_eq!(code(rt.mem_free_on(q0, p)), ErrorCode::NotFound);
    assert_eq!(code(rt.mem_release_on(q0, h)), ErrorCode::InvalidHandle);
    assert!(matches!(rt.shutdown(), Ok(Shutdown::TornDown(s)) if s.is_clean()));
    assert_eq!(b.live_total(), 0);
    assert_eq!(b.double_releases(), 0);
}
