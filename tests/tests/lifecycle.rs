//! One test per row of the lifecycle table in DESIGN.md, on the real runtime.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;
use std::time::Duration;

use ordo_core::{BackendError, BackendOp, ErrorCode, MemKind, Shutdown, State};
use ordo_testing::scripted::ScriptedObject;
use ordo_tests::{code, device, runtime, scripted, scripted_runtime};

#[test]
fn init_from_uninit_initialises_every_backend_and_records_absent_ones() {
    let (a, b) = (scripted(2), scripted(1));
    b.set_present(false);
    let rt = runtime(vec![a, b]);
    assert_eq!(rt.state(), State::Uninit);
    rt.init().unwrap();
    assert_eq!(rt.state(), State::Ready(1));
    assert!(a.is_up());
    assert_eq!(rt.platform_count().unwrap(), 2);
    let absent = rt.platform_info(rt.platform(1).unwrap()).unwrap();
    assert_eq!(absent.absent.map(|e| e.code), Some(ErrorCode::NotPresent));
    assert_eq!(absent.device_count, 0);
    assert_eq!(rt.platform_info(rt.platform(0).unwrap()).unwrap().device_count, 2);
    assert_eq!(a.live(ScriptedObject::Device), 2);
}

#[test]
fn init_failure_of_a_present_backend_makes_it_unavailable_and_the_others_work() {
    let (a, b, c) = (scripted(2), scripted(1), scripted(1));
    let rt = runtime(vec![a, b, c]);
    b.fail_next(BackendOp::Init, BackendError::new(ErrorCode::BackendFailure, 999, "CUDA_ERROR_UNKNOWN"));
    rt.init().unwrap();
    assert_eq!(rt.state(), State::Ready(1));
    let info = rt.platform_info(rt.platform(1).unwrap()).unwrap();
    assert!(info.is_unavailable(), "present but failed: unavailable, not absent");
    let why = info.absent.unwrap();
    assert_eq!((why.code, why.native, why.message), (ErrorCode::BackendFailure, 999, "CUDA_ERROR_UNKNOWN"));
    assert_eq!(info.device_count, 0);
    assert!(a.is_up() && c.is_up() && !b.is_up());
    let q = rt.queue_create(device(rt, 0).unwrap()).unwrap();
    rt.queue_synchronize(q).unwrap();
    let absent = scripted(1);
    absent.set_present(false);
    let rt2 = runtime(vec![absent]);
    rt2.init().unwrap();
    let info = rt2.platform_info(rt2.platform(0).unwrap()).unwrap();
    assert!(info.absent.is_some() && !info.is_unavailable(), "absent is told apart from unavailable");
    // The teardown does not deinit the unavailable backend; a later init tries it again.
    rt.shutdown().unwrap();
    assert_eq!(b.live_total(), 0);
    rt.init().unwrap();
    assert!(b.is_up());
    assert_eq!(rt.platform_info(rt.platform(1).unwrap()).unwrap().device_count, 1);
}

#[test]
fn init_from_ready_takes_a_reference_without_backend_calls() {
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    let calls = b.calls();
    rt.init().unwrap();
    rt.init().unwrap();
    assert_eq!(rt.state(), State::Ready(3));
    assert_eq!(b.calls(), calls);
}

#[test]
fn shutdown_from_uninit_is_uninitialized() {
    let (b, rt) = scripted_runtime(1);
    assert_eq!(code(rt.shutdown()), ErrorCode::Uninitialized);
    assert_eq!(rt.state(), State::Uninit);
    assert_eq!(b.calls(), 0);
    rt.init().unwrap();
    assert!(matches!(rt.shutdown().unwrap(), Shutdown::TornDown(_)));
    assert_eq!(code(rt.shutdown()), ErrorCode::Uninitialized, "twice is an error too");
}

#[test]
fn shutdown_with_more_references_only_drops_one() {
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    rt.init().unwrap();
    let q = rt.queue_create(device(rt, 0).unwrap()).unwrap();
    assert_eq!(rt.shutdown().unwrap(), Shutdown::Released { remaining: 1 });
    assert_eq!(rt.state(), State::Ready(1));
    rt.queue_synchronize(q).unwrap();
    assert_eq!(b.live(ScriptedObject::Queue), 1);
}

