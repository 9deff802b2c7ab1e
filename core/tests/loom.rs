//! loom models of the lifecycle: every interleaving (within the preemption bound) of
//! - an API call racing the final shutdown,
//! - an init racing the final shutdown,
//! - two inits racing,
//! - a shutdown racing a shutdown,
//! - a call, an init and a final shutdown on three threads,
//! - a destroy (an exclusive call) racing a call on the same queue,
//! - an exclusive call (a create) racing the final shutdown,
//! - two exclusive calls (two destroys of one queue) racing,
//! - a nested init + shutdown pair (the one-add / one-subtract fast paths) racing the last shutdown,
//! - launches (pointer and packed forms) racing a destroy of their queue and the final shutdown.
//!
//! The backend here asserts, with loom-visible atomics, that no call reaches it outside init and
//! no call uses a destroyed queue ("no call observes a torn-down object"); each model checks the
//! exact reference count and init/deinit counts at the end. loom reports a deadlock as a failure.
//!
//! Run with `core/loom.sh` (it sets `RUSTFLAGS="--cfg loom"` and small table capacities).
#![cfg(loom)]

mod loom_common;

use loom::sync::atomic::Ordering;
use loom_common::{queue, ready, setup, shut_down_clean};
use ordo_core::{ErrorCode, KernelArgs, LaunchDims, Shutdown, State};

#[test]
fn api_call_racing_the_final_shutdown() {
    loom::model(|| {
        let (b, rt, q) = ready();
        let rt2 = rt.clone();
        let caller = loom::thread::spawn(move || rt2.queue_synchronize(q));
        shut_down_clean(&rt);
        match caller.join().unwrap() {
            Ok(()) => {}
            Err(e) => assert_eq!(e.code, ErrorCode::Uninitialized),
        }
        assert_eq!(rt.state(), State::Uninit);
        assert!(!b.up.load(Ordering::SeqCst) && !b.queue_live.load(Ordering::SeqCst));
    });
}

#[test]
fn init_racing_the_final_shutdown() {
    loom::model(|| {
        let (b, rt) = setup();
        rt.init().unwrap();
        let rt2 = rt.clone();
        let initer = loom::thread::spawn(move || rt2.init());
        rt.shutdown().unwrap();
        initer.join().unwrap().unwrap();
        // Either the init came first (2 -> 1) or it re-initialised after the teardown.
        assert_eq!(rt.state(), State::Ready(1));
        assert!(b.up.load(Ordering::SeqCst));
        assert_eq!(b.inits.load(Ordering::SeqCst), b.deinits.load(Ordering::SeqCst) + 1);
        assert!(matches!(rt.shutdown().unwrap(), Shutdown::TornDown(_)));
    });
}

#[test]
fn two_inits_racing() {
    loom::model(|| {
        let (b, rt) = setup();
        let rt2 = rt.clone();
        let other = loom::thread::spawn(move || rt2.init());
        rt.init().unwrap();
        other.join().unwrap().unwrap();
        assert_eq!(rt.state(), State::Ready(2));
        assert_eq!(b.inits.load(Ordering::SeqCst), 1, "the backend was initialised once");
    });
}

#[test]
fn shutdown_racing_shutdown() {
    loom::model(|| {
        let (b, rt) = setup();
        rt.init().unwrap();
        rt.init().unwrap();
        let _q = queue(&rt);
        let rt2 = rt.clone();
        let other = loom::thread::spawn(move || rt2.shutdown());
        let mine = rt.shutdown().unwrap();
        let theirs = other.join().unwrap().unwrap();
        let torn = [&mine, &theirs].iter().filter(|s| matches!(s, Shutdown::TornDown(_))).count();
        assert_eq!(torn, 1, "exactly one final shutdown: {mine:?} / {theirs:?}");
        assert!([&mine, &theirs].contains(&&Shutdown::Released { remaining: 1 }));
        assert_eq!(rt.state(), State::Uninit);
        assert_eq!(b.deinits.load(Ordering::SeqCst), 1);
        assert!(rt.shutdown().is_err(), "no reference left");
    });
}

