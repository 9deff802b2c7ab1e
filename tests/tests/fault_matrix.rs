//! The fault matrix: an init -> work -> teardown scenario over two scripted platforms of two
//! devices each, that calls every driver-facing method of the backend trait (`BackendOp::ALL`:
//! both queue flavours, host registration, copies, fills and pattern fills, events, programs,
//! kernels and their parameter queries, globals, image checks, launches with and without
//! clusters, host functions). It runs once per backend call k and error class, with call k
//! failing. Whatever fails, the runtime ends `Uninit`, every object each backend handed out is
//! released exactly once, no call reaches a backend outside init, and a failure during teardown
//! is named in the report (or counted as released by the driver).

use std::collections::HashSet;
use std::ffi::c_void;
use std::sync::Mutex;

use ordo_core::{
    Backend, BackendError, BackendOp, DeviceInfo, ErrorCode, FillValue, KernelArgs, LaunchDims, MemKind, Result,
    Runtime, Shutdown, State, TeardownReport,
};
use ordo_testing::scripted::ScriptedBackend;
use ordo_tests::runtime;

/// The ops each platform's backend was called with, in order (the matrix test's hooks write here).
static SEQUENCE: Mutex<[Vec<BackendOp>; 2]> = Mutex::new([Vec::new(), Vec::new()]);

fn record_0(op: BackendOp) {
    SEQUENCE.lock().unwrap()[0].push(op);
}

fn record_1(op: BackendOp) {
    SEQUENCE.lock().unwrap()[1].push(op);
}

