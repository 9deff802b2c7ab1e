//! Calls in flight are counted per thread (a slot each, for the first 64 threads alive at once)
//! or in hashed shards (the threads beyond). Exclusive calls must wait for both kinds, and a slot
//! given back by an exiting thread must serve the next thread with a clean count.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use ordo_core::{BackendOp, Queue, Runtime};
use ordo_tests::{device, scripted_runtime};

/// Shared backend calls running right now (counted inside the backend call).
static IN_FLIGHT: AtomicU32 = AtomicU32::new(0);
/// Exclusive backend calls that found a shared call running.
static OVERLAPS: AtomicU32 = AtomicU32::new(0);

fn hook(op: BackendOp) {
    match op {
        BackendOp::QueueQuery => {
            IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
            // Widen the window in which an exclusive call could overlap this one.
            for _ in 0..50 {
                std::hint::spin_loop();
            }
            IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
        }
        BackendOp::QueueCreate | BackendOp::QueueDestroy if IN_FLIGHT.load(Ordering::SeqCst) != 0 => {
            OVERLAPS.fetch_add(1, Ordering::SeqCst);
        }
        _ => {}
    }
}

/// `callers` threads, all alive at once, each querying its own queue while one thread creates
/// and destroys queues; returns once all have finished.
fn round(rt: &'static Runtime, callers: usize, calls: usize) {
    let d = device(rt, 0).unwrap();
    let queues: Vec<Queue> = (0..callers).map(|_| rt.queue_create(d).unwrap()).collect();
    let start = Arc::new(Barrier::new(callers + 1));
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let done = done.clone();
        thread::spawn(move || {
            let mut cycles = 0u32;
            while !done.load(Ordering::SeqCst) || cycles < 10 {
                let q = rt.queue_create(d).unwrap();
                rt.queue_destroy(q).unwrap();
                cycles += 1;
            }
        })
    };
    let handles: Vec<_> = queues
        .iter()
        .map(|&q| {
            let start = start.clone();
            thread::spawn(move || {
                start.wait();
                for _ in 0..calls {
                    rt.queue_query(q).unwrap();
                }
            })
        })
        .collect();
    start.wait();
    for h in handles {
        h.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    for q in queues {
        rt.queue_destroy(q).unwrap();
    }
}

#[test]
fn exclusive_calls_wait_for_per_thread_and_hashed_counters_alike() {
    let (backend, rt) = scripted_runtime(1);
    backend.set_hook(Some(hook));
    rt.init().unwrap();
    // 96 callers: 64 of them (at most) on their own slots, the rest on hashed shards.
    round(rt, 96, 300);
    // Every one of those threads has exited and given its slot back: new threads reuse them.
    round(rt, 96, 300);
    backend.set_hook(None);
    assert_eq!(OVERLAPS.load(Ordering::SeqCst), 0, "an exclusive call ran beside a shared one");
    assert!(matches!(rt.shutdown(), Ok(ordo_core::Shutdown::TornDown(s)) if s.is_clean()));
    assert_eq!(backend.live_total(), 0);
}
