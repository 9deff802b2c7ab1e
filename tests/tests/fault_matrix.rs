//! The fault matrix: an init -> work -> teardown scenario over the scripted backend, run once per
//! backend call k and error class, with call k failing. Whatever fails, the runtime ends `Uninit`,
//! every object the backend handed out is released exactly once, no call reaches the backend
//! outside init, and a failure during teardown is named in the report (or counted as released by
//! the driver).

use std::ffi::c_void;

use ordo_core::{
    BackendError, ErrorCode, FillValue, KernelArgs, LaunchDims, MemKind, Result, Runtime, Shutdown, State,
    TeardownReport,
};
use ordo_testing::scripted::ScriptedBackend;
use ordo_tests::{device, scripted_runtime};

/// The work between init and teardown. Stops at the first error (as a careful caller would) and
/// leaves what it created to the teardown.
fn work(rt: &Runtime) -> Result<()> {
    let (d0, d1) = (device(rt, 0)?, device(rt, 1)?);
    let q = rt.queue_create(d0)?;
    let e = rt.event_create(d0)?;
    let p = rt.program_load(d0, b"image")?;
    let k = rt.kernel_get(p, "kernel")?;
    let a = rt.mem_alloc(d0, MemKind::Device, 256)?;
    let b = rt.mem_alloc(d1, MemKind::Managed, 256)?;
    let q1 = rt.queue_create(d1)?;
    rt.copy_to_device(a, &[1u8; 256])?;
    rt.fill(b, FillValue::U32(7), 64, Some(q1))?;
    let n = 64u32;
    let params = [&n as *const u32 as *mut c_void];
    // SAFETY: the scripted backend reads no argument.
    unsafe { rt.launch(q, k, &LaunchDims::linear(1, 64), &KernelArgs::new(&params, &[4])?)? };
    rt.event_record(e, q)?;
    rt.queue_synchronize(q)?;
    let spare = rt.mem_alloc(d0, MemKind::Host, 64)?;
    rt.mem_free(spare)?;
    let p2 = rt.program_load(d1, b"image2")?;
    rt.program_unload(p2)?;
    Ok(())
}

/// Runs init -> work -> final shutdown; returns the init error or the teardown report.
fn scenario(rt: &Runtime) -> std::result::Result<TeardownReport, ordo_core::Error> {
    rt.init()?;
    let _ = work(rt);
    match rt.shutdown() {
        Ok(Shutdown::TornDown(summary)) => {
            let report = rt.last_teardown_report().expect("a final teardown keeps its report");
            assert_eq!(report.summary(), summary);
            Ok(report)
        }
        other => panic!("expected the final teardown, got {other:?}"),
    }
}

fn check_clean_end(b: &ScriptedBackend, rt: &Runtime, what: &str) {
    assert_eq!(rt.state(), State::Uninit, "{what}: the runtime ends uninitialised");
    assert_eq!(b.live_total(), 0, "{what}: every object released");
    assert_eq!(b.double_releases(), 0, "{what}: nothing released twice");
    assert_eq!(b.calls_while_down(), 0, "{what}: no call outside init");
    assert!(!b.is_up(), "{what}: the backend was deinitialised");
}

#[test]
fn every_call_failing_with_every_error_class() {
    let (b, rt) = scripted_runtime(2);
    // The number of backend calls of the fault-free scenario.
    let report = scenario(rt).expect("the fault-free scenario succeeds");
    assert!(report.is_clean());
    let total = b.calls();
    assert!(total > 20, "the scenario makes {total} backend calls");
    check_clean_end(b, rt, "fault-free run");

    let classes = [
        BackendError::new(ErrorCode::BackendFailure, 700, "injected failure"),
        BackendError::new(ErrorCode::DeviceLost, 701, "injected device loss"),
        BackendError::released(702, "injected already-released"),
    ];
    let mut teardown_failures_seen = 0;
    for k in 0..total {
        for error in classes {
            b.reset();
            b.fail_call(k, error);
            let what = format!("call {k} failing with {}", error.message);
            match scenario(rt) {
                Err(e) => {
                    // Only init itself can fail the scenario before work starts.
                    assert_eq!(k, 0, "{what}: init failed at a later call: {e}");
                    assert_eq!(e.native, error.native, "{what}");
                }
                Ok(report) => {
                    let fired = !b.disarm();
                    assert!(fired, "{what}: the scenario made fewer calls than the fault-free run");
                    // A failure inside the teardown is reported (or counted as released by the
                    // driver); one during the work surfaced as that call's error instead.
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
            check_clean_end(b, rt, &what);
        }
    }
    assert!(teardown_failures_seen >= 10, "faults landed in the teardown {teardown_failures_seen} times");
}

#[test]
fn released_by_driver_during_teardown_is_counted_for_every_teardown_call() {
    let (b, rt) = scripted_runtime(2);
    rt.init().unwrap();
    work(rt).unwrap();
    let before_teardown = b.calls();
    rt.shutdown().unwrap();
    let teardown_calls = b.calls() - before_teardown;
    for k in 0..teardown_calls {
        b.reset();
        rt.init().unwrap();
        work(rt).unwrap();
        b.fail_call(k, BackendError::released(4, "CUDA_ERROR_DEINITIALIZED"));
        let Shutdown::TornDown(_) = rt.shutdown().unwrap() else { panic!() };
        let report = rt.last_teardown_report().unwrap();
        assert!(report.is_clean(), "teardown call {k}: {report}");
        assert_eq!(report.released_by_driver, 1, "teardown call {k}");
        check_clean_end(b, rt, &format!("teardown call {k}"));
    }
}