#[test]
fn final_shutdown_tears_down_everything_and_reinit_is_fresh() {
    let (b, rt) = scripted_runtime(2);
    rt.init().unwrap();
    let d1 = device(rt, 1).unwrap();
    let q = rt.queue_create(d1).unwrap();
    let e = rt.event_create(d1).unwrap();
    let p = rt.program_load(d1, b"image").unwrap();
    let k = rt.kernel_get(p, "k").unwrap();
    let m = rt.mem_alloc(d1, MemKind::Device, 64).unwrap();
    let Shutdown::TornDown(_) = rt.shutdown().unwrap() else { panic!("expected teardown") };
    let report = rt.last_teardown_report().unwrap();
    assert!(report.is_clean(), "{report}");
    // Kernels are counted when their program is unloaded.
    assert_eq!(report.released, [1, 2, 1, 1, 1, 1, 1, 0, 0]);
    assert_eq!(b.live_total(), 0);
    assert!(!b.is_up());
    assert_eq!(b.double_releases(), 0);
    assert_eq!(rt.state(), State::Uninit);

    rt.init().unwrap();
    assert_eq!(code(rt.queue_synchronize(q)), ErrorCode::InvalidHandle);
    assert_eq!(code(rt.event_query(e)), ErrorCode::InvalidHandle);
    assert_eq!(code(rt.kernel_program(k)), ErrorCode::InvalidHandle);
    assert_eq!(code(rt.program_unload(p)), ErrorCode::InvalidHandle);
    assert_eq!(code(rt.queue_create(d1)), ErrorCode::InvalidHandle, "device handle of the earlier epoch");
    assert_eq!(code(rt.mem_free(m)), ErrorCode::NotFound);
    assert_eq!(b.double_releases(), 0);
}

#[test]
fn calls_outside_ready_return_uninitialized_and_touch_nothing() {
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    let q = rt.queue_create(d).unwrap();
    rt.shutdown().unwrap();
    let calls = b.calls();
    assert_eq!(code(rt.queue_create(d)), ErrorCode::Uninitialized);
    assert_eq!(code(rt.queue_synchronize(q)), ErrorCode::Uninitialized);
    assert_eq!(code(rt.mem_alloc(d, MemKind::Device, 0)), ErrorCode::Uninitialized, "lifecycle is checked first");
    assert_eq!(code(rt.program_load(d, b"")), ErrorCode::Uninitialized);
    assert_eq!(code(rt.platform(0)), ErrorCode::Uninitialized);
    assert_eq!(code(rt.live_objects()), ErrorCode::Uninitialized);
    assert_eq!(b.calls(), calls);
    assert_eq!(b.calls_while_down(), 0);
}

static RELEASE: AtomicBool = AtomicBool::new(false);
static ENTERED: AtomicU32 = AtomicU32::new(0);

fn block_in(op: BackendOp, wanted: BackendOp) {
    if op == wanted {
        ENTERED.fetch_add(1, Ordering::SeqCst);
        while !RELEASE.load(Ordering::SeqCst) {
            thread::yield_now();
        }
    }
}

fn wait_entered(n: u32) {
    while ENTERED.load(Ordering::SeqCst) < n {
        thread::yield_now();
    }
}

/// The blocking tests share the statics above, so they run one after another in this test.
#[test]
fn waits_on_initializing_and_shutting_down_and_drains_calls_in_flight() {
    init_while_initializing_waits_and_then_references();
    final_shutdown_waits_for_calls_in_flight();
    init_racing_final_shutdown_reinitialises_afterwards();
    reissue_waits_for_no_call_in_flight();
}

