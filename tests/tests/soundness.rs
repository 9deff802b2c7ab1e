//! The soundness promises: a panic inside init or teardown leaves a defined state; callbacks that
//! call back into the lifecycle get `Busy` instead of a deadlock; one backend serves one runtime;
//! a released handle is never accepted again; the bounded shutdown of exit paths.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use ordo_core::host::{HostArena, HostBackend, HostProgram, HostThread};
use ordo_core::{
    BackendOp, Error, ErrorCode, KernelArgs, LaunchDims, MemKind, ObjectKind, Runtime, Shutdown, State, StepOutcome,
    TeardownStep,
};
use ordo_testing::scripted::ScriptedBackend;
use ordo_tests::{code, device, host_backend, runtime, scripted, scripted_runtime};

fn panic_in_init(op: BackendOp) {
    if op == BackendOp::Init {
        panic!("planted panic in a backend's init");
    }
}

fn panic_in_free(op: BackendOp) {
    if op == BackendOp::MemFree {
        panic!("planted panic in a backend's teardown");
    }
}

#[test]
fn a_backend_panicking_in_init_rolls_back_and_the_next_init_works() {
    let (a, b) = (scripted(1), scripted(1));
    let rt = runtime(vec![a, b]);
    b.set_hook(Some(panic_in_init));
    let err = rt.init().unwrap_err();
    assert_eq!(err.code, ErrorCode::Internal, "{err}");
    assert_eq!(rt.state(), State::Uninit, "not stuck in Initializing");
    assert!(!a.is_up() && a.live_total() == 0, "the backend already up was rolled back");
    b.set_hook(None);
    rt.init().unwrap();
    assert_eq!(rt.platform_count().unwrap(), 2);
    rt.shutdown().unwrap();
}

#[test]
fn a_backend_panicking_in_teardown_is_recorded_and_the_teardown_completes() {
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    let m = rt.mem_alloc(d, MemKind::Device, 64).unwrap();
    rt.queue_create(d).unwrap();
    b.set_hook(Some(panic_in_free));
    let Shutdown::TornDown(summary) = rt.shutdown().unwrap() else { panic!() };
    b.set_hook(None);
    assert_eq!(summary.failures, 1);
    let report = rt.last_teardown_report().unwrap();
    let f = report.failures[0];
    assert_eq!((f.step, f.code, f.address), (TeardownStep::FreeMemory, ErrorCode::Internal, m.0));
    assert_eq!(rt.state(), State::Uninit);
    assert_eq!(report.released_of(ObjectKind::Device), 1, "the steps after the panic ran");
    rt.init().unwrap();
    rt.shutdown().unwrap();
}

#[test]
fn a_panicking_observer_is_recorded_and_the_teardown_completes() {
    let (b, rt) = scripted_runtime(2);
    rt.init().unwrap();
    let d = device(rt, 1).unwrap();
    rt.queue_create(d).unwrap();
    rt.mem_alloc(d, MemKind::Device, 64).unwrap();
    let mut seen = 0;
    let outcome = rt.shutdown_observed(&mut |_| {
        seen += 1;
        if seen == 2 {
            panic!("planted panic in an observer");
        }
    });
    let Ok(Shutdown::TornDown(summary)) = outcome else { panic!("{outcome:?}") };
    assert_eq!(seen, 2, "an observer that panicked is not called again");
    assert_eq!(summary.failures, 1);
    let report = rt.last_teardown_report().unwrap();
    assert_eq!(report.failures[0].code, ErrorCode::Internal);
    assert_eq!(b.live_total(), 0, "every object was still released");
    assert_eq!(rt.state(), State::Uninit);
    rt.init().unwrap();
    rt.shutdown().unwrap();
}

#[test]
fn an_observer_calling_back_into_the_lifecycle_gets_busy_not_a_deadlock() {
    let (_, rt) = scripted_runtime(1);
    rt.init().unwrap();
    rt.queue_create(device(rt, 0).unwrap()).unwrap();
    let mut answers = Vec::new();
    rt.shutdown_observed(&mut |step| {
        if step.step == TeardownStep::SynchronizeQueue {
            answers.push(rt.init().map_err(|e| e.code));
            answers.push(rt.shutdown().map(|_| ()).map_err(|e| e.code));
            answers.push(rt.platform_count().map(|_| ()).map_err(|e| e.code));
        }
    })
    .unwrap();
    assert_eq!(
        answers,
        [Err(ErrorCode::Busy), Err(ErrorCode::Busy), Err(ErrorCode::Uninitialized)],
        "a wait for the teardown running the observer is refused"
    );
    assert_eq!(rt.state(), State::Uninit);
}

/// The runtime the `reenter` kernel calls into.
static REENTERED: OnceLock<&'static Runtime> = OnceLock::new();
static REENTRY_ANSWERS: Mutex<Vec<ErrorCode>> = Mutex::new(Vec::new());

