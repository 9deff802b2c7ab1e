//! The runtime's fast launch (`Backend::fast_launch`): a launch reaches the backend's fast
//! function only after every check the runtime makes, and the backend's own call only when
//! the fast function declines — with that call's result, faults included. Measured with the
//! scripted backend's opt-in fast functions, which count their calls and answer as told
//! (process-wide, hence one test).

use ordo_core::{BackendError, BackendOp, Device, ErrorCode, Kernel, KernelArgs, LaunchDims, Queue, Runtime};
use ordo_testing::scripted::ScriptedBackend;
use ordo_tests::{device, scripted_runtime};

/// Initialises `rt`: its device, a queue and a kernel.
fn objects(rt: &Runtime) -> (Device, Queue, Kernel) {
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    let q = rt.queue_create(d).unwrap();
    let p = rt.program_load(d, b"image").unwrap();
    (d, q, rt.kernel_get(p, "kernel").unwrap())
}

#[test]
fn fast_launch_runs_after_the_checks_and_the_backend_call_only_when_it_declines() {
    let (b, rt) = scripted_runtime(1);
    b.set_fast_launch(true);
    let (d, q, k) = objects(rt);
    let one = LaunchDims::linear(1, 1);
    let arg = 7u32;
    let packed = arg.to_ne_bytes();
    let param = [(&raw const arg).cast_mut().cast::<core::ffi::c_void>()];
    let params = KernelArgs::unsized_params(&param).unwrap();
    let launch = || {
        // SAFETY: the scripted backend's kernels take one 4-byte parameter and run nothing.
        unsafe { rt.launch(q, k, &one, &params) }.map_err(|e| e.code)
    };
    let launch_packed = || {
        // SAFETY: as above; the buffer holds the parameter.
        unsafe { rt.launch_packed_on(d, q, k, &one, &packed) }.map_err(|e| e.code)
    };
    // (fast function calls, backend calls) since `before`.
    let counts = |before: (u64, u64)| (ScriptedBackend::fast_launches() - before.0, b.calls() - before.1);
    let now = || (ScriptedBackend::fast_launches(), b.calls());

    // Accepted: the backend's own launch is not called. The kernel's first launch asks for its
    // layout once (a backend call: the parameter count and the packed buffer's end).
    ScriptedBackend::set_fast_launches_accepted(true);
    let t = now();
    assert_eq!(launch(), Ok(()));
    assert_eq!(counts(t), (1, 1), "the layout once, then the fast launch");
    let t = now();
    assert_eq!(launch(), Ok(()));
    assert_eq!(counts(t), (1, 0), "an accepted fast launch makes no backend call");
    // The packed form uses the same layout: fast launches only.
    let t = now();
    assert_eq!(launch_packed(), Ok(()));
    assert_eq!(launch_packed(), Ok(()));
    assert_eq!(counts(t), (2, 0), "fast launches only");
    // Another argument count than the kernel's parameters: refused before any launch.
    let t = now();
    // SAFETY: rejected before any launch.
    let none = unsafe { rt.launch(q, k, &one, &KernelArgs::EMPTY) };
    assert_eq!(none.map_err(|e| e.code), Err(ErrorCode::InvalidArgument));
    let two = [param[0], param[0]];
    // SAFETY: as above.
    let extra = unsafe { rt.launch(q, k, &one, &KernelArgs::unsized_params(&two).unwrap()) };
    assert_eq!(extra.map_err(|e| e.code), Err(ErrorCode::InvalidArgument));
    assert_eq!(counts(t), (0, 0), "a wrong count reaches no backend function");

    // Checks first: a failed check reaches neither function.
    let t = now();
    let stale = Kernel::from_raw(k.to_raw() ^ (1 << 16)); // another generation of the slot
    // SAFETY: rejected before any launch.
    assert!(unsafe { rt.launch(q, stale, &one, &KernelArgs::EMPTY) }.is_err());
    // SAFETY: as above.
    let zero = unsafe { rt.launch(q, k, &LaunchDims::linear(0, 1), &KernelArgs::EMPTY) };
    assert_eq!(zero.map_err(|e| e.code), Err(ErrorCode::InvalidValue));
    // SAFETY: as above (the buffer ends before the kernel's parameter does).
    let short = unsafe { rt.launch_packed_on(d, q, k, &one, &packed[..2]) };
    assert_eq!(short.map_err(|e| e.code), Err(ErrorCode::InvalidSize));
    // SAFETY: as above; the dimensions' error comes before the buffer's.
    let both = unsafe { rt.launch_packed_on(d, q, k, &LaunchDims::linear(0, 1), &packed[..2]) };
    assert_eq!(both.map_err(|e| e.code), Err(ErrorCode::InvalidValue));
    assert_eq!(counts(t), (0, 0), "rejected launches reach no backend function");

    // Declined: the backend's own call, with its result.
    ScriptedBackend::set_fast_launches_accepted(false);
    let t = now();
    assert_eq!(launch(), Ok(()));
    assert_eq!(launch_packed(), Ok(()));
    // The scripted backend's `launch_packed` is the trait's default: its own layout query, then
    // `launch`.
    assert_eq!(counts(t), (2, 3), "each declined launch makes the backend's own call once");
    b.fail_next(BackendOp::Launch, BackendError::new(ErrorCode::OutOfResources, 0, "scripted"));
    let t = now();
    assert_eq!(launch(), Err(ErrorCode::OutOfResources), "the backend call's error is the launch's");
    assert_eq!(counts(t), (1, 1));

    // Without fast functions (asked again at the next init) every launch is the backend's call.
    ScriptedBackend::set_fast_launches_accepted(true);
    rt.shutdown().unwrap();
    b.set_fast_launch(false);
    let (_, q, k) = objects(rt);
    let t = now();
    // SAFETY: as above.
    assert_eq!(unsafe { rt.launch(q, k, &one, &params) }.map_err(|e| e.code), Ok(()));
    assert_eq!(counts(t), (0, 2), "the new kernel's layout, then the backend's launch");
    rt.shutdown().unwrap();
    assert_eq!(b.double_releases(), 0);
    assert_eq!(b.calls_while_down(), 0);
}