/// `queue_reissue`/`event_reissue` are shared calls: they rename a queue and an event while
/// another thread's call is in flight (a pool such as MLIR's stream pool must not wait for it),
/// and the old handles are stale at once; the backend's objects are the same.
fn reissue_waits_for_no_call_in_flight() {
    reset_blocking();
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    let busy = rt.queue_create(d).unwrap();
    let (q, e) = (rt.queue_create(d).unwrap(), rt.event_create(d).unwrap());
    let native = rt.queue_native(q).unwrap();
    b.set_hook(Some(|op| block_in(op, BackendOp::QueueSynchronize)));
    let in_flight = thread::spawn(move || rt.queue_synchronize(busy));
    wait_entered(1);
    let renamed = thread::spawn(move || (rt.queue_reissue(q).unwrap(), rt.event_reissue(e).unwrap()));
    thread::sleep(Duration::from_millis(50));
    assert!(renamed.is_finished(), "a reissue waits for no call in flight");
    let (q2, e2) = renamed.join().unwrap();
    RELEASE.store(true, Ordering::SeqCst);
    in_flight.join().unwrap().unwrap();
    b.set_hook(None);
    assert_eq!(code(rt.queue_destroy(q)), ErrorCode::InvalidHandle, "the old queue handle is stale");
    assert_eq!(code(rt.event_record(e, q2)), ErrorCode::InvalidHandle, "the old event handle is stale");
    assert_eq!(code(rt.queue_reissue(q)), ErrorCode::InvalidHandle);
    assert_eq!(rt.queue_native(q2).unwrap(), native, "the same backend queue");
    rt.event_record(e2, q2).unwrap();
    rt.queue_synchronize(q2).unwrap();
    assert_eq!(b.live(ScriptedObject::Queue), 2, "no backend queue was made or destroyed");
    assert_eq!(b.live(ScriptedObject::Event), 1);
    rt.queue_destroy(q2).unwrap();
    assert!(matches!(rt.shutdown().unwrap(), Shutdown::TornDown(_)));
    assert_eq!(b.live_total(), 0);
}

fn reset_blocking() {
    RELEASE.store(false, Ordering::SeqCst);
    ENTERED.store(0, Ordering::SeqCst);
}

fn init_while_initializing_waits_and_then_references() {
    reset_blocking();
    let (b, rt) = scripted_runtime(1);
    b.set_hook(Some(|op| block_in(op, BackendOp::Init)));
    let first = thread::spawn(move || rt.init());
    wait_entered(1);
    assert_eq!(rt.state(), State::Initializing);
    let second = thread::spawn(move || rt.init());
    thread::sleep(Duration::from_millis(50));
    assert!(!second.is_finished(), "init waits while another thread initialises");
    assert_eq!(code(rt.platform_count()), ErrorCode::Uninitialized, "calls fail while initializing");
    RELEASE.store(true, Ordering::SeqCst);
    first.join().unwrap().unwrap();
    second.join().unwrap().unwrap();
    assert_eq!(rt.state(), State::Ready(2));
    assert_eq!(ENTERED.load(Ordering::SeqCst), 1, "backends initialised once");
    b.set_hook(None);
}

fn final_shutdown_waits_for_calls_in_flight() {
    reset_blocking();
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    let q = rt.queue_create(device(rt, 0).unwrap()).unwrap();
    b.set_hook(Some(|op| block_in(op, BackendOp::QueueSynchronize)));
    let in_flight = thread::spawn(move || rt.queue_synchronize(q));
    wait_entered(1);
    let shutdown = thread::spawn(move || rt.shutdown());
    while rt.state() != State::ShuttingDown {
        thread::yield_now();
    }
    assert_eq!(code(rt.queue_query(q)), ErrorCode::Uninitialized, "new calls are turned away");
    thread::sleep(Duration::from_millis(50));
    assert!(!shutdown.is_finished(), "teardown waits for the call in flight");
    assert_eq!(b.live(ScriptedObject::Queue), 1);
    RELEASE.store(true, Ordering::SeqCst);
    in_flight.join().unwrap().unwrap();
    assert!(matches!(shutdown.join().unwrap().unwrap(), Shutdown::TornDown(_)));
    assert_eq!(b.live_total(), 0);
    b.set_hook(None);
}

fn init_racing_final_shutdown_reinitialises_afterwards() {
    reset_blocking();
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    b.set_hook(Some(|op| block_in(op, BackendOp::Deinit)));
    let shutdown = thread::spawn(move || rt.shutdown());
    wait_entered(1);
    let init = thread::spawn(move || rt.init());
    thread::sleep(Duration::from_millis(50));
    assert!(!init.is_finished(), "init waits for the final shutdown");
    RELEASE.store(true, Ordering::SeqCst);
    assert!(matches!(shutdown.join().unwrap().unwrap(), Shutdown::TornDown(_)));
    init.join().unwrap().unwrap();
    assert_eq!(rt.state(), State::Ready(1));
    assert!(b.is_up(), "the backend was initialised again");
    assert_eq!(b.live(ScriptedObject::Device), 1);
    b.set_hook(None);
}