/// A host kernel that calls back into its runtime: each call that would wait for the launch
/// itself must fail with `Busy`.
///
/// # Safety
/// Takes no arguments.
unsafe fn reenter(_: &HostThread, _: &KernelArgs<'_>) -> Result<(), Error> {
    let rt = REENTERED.get().expect("set by the test");
    let d = device(rt, 0).unwrap();
    let answer = |r: ordo_core::Result<()>| r.err().map_or(ErrorCode::Success, |e| e.code);
    let mut answers = REENTRY_ANSWERS.lock().unwrap();
    answers.push(answer(rt.mem_alloc(d, MemKind::Device, 64).map(|_| ())));
    answers.push(answer(rt.shutdown().map(|_| ())));
    answers.push(answer(rt.copy_to_device(ordo_core::DevicePtr(8), &[])));
    let mut buf = [0u8; 4];
    let m = *MEM.get().unwrap();
    answers.push(answer(rt.copy_from_device(&mut buf, m)));
    Ok(())
}

static MEM: OnceLock<ordo_core::DevicePtr> = OnceLock::new();

#[test]
fn a_host_kernel_calling_back_into_ordo_gets_busy_not_a_deadlock() {
    static KERNELS: [ordo_core::host::HostKernel; 1] =
        [ordo_core::host::HostKernel { name: "reenter", run: reenter, params: &[], extents_required: false }];
    static PROGRAMS: [HostProgram; 1] = [HostProgram { name: "reentry", kernels: &KERNELS }];
    static ARENA: HostArena<{ 1 << 16 }> = HostArena::new();
    static HOST: HostBackend = HostBackend::new(&ARENA, &PROGRAMS, None);
    static BACKENDS: [&dyn ordo_core::Backend; 1] = [&HOST];
    ordo_core::static_runtime!(static RT = &BACKENDS);
    assert!(REENTERED.set(&RT).is_ok());
    RT.init().unwrap();
    let d = device(&RT, 0).unwrap();
    MEM.set(RT.mem_alloc(d, MemKind::Device, 64).unwrap()).unwrap();
    let q = RT.queue_create(d).unwrap();
    let k = RT.kernel_get(RT.program_load(d, b"reentry").unwrap(), "reenter").unwrap();
    // SAFETY: the kernel takes no arguments.
    unsafe { RT.launch(q, k, &LaunchDims::linear(1, 1), &KernelArgs::EMPTY) }.unwrap();
    let answers = REENTRY_ANSWERS.lock().unwrap().clone();
    // Create/destroy and the final shutdown would wait for the launch; a zero-byte copy does no
    // work; a real copy would wait for the host device the launch holds.
    assert_eq!(answers, [ErrorCode::Busy, ErrorCode::Busy, ErrorCode::Success, ErrorCode::Busy]);
    assert_eq!(RT.state(), State::Ready(1));
    RT.shutdown().unwrap();
}

#[test]
fn one_backend_serves_one_runtime() {
    let host = host_backend();
    let (rt1, rt2) = (runtime(vec![host]), runtime(vec![host]));
    rt1.init().unwrap();
    rt2.init().unwrap();
    let info = rt2.platform_info(rt2.platform(0).unwrap()).unwrap();
    assert_eq!(info.absent.map(|e| e.code), Some(ErrorCode::Busy), "the second runtime finds it taken");
    assert!(info.is_unavailable());
    // The first runtime's memory is its own: the second cannot allocate the same bytes.
    let m = rt1.mem_alloc(device(rt1, 0).unwrap(), MemKind::Device, 64).unwrap();
    rt1.copy_to_device(m, &[7; 64]).unwrap();
    rt2.shutdown().unwrap();
    let mut back = [0; 64];
    rt1.copy_from_device(&mut back, m).unwrap();
    assert_eq!(back, [7; 64], "the second runtime's teardown did not touch the first's backend");
    rt1.shutdown().unwrap();
    rt2.init().unwrap();
    assert!(rt2.platform_info(rt2.platform(0).unwrap()).unwrap().absent.is_none(), "free again");
    rt2.shutdown().unwrap();
}

#[test]
fn a_released_handle_is_never_accepted_again_and_an_exhausted_slot_is_retired() {
    let (_, rt) = scripted_runtime(1);
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    // Two generations left in every free queue slot: create/destroy cycles run every slot to
    // the end of its generations (2 objects per slot), and each slot is then retired.
    rt.age_free_slots_for_testing(ObjectKind::Queue, u32::MAX - 1).unwrap();
    let capacity = ordo_core::capacity::MAX_QUEUES;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..2 * capacity {
        let q = rt.queue_create(d).unwrap();
        assert!(seen.insert(q), "handle {q:?} was issued twice");
        rt.queue_destroy(q).unwrap();
    }
    assert_eq!(code(rt.queue_create(d)), ErrorCode::OutOfResources, "every queue slot is retired");
    for &q in &seen {
        assert_eq!(code(rt.queue_synchronize(q)), ErrorCode::InvalidHandle);
    }
    // Other kinds are unaffected; a teardown does not revive retired slots.
    rt.event_create(d).unwrap();
    rt.shutdown().unwrap();
    rt.init().unwrap();
    assert_eq!(code(rt.queue_create(device(rt, 0).unwrap())), ErrorCode::OutOfResources);
    rt.shutdown().unwrap();
}

