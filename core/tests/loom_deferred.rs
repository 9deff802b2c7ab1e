//! loom models of `DeferredHost` (the host queues of builds without threads: work waits for an
//! execution point and runs there, on whichever thread reaches it). Every interleaving, within
//! the preemption bound, of
//! - a submitting thread racing another thread's synchronise of the same queue,
//! - two synchronises of one queue, one of them while the other runs its work,
//! - submissions that find the waiting list full (three pieces in loom builds) racing another
//!   queue's submission and synchronise,
//! - a queue waiting for an event recorded on another queue, synchronised while another thread
//!   synchronises the recording queue,
//!
//! checks that every piece runs exactly once, each queue's pieces in submission order, that a
//! synchronise returns only after the work submitted before it has run, and (loom reports
//! it) that no interleaving deadlocks. The pieces are host functions that append to a log; the
//! log is a std mutex on purpose — `DeferredHost`'s running lock already serialises the
//! functions, and a loom operation inside the host backend's own (spin) lock could stop the
//! model there.
//!
//! Run with `core/loom.sh` (it sets `RUSTFLAGS="--cfg loom"`).
#![cfg(loom)]

use core::ffi::c_void;
use std::sync::Mutex as StdMutex;

use loom::thread;
use ordo_core::Backend;
use ordo_core::host::{DEFERRED_WORK, DeferredHost, HOST_ALIGN, HostArena, HostBackend};

/// The order host functions ran in.
type Log = StdMutex<Vec<u8>>;

/// A host function's data: where to log and what.
struct Entry {
    log: &'static Log,
    n: u8,
}

unsafe extern "C" fn append(data: *mut c_void) {
    // SAFETY: `submit` passes a leaked `Entry`.
    let e = unsafe { &*data.cast::<Entry>() };
    e.log.lock().unwrap().push(e.n);
}

/// A fresh deferred host device (its backend and arena leaked: `DeferredHost` wants `'static`
/// ones, and each model iteration needs its own), initialised, and an empty log.
fn device() -> (&'static DeferredHost, &'static Log) {
    let arena: &'static HostArena<{ 4 * HOST_ALIGN }> = Box::leak(Box::new(HostArena::new()));
    let host: &'static HostBackend = Box::leak(Box::new(HostBackend::new(arena, &[], None)));
    let device: &'static DeferredHost = Box::leak(Box::new(DeferredHost::new(host)));
    assert_eq!(device.init().unwrap(), 1);
    (device, Box::leak(Box::new(StdMutex::new(Vec::new()))))
}

fn submit(device: &DeferredHost, log: &'static Log, queue: u64, n: u8) {
    let data = Box::leak(Box::new(Entry { log, n })) as *mut Entry;
    // SAFETY: a live queue; `append` may run on any thread, once.
    unsafe { device.queue_host_function(0, queue, append, data.cast()) }.unwrap();
}

fn synchronize(device: &DeferredHost, queue: u64) {
    // SAFETY: a live queue of device 0.
    unsafe { device.queue_synchronize(0, queue) }.unwrap();
}

fn logged(log: &Log) -> Vec<u8> {
    log.lock().unwrap().clone()
}

/// Destroys the queues and releases the device: nothing waits any more.
fn finish(device: &DeferredHost, queues: &[u64]) {
    for &q in queues {
        // SAFETY: a live queue of device 0, destroyed once.
        unsafe { device.queue_destroy(0, q) }.unwrap();
    }
    assert_eq!(device.waiting(), 0);
    // SAFETY: every object of the device was released.
    unsafe {
        device.device_release(0).unwrap();
        device.deinit().unwrap();
    }
}

#[test]
fn loom_waiting_list_is_three_pieces() {
    assert_eq!(DEFERRED_WORK, 3, "the models below assume loom builds' short list");
}

/// A thread synchronises a queue while this one submits two pieces to it: whatever it runs,
/// the pieces run once each, in submission order.
#[test]
fn submissions_race_a_synchronise() {
    loom::model(|| {
        let (device, log) = device();
        let q = device.queue_create(0).unwrap();
        let syncer = thread::spawn(move || synchronize(device, q));
        submit(device, log, q, 1);
        submit(device, log, q, 2);
        syncer.join().unwrap();
        synchronize(device, q);
        assert_eq!(logged(log), [1, 2]);
        finish(device, &[q]);
    });
}

/// Two synchronises of a queue with one piece: the piece runs once, and each synchronise
/// returns only after it has run (also the one that found another thread running it).
#[test]
fn a_synchronise_waits_for_work_another_thread_runs() {
    loom::model(|| {
        let (device, log) = device();
        let q = device.queue_create(0).unwrap();
        submit(device, log, q, 1);
        let other = thread::spawn(move || {
            synchronize(device, q);
            logged(log)
        });
        synchronize(device, q);
        assert_eq!(logged(log), [1], "this synchronise returned before the piece ran");
        assert_eq!(other.join().unwrap(), [1], "the other synchronise returned before the piece ran");
        finish(device, &[q]);
    });
}

/// This thread submits three pieces to one queue while another submits one to a second queue
/// and synchronises it: the last of the four submissions finds the three-piece list full and
/// runs its queue's work first, or all waiting work (the other queue's too); every piece runs
/// once, the first queue's in order, and nothing deadlocks.
#[test]
fn a_full_list_runs_work_while_another_queue_submits_and_synchronises() {
    loom::model(|| {
        let (device, log) = device();
        let (q1, q2) = (device.queue_create(0).unwrap(), device.queue_create(0).unwrap());
        let other = thread::spawn(move || {
            submit(device, log, q2, 10);
            synchronize(device, q2);
            logged(log)
        });
        for n in 1..=3 {
            submit(device, log, q1, n);
        }
        let seen_by_other = other.join().unwrap();
        assert!(seen_by_other.contains(&10), "q2's synchronise returned before its piece ran");
        synchronize(device, q1);
        let all = logged(log);
        let q1_order: Vec<u8> = all.iter().copied().filter(|&n| n < 10).collect();
        assert_eq!(q1_order, [1, 2, 3], "q1's pieces out of order: {all:?}");
        assert_eq!(all.iter().filter(|&&n| n == 10).count(), 1, "q2's piece ran {all:?}");
        finish(device, &[q1, q2]);
    });
}

/// A piece on q1 and an event recorded after it on q1, q2 waiting for the event; q1
/// synchronised on another thread while this one synchronises q2: q2's synchronise returns
/// only after q1's piece ran (through the record), which runs once.
#[test]
fn a_wait_for_another_queues_event_races_that_queues_synchronise() {
    loom::model(|| {
        let (device, log) = device();
        let (q1, q2) = (device.queue_create(0).unwrap(), device.queue_create(0).unwrap());
        let e = device.event_create(0).unwrap();
        submit(device, log, q1, 1);
        // SAFETY: a live event and queue of device 0.
        unsafe { device.event_record(0, e, q1) }.unwrap();
        let other = thread::spawn(move || {
            synchronize(device, q1);
            logged(log)
        });
        // SAFETY: as above.
        unsafe { device.queue_wait_event(0, q2, e) }.unwrap();
        synchronize(device, q2);
        assert_eq!(logged(log), [1], "q2's synchronise returned before the work its wait depends on ran");
        assert_eq!(other.join().unwrap(), [1], "q1's synchronise returned before its piece ran");
        // SAFETY: a live event of device 0; its record has run.
        unsafe { device.event_destroy(0, e) }.unwrap();
        finish(device, &[q1, q2]);
    });
}