#[test]
fn call_init_and_final_shutdown_on_three_threads() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| {
        let (b, rt, q) = ready();
        let (rt_call, rt_init) = (rt.clone(), rt.clone());
        let caller = loom::thread::spawn(move || rt_call.queue_query(q));
        let initer = loom::thread::spawn(move || rt_init.init());
        rt.shutdown().unwrap();
        initer.join().unwrap().unwrap();
        match caller.join().unwrap() {
            Ok(done) => assert!(done),
            // Turned away during the teardown, or a stale handle after the re-init.
            Err(e) => assert!(matches!(e.code, ErrorCode::Uninitialized | ErrorCode::InvalidHandle), "{e}"),
        }
        assert_eq!(rt.state(), State::Ready(1));
        assert_eq!(b.inits.load(Ordering::SeqCst), b.deinits.load(Ordering::SeqCst) + 1);
    });
}

#[test]
fn destroy_racing_a_call_on_the_same_queue() {
    loom::model(|| {
        let (b, rt, q) = ready();
        let rt2 = rt.clone();
        let caller = loom::thread::spawn(move || rt2.queue_synchronize(q));
        // The destroy is exclusive: it waits for the call in flight, or the call finds it gone.
        rt.queue_destroy(q).unwrap();
        match caller.join().unwrap() {
            Ok(()) => {}
            Err(e) => assert_eq!(e.code, ErrorCode::InvalidHandle),
        }
        assert!(!b.queue_live.load(Ordering::SeqCst));
        shut_down_clean(&rt);
    });
}

#[test]
fn exclusive_call_racing_the_final_shutdown() {
    loom::model(|| {
        let (b, rt) = setup();
        rt.init().unwrap();
        let d = rt.device(rt.platform(0).unwrap(), 0).unwrap();
        let rt2 = rt.clone();
        // A create (exclusive): it runs wholly before the teardown, or is turned away.
        let creator = loom::thread::spawn(move || rt2.queue_create(d));
        shut_down_clean(&rt);
        match creator.join().unwrap() {
            Ok(q) => assert_eq!(rt.queue_query(q).unwrap_err().code, ErrorCode::Uninitialized),
            Err(e) => assert_eq!(e.code, ErrorCode::Uninitialized),
        }
        assert_eq!(rt.state(), State::Uninit);
        assert!(!b.up.load(Ordering::SeqCst), "deinitialised");
        assert!(!b.queue_live.load(Ordering::SeqCst), "a queue created before the teardown was released by it");
    });
}

#[test]
fn two_exclusive_calls_racing() {
    loom::model(|| {
        let (b, rt, q) = ready();
        let rt2 = rt.clone();
        // Two destroys of one queue: exactly one reaches the backend (which asserts the queue is
        // live), the other finds the handle stale.
        let other = loom::thread::spawn(move || rt2.queue_destroy(q));
        let mine = rt.queue_destroy(q);
        let theirs = other.join().unwrap();
        assert_eq!([&mine, &theirs].iter().filter(|r| r.is_ok()).count(), 1, "{mine:?} / {theirs:?}");
        for r in [mine, theirs] {
            if let Err(e) = r {
                assert_eq!(e.code, ErrorCode::InvalidHandle);
            }
        }
        assert!(!b.queue_live.load(Ordering::SeqCst));
        shut_down_clean(&rt);
    });
}

#[test]
fn nested_pairs_racing_the_last_shutdown() {
    loom::model(|| {
        let (b, rt) = setup();
        rt.init().unwrap();
        rt.init().unwrap(); // one reference for each thread
        let rt2 = rt.clone();
        // The other thread: a nested init + shutdown pair (the one-add / one-subtract fast paths),
        // then it drops its own reference.
        let other = loom::thread::spawn(move || {
            rt2.init().unwrap();
            let nested = rt2.shutdown().unwrap();
            (nested, rt2.shutdown().unwrap())
        });
        let mine = rt.shutdown().unwrap();
        let (nested, theirs) = other.join().unwrap();
        assert!(matches!(nested, Shutdown::Released { .. }), "the nested pair never tears down: {nested:?}");
        let torn = [&mine, &theirs].iter().filter(|s| matches!(s, Shutdown::TornDown(_))).count();
        assert_eq!(torn, 1, "exactly one final shutdown: {mine:?} / {theirs:?}");
        assert_eq!(rt.state(), State::Uninit);
        assert_eq!((b.inits.load(Ordering::SeqCst), b.deinits.load(Ordering::SeqCst)), (1, 1));
        assert!(rt.shutdown().is_err(), "no reference left");
    });
}