static HOLD: AtomicBool = AtomicBool::new(false);
static HELD: AtomicU32 = AtomicU32::new(0);

fn hold_in_sync(op: BackendOp) {
    if op == BackendOp::QueueSynchronize && HOLD.load(Ordering::SeqCst) {
        HELD.fetch_add(1, Ordering::SeqCst);
        while HOLD.load(Ordering::SeqCst) {
            thread::yield_now();
        }
    }
}

#[test]
fn shutdown_all_gives_up_on_calls_that_do_not_return_and_changes_nothing() {
    let b: &'static ScriptedBackend = scripted(1);
    let rt = runtime(vec![b]);
    rt.init().unwrap();
    rt.init().unwrap();
    let q = rt.queue_create(device(rt, 0).unwrap()).unwrap();
    b.set_hook(Some(hold_in_sync));
    HOLD.store(true, Ordering::SeqCst);
    let stuck = thread::spawn(move || rt.queue_synchronize(q));
    while HELD.load(Ordering::SeqCst) == 0 {
        thread::yield_now();
    }
    let deadline = Instant::now() + Duration::from_millis(100);
    let err = rt.shutdown_all(&mut || Instant::now() < deadline).unwrap_err();
    assert_eq!(err.code, ErrorCode::Busy);
    assert_eq!(rt.state(), State::Ready(2), "nothing changed: both references still held");
    assert_eq!(b.live_total(), 2, "nothing torn down");
    HOLD.store(false, Ordering::SeqCst);
    stuck.join().unwrap().unwrap();
    b.set_hook(None);
    let summary = rt.shutdown_all(&mut || true).unwrap().expect("torn down");
    assert!(summary.is_clean());
    assert_eq!(rt.shutdown_all(&mut || true).unwrap(), None, "nothing left to shut down");
    assert_eq!(b.live_total(), 0);
}

#[test]
fn teardown_events_report_released_by_driver_as_such() {
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    rt.queue_create(device(rt, 0).unwrap()).unwrap();
    b.fail_next(BackendOp::QueueDestroy, ordo_core::BackendError::released(4, "gone"));
    let mut outcomes = Vec::new();
    rt.shutdown_observed(&mut |e| outcomes.push((e.step, e.outcome))).unwrap();
    assert!(outcomes.contains(&(TeardownStep::DestroyQueue, StepOutcome::ReleasedByDriver)));
}

#[test]
fn a_platform_with_more_devices_than_the_table_holds_is_unavailable_and_released() {
    let (a, big) = (scripted(1), scripted(ordo_core::capacity::MAX_DEVICES as u32 + 1));
    let rt = runtime(vec![a, big]);
    rt.init().unwrap();
    let info = rt.platform_info(rt.platform(1).unwrap()).unwrap();
    assert_eq!(info.absent.map(|e| e.code), Some(ErrorCode::OutOfResources));
    assert!(info.is_unavailable() && info.device_count == 0);
    assert!(!big.is_up() && big.live_total() == 0, "its devices were released and it was deinitialised");
    assert_eq!(big.double_releases(), 0);
    rt.queue_create(device(rt, 0).unwrap()).unwrap();
    rt.shutdown().unwrap();
    assert_eq!(a.live_total(), 0);
}

static WAIT_STEPS: AtomicU32 = AtomicU32::new(0);
static HOLD_INIT: AtomicBool = AtomicBool::new(false);
static IN_INIT: AtomicBool = AtomicBool::new(false);

fn counting_wait_step() {
    WAIT_STEPS.fetch_add(1, Ordering::SeqCst);
    thread::yield_now();
}

fn hold_in_init(op: BackendOp) {
    if op == BackendOp::Init {
        IN_INIT.store(true, Ordering::SeqCst);
        while HOLD_INIT.load(Ordering::SeqCst) {
            thread::yield_now();
        }
    }
}

#[test]
fn waits_take_the_hosts_wait_step() {
    let b: &'static ScriptedBackend = scripted(1);
    let rt = runtime(vec![b]);
    b.set_hook(Some(hold_in_init));
    HOLD_INIT.store(true, Ordering::SeqCst);
    let first = thread::spawn(move || rt.init());
    while !IN_INIT.load(Ordering::SeqCst) {
        thread::yield_now();
    }
    ordo_core::set_wait_strategy(Some(counting_wait_step));
    let second = thread::spawn(move || rt.init());
    while WAIT_STEPS.load(Ordering::SeqCst) == 0 {
        thread::yield_now();
    }
    HOLD_INIT.store(false, Ordering::SeqCst);
    first.join().unwrap().unwrap();
    second.join().unwrap().unwrap();
    ordo_core::set_wait_strategy(None);
    b.set_hook(None);
    assert_eq!(rt.state(), State::Ready(2), "the second init waited (taking the host's step), then referenced");
    assert!(WAIT_STEPS.load(Ordering::SeqCst) > 0);
}