#[test]
fn teardown_runs_every_step_past_failures_and_reports_them() {
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    let mems: Vec<_> = (0..3).map(|_| rt.mem_alloc(d, MemKind::Device, 16).unwrap()).collect();
    rt.queue_create(d).unwrap();
    // The second free of the teardown fails; everything else must still be released.
    let frees_before = 1 /* queue sync */ + 1 /* queue destroy */ + 1 /* first free */;
    b.fail_call(frees_before, BackendError::new(ErrorCode::BackendFailure, 77, "free failed"));
    let Shutdown::TornDown(_) = rt.shutdown().unwrap() else { panic!() };
    let report = rt.last_teardown_report().unwrap();
    assert_eq!(report.failure_count(), 1, "{report}");
    let f = report.failures[0];
    assert_eq!((f.step, f.native, f.code), (ordo_core::TeardownStep::FreeMemory, 77, ErrorCode::BackendFailure));
    // Memory is reported by the address the user knows, not by an internal handle.
    assert_eq!((f.address, f.handle), (mems[1].0, ordo_core::RawHandle::NULL));
    assert_eq!(report.released_of(ordo_core::ObjectKind::Allocation), 3);
    assert_eq!(b.live_total(), 0);
    assert_eq!(b.double_releases(), 0);
}

#[test]
fn released_by_driver_is_counted_not_reported() {
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    rt.program_load(device(rt, 0).unwrap(), b"image").unwrap();
    b.fail_next(BackendOp::ProgramUnload, BackendError::released(4, "CUDA_ERROR_DEINITIALIZED"));
    let Shutdown::TornDown(_) = rt.shutdown().unwrap() else { panic!() };
    let report = rt.last_teardown_report().unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.released_by_driver, 1);
    assert_eq!(b.live_total(), 0);
}

#[test]
fn teardown_order_is_the_documented_one() {
    let (b, rt) = scripted_runtime(2);
    rt.init().unwrap();
    let (d0, d1) = (device(rt, 0).unwrap(), device(rt, 1).unwrap());
    let m0 = rt.mem_alloc(d0, MemKind::Device, 8).unwrap();
    let q0 = rt.queue_create(d0).unwrap();
    let q1 = rt.queue_create(d1).unwrap();
    let m1a = rt.mem_alloc(d1, MemKind::Device, 8).unwrap();
    let p1 = rt.program_load(d1, b"x").unwrap();
    let e1 = rt.event_create(d1).unwrap();
    let m1b = rt.mem_alloc(d1, MemKind::Host, 8).unwrap();
    let q1b = rt.queue_create(d1).unwrap();
    let mut steps = Vec::new();
    rt.shutdown_observed(&mut |s| steps.push((s.device, s.step, s.handle, s.address))).unwrap();
    use ordo_core::TeardownStep::*;
    let got: Vec<_> = steps.iter().map(|&(d, s, h, a)| (d, s, if a != 0 { a } else { h.0 })).collect();
    let want = vec![
        // Every queue of every device is idle before anything is released.
        (0, SynchronizeQueue, q0.to_raw()),
        (1, SynchronizeQueue, q1.to_raw()),
        (1, SynchronizeQueue, q1b.to_raw()),
        (1, DestroyEvent, e1.to_raw()),
        (1, DestroyQueue, q1b.to_raw()),
        (1, DestroyQueue, q1.to_raw()),
        (1, UnloadProgram, p1.to_raw()),
        (1, FreeMemory, m1b.0),
        (1, FreeMemory, m1a.0),
        (1, ReleaseDevice, d1.to_raw()),
        (0, DestroyQueue, q0.to_raw()),
        (0, FreeMemory, m0.0),
        (0, ReleaseDevice, d0.to_raw()),
        (u32::MAX, DeinitBackend, steps[13].2.0),
    ];
    assert_eq!(got, want);
    assert_eq!(b.live_total(), 0);
}