/// References taken on one thread and dropped on another, while the taking thread keeps nested
/// ones in its own slot: the main thread's first reference sits in the word, the other thread's
/// two in its slot; the main thread drops one of the other thread's (the counting path moves the
/// slot's references into the word), the other drops two. Exactly one shutdown tears down, and
/// never while a reference is held: the other thread's call between its drops must succeed.
#[test]
fn references_dropped_on_another_thread_than_they_were_taken() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| {
        let (b, rt, q) = ready();
        let rt2 = rt.clone();
        let taken = std::sync::Arc::new(loom::sync::atomic::AtomicBool::new(false));
        let taken2 = taken.clone();
        let other = loom::thread::spawn(move || {
            rt2.init().unwrap();
            rt2.init().unwrap();
            taken2.store(true, Ordering::SeqCst);
            let first = rt2.shutdown().unwrap();
            // Still one reference between the two threads' drops, or this one: the call works.
            let call = rt2.queue_query(q);
            (first, call, rt2.shutdown().unwrap())
        });
        while !taken.load(Ordering::SeqCst) {
            loom::thread::yield_now();
        }
        let mine = rt.shutdown().unwrap();
        let (first, call, last) = other.join().unwrap();
        assert!(call.is_ok(), "a call made while a reference was held failed: {call:?}");
        let outcomes = [&mine, &first, &last];
        let torn = outcomes.iter().filter(|s| matches!(s, Shutdown::TornDown(_))).count();
        assert_eq!(torn, 1, "exactly one final shutdown: {outcomes:?}");
        assert!(matches!(last, Shutdown::TornDown(_)) || matches!(mine, Shutdown::TornDown(_)));
        assert_eq!(rt.state(), State::Uninit);
        assert_eq!((b.inits.load(Ordering::SeqCst), b.deinits.load(Ordering::SeqCst)), (1, 1));
    });
}

/// Launches (`Runtime::launch`, and `launch_packed_on` after the kernel's first packed launch
/// settled its buffer's end) racing a destroy of their queue and then the final shutdown: each
/// launch reaches the backend while its queue is live (the backend asserts it, and that nothing
/// is released while a launch is in it) or is turned away with the stale handle's or the
/// teardown's error.
#[test]
fn launches_racing_a_destroy_and_the_final_shutdown() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| {
        let (b, rt) = setup();
        rt.init().unwrap();
        let d = rt.device(rt.platform(0).unwrap(), 0).unwrap();
        let q = rt.queue_create(d).unwrap();
        let program = rt.program_load(d, b"loom").unwrap();
        let kernel = rt.kernel_get(program, "k").unwrap();
        let dims = LaunchDims::linear(1, 1);
        // SAFETY: the loom backend reads no argument.
        unsafe { rt.launch_packed_on(d, q, kernel, &dims, &[]) }.unwrap();
        let rt2 = rt.clone();
        let launcher = loom::thread::spawn(move || {
            // SAFETY: as above.
            let pointers = unsafe { rt2.launch(q, kernel, &dims, &KernelArgs::EMPTY) };
            // SAFETY: as above.
            let packed = unsafe { rt2.launch_packed_on(d, q, kernel, &dims, &[]) };
            [pointers, packed]
        });
        rt.queue_destroy(q).unwrap();
        shut_down_clean(&rt);
        for r in launcher.join().unwrap() {
            if let Err(e) = r {
                assert!(matches!(e.code, ErrorCode::InvalidHandle | ErrorCode::Uninitialized), "{e}");
            }
        }
        assert_eq!(rt.state(), State::Uninit);
        assert!(!b.up.load(Ordering::SeqCst) && !b.queue_live.load(Ordering::SeqCst));
    });
}
