//! Threads churning init/shutdown while others call the API. A thread that holds an init
//! reference must see every call succeed (no teardown can happen under it); a thread without one
//! may only see success, `Uninitialized`, or a stale-handle error for an object from an epoch that
//! ended under it. At the end nothing is live, nothing was released twice, and no backend call
//! arrived outside init.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use ordo_core::{Backend, DevicePtr, ErrorCode, FillValue, MemKind, Result, Runtime, State};
use ordo_tests::{device, host_backend, runtime, scripted};

/// Init/shutdown cycles per churning thread; `ORDO_STRESS_ITERATIONS` raises it for long runs.
fn iterations() -> usize {
    std::env::var("ORDO_STRESS_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000)
}

/// Errors a caller without an init reference may see.
fn allowed_without_reference<T>(r: &Result<T>) -> bool {
    match r {
        Ok(_) => true,
        Err(e) => matches!(e.code, ErrorCode::Uninitialized | ErrorCode::InvalidHandle | ErrorCode::NotFound),
    }
}

fn work(rt: &Runtime) -> Result<()> {
    let d = device(rt, 0)?;
    let q = rt.queue_create(d)?;
    let m = rt.mem_alloc(d, MemKind::Device, 256)?;
    rt.copy_to_device(m, &[7u8; 256])?;
    rt.fill(m, FillValue::U32(9), 16, Some(q))?;
    let mut back = [0u8; 4];
    rt.copy_from_device(&mut back, m)?;
    rt.queue_synchronize(q)?;
    rt.mem_free(m)?;
    rt.queue_destroy(q)
}

/// Calls one at a time, without a reference, so that a teardown can fall between any two.
///
/// Memory is named by address, and a backend that reuses addresses (the host arena) may hand
/// an address freed by a teardown to another thread's allocation in the next epoch; a stale
/// free or copy from this thread would then act on that allocation (as `cuMemFree` would). So
/// with such a backend this thread uses handle-named objects only, which generations protect.
/// With `unique_addresses` (the scripted backend never reuses one) it also uses memory, and
/// frees it twice: the second free must be rejected.
fn work_without_reference(rt: &Runtime, unique_addresses: bool) -> bool {
    let d = device(rt, 0);
    let Ok(d) = d else {
        return allowed_without_reference(&d);
    };
    let e = rt.event_create(d);
    let Ok(e) = e else {
        return allowed_without_reference(&e);
    };
    let destroyed = rt.event_destroy(e);
    let destroyed_again = rt.event_destroy(e);
    let handles_ok = allowed_without_reference(&destroyed)
        && matches!(destroyed_again.map_err(|e| e.code), Err(ErrorCode::InvalidHandle | ErrorCode::Uninitialized));
    if !unique_addresses {
        return handles_ok;
    }
    let m = rt.mem_alloc(d, MemKind::Device, 64);
    let Ok(m) = m else {
        return handles_ok && allowed_without_reference(&m);
    };
    let copied = rt.copy_to_device(m, &[1u8; 64]);
    let freed = rt.mem_free(m);
    let double_free_rejected =
        matches!(rt.mem_free(DevicePtr(m.0)).map_err(|e| e.code), Err(ErrorCode::NotFound | ErrorCode::Uninitialized));
    handles_ok && allowed_without_reference(&copied) && allowed_without_reference(&freed) && double_free_rejected
}

fn churn(rt: &'static Runtime, unique_addresses: bool) {
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for _ in 0..2 {
        threads.push(thread::spawn(move || {
            for _ in 0..iterations() {
                rt.init().unwrap();
                rt.shutdown().unwrap();
            }
        }));
    }
    for _ in 0..2 {
        threads.push(thread::spawn(move || {
            for _ in 0..iterations() / 10 {
                let guard = rt.init_guard().unwrap();
                work(rt).expect("a caller holding a reference sees every call succeed");
                guard.shutdown().unwrap();
            }
        }));
    }
    let stop2 = stop.clone();
    let free_runner = thread::spawn(move || {
        while !stop2.load(Ordering::Relaxed) {
            assert!(
                work_without_reference(rt, unique_addresses),
                "a call without a reference saw an error the model does not allow"
            );
        }
    });
    for t in threads {
        t.join().expect("no thread panicked");
    }
    stop.store(true, Ordering::Relaxed);
    free_runner.join().expect("no thread panicked");
    assert_eq!(rt.state(), State::Uninit);
}

#[test]
fn churn_over_scripted_backend_leaks_nothing() {
    let b = scripted(1);
    let rt = runtime(vec![b as &dyn Backend]);
    churn(rt, true);
    assert_eq!(b.live_total(), 0, "no object outlived the last teardown");
    assert_eq!(b.double_releases(), 0);
    assert_eq!(b.calls_while_down(), 0);
    assert!(!b.is_up());
}

#[test]
fn churn_over_host_backend_returns_every_byte() {
    let h = host_backend();
    let rt = runtime(vec![h as &dyn Backend]);
    rt.init().unwrap();
    let total = h.free_bytes();
    rt.shutdown().unwrap();
    churn(rt, false);
    rt.init().unwrap();
    assert_eq!(h.free_bytes(), total, "the arena is whole again");
    rt.shutdown().unwrap();
}

/// The per-device default queue is made once: threads whose first `default_queue` calls race all
/// get the same queue and exactly one queue is made per device; a destroyed default queue is
/// replaced by the next call; the final shutdown releases it with the device's other queues.
#[test]
fn racing_first_calls_make_one_default_queue_per_device() {
    let backend = scripted(2);
    let rt = runtime(vec![backend]);
    rt.init().unwrap();
    let devices = [device(rt, 0).unwrap(), device(rt, 1).unwrap()];
    let barrier = std::sync::Barrier::new(16);
    let got: Vec<Vec<ordo_core::Queue>> = thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    devices.iter().map(|&d| rt.default_queue(d).unwrap()).collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(got.iter().all(|g| *g == got[0]), "every thread got the same queue per device");
    assert_ne!(got[0][0], got[0][1]);
    assert_eq!(rt.live_objects().unwrap().queues, 2, "one queue per device");
    assert_eq!(rt.queue_device(got[0][1]).unwrap(), devices[1]);
    // Destroyed: the next call makes another, and only one.
    rt.queue_destroy(got[0][0]).unwrap();
    let again = rt.default_queue(devices[0]).unwrap();
    assert_ne!(again, got[0][0]);
    assert_eq!(rt.default_queue(devices[0]).unwrap(), again);
    assert_eq!(rt.live_objects().unwrap().queues, 2);
    // Released by the final shutdown like any queue; stale after it.
    rt.shutdown().unwrap();
    assert_eq!(backend.live_total(), 0);
    rt.init().unwrap();
    assert_eq!(rt.queue_device(again).unwrap_err().code, ErrorCode::InvalidHandle);
    let fresh = rt.default_queue(device(rt, 0).unwrap()).unwrap();
    assert_eq!(rt.live_objects().unwrap().queues, 1);
    assert_ne!(fresh, again);
    rt.shutdown().unwrap();
}