/// Two scripted platforms of two devices each, with disjoint address ranges (`record`: their
/// hooks note every call in `SEQUENCE`).
fn two_platforms(record: bool) -> ([&'static ScriptedBackend; 2], &'static Runtime) {
    let a: &'static ScriptedBackend = Box::leak(Box::new(ScriptedBackend::with_address_base(2, 0x7000_0000_0000)));
    let b: &'static ScriptedBackend = Box::leak(Box::new(ScriptedBackend::with_address_base(2, 0x7100_0000_0000)));
    if record {
        a.set_hook(Some(record_0));
        b.set_hook(Some(record_1));
    }
    let backends: Vec<&'static dyn Backend> = vec![a, b];
    ([a, b], runtime(backends))
}

extern "C" fn count_call(data: *mut c_void) {
    // SAFETY: `data` is the `u32` counter `work` passes, alive for the call.
    unsafe { *data.cast::<u32>() += 1 };
}

/// The work between init and teardown. Stops at the first error (as a careful caller would) and
/// leaves what it created to the teardown.
fn work(rt: &Runtime, host: &mut [u8]) -> Result<()> {
    let (p0, p1) = (rt.platform(0)?, rt.platform(1)?);
    let (d0, d1, e0) = (rt.device(p0, 0)?, rt.device(p0, 1)?, rt.device(p1, 0)?);
    let q = rt.queue_create(d0)?;
    let qi = rt.queue_create_independent(e0)?;
    let ev = rt.event_create(d0)?;
    assert!(rt.program_check(d0, b"image")?);
    let p = rt.program_load(d0, b"image")?;
    let k = rt.kernel_get(p, "kernel")?;
    assert_eq!(rt.kernel_param_count(k)?, 1);
    assert_eq!(rt.kernel_param_layout(k)?.len(), 1);
    assert_eq!(rt.kernel_optimal_block_size(k, 0)?, 256);
    let (_global, at, size) = rt.program_global(p, "counter")?;
    rt.fill(at, FillValue::U8(0), size, None)?;
    let a = rt.mem_alloc(d0, MemKind::Device, 256)?;
    let b = rt.mem_alloc(d1, MemKind::Managed, 256)?;
    let c = rt.mem_alloc(e0, MemKind::Device, 256)?;
    // SAFETY: `host` outlives the registration (the teardown unregisters it before `host` goes).
    let registered = unsafe { rt.host_register(d0, host.as_mut_ptr(), host.len()) }?;
    let q1 = rt.queue_create(d1)?;
    rt.copy_to_device(a, &[1u8; 256])?;
    rt.fill(b, FillValue::U32(7), 64, Some(q1))?;
    rt.fill_pattern(c, &[1, 2, 3], 255, Some(qi))?;
    let n = 64u32;
    let params = [&n as *const u32 as *mut c_void];
    let args = KernelArgs::new(&params, &[4])?;
    // SAFETY: the scripted backend reads no argument.
    unsafe { rt.launch(q, k, &LaunchDims::linear(2, 64), &args)? };
    // SAFETY: as above.
    unsafe { rt.launch_cluster(q, k, &LaunchDims::linear(2, 64), [2, 1, 1], &args)? };
    let mut calls = 0u32;
    // SAFETY: `count_call` may run on any thread, once; `calls` outlives the queue's work (the
    // queue is synchronised below, and the scripted backend runs the function at once).
    unsafe { rt.queue_host_function(q, count_call, (&raw mut calls).cast())? };
    rt.event_record(ev, q)?;
    let ev2 = rt.event_create(d0)?;
    rt.event_record(ev2, q)?;
    rt.queue_wait_event(q1, ev)?;
    // Across devices: a peer copy on a queue of one of them and one without a queue, and a queue
    // of another platform waiting for the event (on the host).
    rt.copy_device(b, a, 128, Some(q1))?;
    rt.copy_device(a, b, 64, None)?;
    rt.queue_wait_event(qi, ev)?;
    // Between the two platforms: staged through page-locked memory of the source's, after the
    // queue's earlier work.
    rt.copy_device(c, a, 256, Some(q))?;
    // Memory in queue order: one freed on its queue (kept by the cache), taken again from the
    // cache, freed again and given back by the queue's trim; one freed and left cached for the
    // teardown; one left live for the teardown.
    let (_, ordered) = rt.mem_alloc_on(q, 128)?;
    rt.fill(ordered, FillValue::U8(3), 128, Some(q))?;
    rt.mem_free_on(q, ordered)?;
    let (_, again) = rt.mem_alloc_on(q, 128)?;
    rt.mem_free_on(q, again)?;
    rt.queue_trim(q)?;
    let (_, cached) = rt.mem_alloc_on(q1, 32)?;
    rt.mem_free_on(q1, cached)?;
    rt.mem_alloc_on(q1, 64)?;
    // A retained reference to the program, given back (the program stays for the teardown).
    rt.program_retain(p)?;
    rt.program_unload(p)?;
    rt.queue_synchronize(q)?;
    rt.queue_query(q1)?;
    rt.event_synchronize(ev2)?;
    rt.event_query(ev)?;
    rt.event_elapsed_ms(ev, ev2)?;
    rt.device_info(e0, DeviceInfo::Name)?;
    let tensor = ordo_tests::tensor_map(a.0, 7, &[64]);
    assert_eq!(rt.tensor_map_encode_tiled(d0, &tensor)?[0], a.0);
    assert_eq!(calls, 1);
    let spare = rt.mem_alloc(d0, MemKind::Host, 64)?;
    rt.mem_free(spare)?;
    rt.host_unregister(registered)?;
    // SAFETY: as above; registered again for the teardown to release.
    unsafe { rt.host_register(d0, host.as_mut_ptr(), host.len()) }?;
    let p2 = rt.program_load(d1, b"image2")?;
    rt.program_unload(p2)?;
    let p3 = rt.program_load(e0, b"image3")?;
    rt.kernel_get(p3, "kernel")?;
    // Communicators: two made together (a collective over both, one aborted, the other left to
    // the teardown's finalize and destroy), one from a unique id (destroyed), and a synchronise
    // that reads their asynchronous errors.
    let mut comms = [ordo_core::Communicator::NULL; 2];
    rt.comm_create_all(&[d0, d1], &mut comms)?;
    let part = |comm, queue, buf| ordo_core::Collective {
        comm,
        queue,
        kind: ordo_core::CollectiveKind::AllReduce,
        dtype: ordo_core::DataType::F32,
        op: ordo_core::ReduceOp::Sum,
        count: 16,
        peer: 0,
        send: buf,
        recv: buf,
    };
    rt.collective(&[part(comms[0], q, a), part(comms[1], q1, b)])?;
    rt.queue_synchronize(q)?;
    let id = rt.comm_unique_id(p1)?;
    let solo = rt.comm_create_rank(e0, &id, 0, 1, 1000)?;
    rt.comm_destroy(solo)?;
    rt.comm_abort(comms[1])?;
    // A graph captured, launched and destroyed; another left for the teardown, and a capture
    // left open for it.
    rt.queue_begin_capture(q)?;
    // SAFETY: the scripted backend reads no argument. (A cluster launch: the scripted fast
    // launch functions, which `rt.launch` may take, list nothing in captures.)
    unsafe { rt.launch_cluster(q, k, &LaunchDims::linear(2, 64), [2, 1, 1], &args)? };
    let graph = rt.queue_end_capture(q)?;
    // SAFETY: as above.
    unsafe { rt.graph_set_args(graph, 0, k, &args) }?;
    // SAFETY: the scripted backend runs nothing.
    unsafe { rt.graph_launch(graph, q) }?;
    rt.graph_destroy(graph)?;
    rt.queue_begin_capture(q1)?;
    rt.fill(b, FillValue::U32(2), 64, Some(q1))?;
    rt.queue_end_capture(q1)?;
    rt.queue_begin_capture(q1)?;
    Ok(())
}

/// Runs init -> work -> final shutdown; returns the init error or the teardown report.
fn scenario(rt: &Runtime) -> std::result::Result<TeardownReport, ordo_core::Error> {
    let mut host = vec![0u8; 4096];
    rt.init()?;
    let _ = work(rt, &mut host);
    match rt.shutdown() {
        Ok(Shutdown::TornDown(summary)) => {
            let report = rt.last_teardown_report().expect("a final teardown keeps its report");
            assert_eq!(report.summary(), summary);
            Ok(report)
        }
        other => panic!("expected the final teardown, got {other:?}"),
    }
}

fn check_clean_end(backends: &[&ScriptedBackend], rt: &Runtime, what: &str) {
    assert_eq!(rt.state(), State::Uninit, "{what}: the runtime ends uninitialised");
    for (i, b) in backends.iter().enumerate() {
        assert_eq!(b.live_total(), 0, "{what}: every object of platform {i} released");
        assert_eq!(b.double_releases(), 0, "{what}: nothing of platform {i} released twice");
        assert_eq!(b.calls_while_down(), 0, "{what}: no call to platform {i} outside init");
        assert!(!b.is_up(), "{what}: platform {i} was deinitialised");
    }
}

fn reset(backends: &[&ScriptedBackend]) {
    for b in backends {
        b.reset();
    }
}

#[test]
fn every_call_failing_with_every_error_class() {
    let (backends, rt) = two_platforms(true);
    // The fault-free scenario: its calls per platform, and every driver-facing op among them.
    let report = scenario(rt).expect("the fault-free scenario succeeds");
    assert!(report.is_clean(), "{report}");
    let sequence = std::mem::take(&mut *SEQUENCE.lock().unwrap());
    for b in backends {
        b.set_hook(None);
    }
    // Every call index of each platform fails below, so every op these sequences hold is failed
    // on purpose with every error class, on both platforms.
    let seen: HashSet<BackendOp> = sequence.iter().flatten().copied().collect();
    let missing: Vec<_> = BackendOp::ALL.iter().filter(|op| !seen.contains(op)).collect();
    assert!(missing.is_empty(), "the scenario calls every backend op; not: {missing:?}");
    let calls = backends.map(|b| b.calls());
    assert_eq!(calls.map(|n| n as usize), [sequence[0].len(), sequence[1].len()]);
    assert!(calls.iter().all(|&n| n > 10), "the scenario makes {calls:?} backend calls");
    check_clean_end(&backends, rt, "fault-free run");

    let classes = [
        BackendError::new(ErrorCode::BackendFailure, 700, "injected failure"),
        BackendError::new(ErrorCode::DeviceLost, 701, "injected device loss"),
        BackendError::new(ErrorCode::OutOfResources, 702, "injected exhaustion"),
        BackendError::released(703, "injected already-released"),
    ];
    let mut teardown_failures_seen = 0;
    for (platform, b) in backends.iter().enumerate() {
        for k in 0..calls[platform] {
            for error in classes {
                reset(&backends);
                b.fail_call(k, error);
                let op = sequence[platform][k as usize];
                let what = format!("platform {platform} call {k} ({op:?}) failing with {}", error.message);
                match scenario(rt) {
                    Err(e) => {
                        // Only init itself can fail the scenario before work starts.
                        assert_eq!(k, 0, "{what}: init failed at a later call: {e}");
                        assert_eq!(e.native, error.native, "{what}");
                    }
                    Ok(report) => {
                        let fired = !b.disarm();
                        assert!(fired, "{what}: the scenario made fewer calls than the fault-free run");
                        // A failure inside the teardown is reported (or counted as released by
                        // the driver); one during the work surfaced as that call's error instead.
                        let named = report.failures.iter().any(|f| f.native == error.native);
                        if error.released_by_driver {
                            assert!(!named, "{what}: released-by-driver is not a failure\n{report}");
                        } else if named {
                            teardown_failures_seen += 1;
                            assert_eq!(report.failure_count(), 1, "{what}: exactly the injected failure\n{report}");
                        } else {
                            assert!(report.is_clean(), "{what}: a failure that is not the injected one\n{report}");
                        }
                    }
                }
                check_clean_end(&backends, rt, &what);
            }
        }
    }
    assert!(teardown_failures_seen >= 20, "faults landed in the teardown {teardown_failures_seen} times");
}

#[test]
fn released_by_driver_during_teardown_is_counted_for_every_teardown_call() {
    let (backends, rt) = two_platforms(false);
    for (platform, b) in backends.iter().enumerate() {
        reset(&backends);
        let mut host = vec![0u8; 4096];
        rt.init().unwrap();
        work(rt, &mut host).unwrap();
        let before_teardown = b.calls();
        rt.shutdown().unwrap();
        let teardown_calls = b.calls() - before_teardown;
        assert!(teardown_calls > 5, "platform {platform}: {teardown_calls} teardown calls");
        for k in 0..teardown_calls {
            reset(&backends);
            rt.init().unwrap();
            work(rt, &mut host).unwrap();
            b.fail_call(k, BackendError::released(4, "CUDA_ERROR_DEINITIALIZED"));
            let Shutdown::TornDown(_) = rt.shutdown().unwrap() else { panic!() };
            let report = rt.last_teardown_report().unwrap();
            assert!(report.is_clean(), "platform {platform} teardown call {k}: {report}");
            assert_eq!(report.released_by_driver, 1, "platform {platform} teardown call {k}");
            check_clean_end(&backends, rt, &format!("platform {platform} teardown call {k}"));
        }
    }
}
