//! The default runtime's host device runs queue work asynchronously, in order (`QueuedHost`):
//! work waits behind a blocked host function on its own queue only; synchronises, events and
//! queue-less copies wait for it; a forgotten synchronise shows stale data; destroying a queue
//! with blocked work returns at once; an error of enqueued work comes back at the next
//! synchronise.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ordo::raw::Queue;
use ordo::{
    ErrorCode,
    raw::{MemKind, Runtime},
};
use ordo_core::FillValue;

/// The tests share the host device: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Blocks its queue until the flag it points to is set.
unsafe extern "C" fn wait_for_flag(data: *mut core::ffi::c_void) {
    // SAFETY: `data` is a `&'static AtomicBool` (see the callers).
    let flag = unsafe { &*data.cast::<AtomicBool>() };
    while !flag.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn host(rt: &Runtime) -> ordo::raw::Device {
    rt.device(rt.platform(0).unwrap(), 0).unwrap()
}

fn block(rt: &Runtime, q: Queue, flag: &'static AtomicBool) {
    // SAFETY: `wait_for_flag` reads the static flag only, from any thread.
    unsafe { rt.queue_host_function(q, wait_for_flag, (flag as *const AtomicBool).cast_mut().cast()) }.unwrap();
}

#[test]
fn queue_work_runs_later_in_order_and_a_blocked_queue_holds_up_only_itself() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    static GO: AtomicBool = AtomicBool::new(false);
    let rt = ordo::runtime();
    let _guard = rt.init_guard().unwrap();
    let d = host(rt);
    let (blocked, free) = (rt.queue_create(d).unwrap(), rt.queue_create(d).unwrap());
    let mem = rt.mem_alloc(d, MemKind::Device, 64).unwrap();
    rt.fill(mem, FillValue::U8(1), 64, None).unwrap();
    block(rt, blocked, &GO);
    // Enqueued behind the blocked function: returns at once, runs later.
    let started = Instant::now();
    rt.fill(mem, FillValue::U8(7), 32, Some(blocked)).unwrap();
    let mut seen = [0u8; 64];
    // SAFETY: `seen` outlives the copy (the queue is synchronised below before it is read).
    unsafe { rt.copy_from_device_async(blocked, seen.as_mut_ptr(), mem, 64) }.unwrap();
    assert!(!rt.queue_query(blocked).unwrap(), "the blocked queue has work left");
    // Another queue is not held up.
    let other = rt.mem_alloc(d, MemKind::Device, 16).unwrap();
    rt.fill(other, FillValue::U8(9), 16, Some(free)).unwrap();
    rt.queue_synchronize(free).unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(seen, [0u8; 64], "a forgotten synchronise sees nothing yet, as on a GPU");
    GO.store(true, Ordering::Release);
    rt.queue_synchronize(blocked).unwrap();
    assert_eq!(&seen[..32], &[7u8; 32]);
    assert_eq!(&seen[32..], &[1u8; 32], "in order: the fill, then the copy");
    rt.queue_destroy(blocked).unwrap();
    rt.queue_destroy(free).unwrap();
    rt.mem_free(mem).unwrap();
    rt.mem_free(other).unwrap();
}

#[test]
fn events_order_queues_and_queue_less_copies_wait_for_every_queue() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    static GO: AtomicBool = AtomicBool::new(false);
    let rt = ordo::runtime();
    let _guard = rt.init_guard().unwrap();
    let d = host(rt);
    let (a, b) = (rt.queue_create(d).unwrap(), rt.queue_create(d).unwrap());
    let e = rt.event_create(d).unwrap();
    let mem = rt.mem_alloc(d, MemKind::Device, 16).unwrap();
    rt.fill(mem, FillValue::U8(0), 16, None).unwrap();
    block(rt, a, &GO);
    rt.fill(mem, FillValue::U8(3), 16, Some(a)).unwrap();
    rt.event_record(e, a).unwrap();
    assert!(!rt.event_query(e).unwrap(), "its record has not run");
    // b waits for a's event, then overwrites.
    rt.queue_wait_event(b, e).unwrap();
    rt.fill(mem, FillValue::U8(5), 8, Some(b)).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(!rt.queue_query(b).unwrap(), "b waits for the event");
    let releaser = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(50));
        GO.store(true, Ordering::Release);
    });
    // A copy without a queue starts after everything submitted to the device's queues.
    let mut out = [0u8; 16];
    rt.copy_from_device(&mut out, mem).unwrap();
    assert_eq!(out, [5, 5, 5, 5, 5, 5, 5, 5, 3, 3, 3, 3, 3, 3, 3, 3]);
    assert!(rt.event_query(e).unwrap());
    releaser.join().unwrap();
    rt.event_destroy(e).unwrap();
    rt.queue_destroy(a).unwrap();
    rt.queue_destroy(b).unwrap();
    rt.mem_free(mem).unwrap();
}

#[test]
fn destroying_a_blocked_queue_returns_at_once_and_its_event_completes_later() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    static GO: AtomicBool = AtomicBool::new(false);
    let rt = ordo::runtime();
    let _guard = rt.init_guard().unwrap();
    let d = host(rt);
    let q = rt.queue_create(d).unwrap();
    let e = rt.event_create(d).unwrap();
    block(rt, q, &GO);
    rt.event_record(e, q).unwrap();
    let started = Instant::now();
    rt.queue_destroy(q).unwrap();
    assert!(started.elapsed() < Duration::from_secs(1), "destroy does not wait for the queue's work");
    assert_eq!(rt.queue_synchronize(q).unwrap_err().code, ErrorCode::InvalidHandle);
    GO.store(true, Ordering::Release);
    rt.event_synchronize(e).unwrap();
    rt.event_destroy(e).unwrap();
}

/// A destroyed queue's work still runs, and what waits for the device's work waits for it too:
/// a queue-less copy sees it, and `mem_free` cannot free memory it is still writing.
#[test]
fn a_destroyed_queues_work_is_still_waited_for() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    static GO: AtomicBool = AtomicBool::new(false);
    let rt = ordo::runtime();
    let _guard = rt.init_guard().unwrap();
    let d = host(rt);
    let q = rt.queue_create(d).unwrap();
    let mem = rt.mem_alloc(d, MemKind::Device, 4096).unwrap();
    rt.fill(mem, FillValue::U8(0), 4096, None).unwrap();
    block(rt, q, &GO);
    rt.fill(mem, FillValue::U8(7), 4096, Some(q)).unwrap();
    rt.queue_destroy(q).unwrap();
    let releaser = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(50));
        GO.store(true, Ordering::Release);
    });
    let started = Instant::now();
    let mut out = [0u8; 4096];
    rt.copy_from_device(&mut out, mem).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(40), "the copy waited for the destroyed queue");
    assert_eq!(out, [7u8; 4096]);
    // Another queue's work, then a destroyed one's pending fill: `mem_free` waits for both.
    static GO2: AtomicBool = AtomicBool::new(false);
    let q2 = rt.queue_create(d).unwrap();
    block(rt, q2, &GO2);
    rt.fill(mem, FillValue::U8(9), 4096, Some(q2)).unwrap();
    rt.queue_destroy(q2).unwrap();
    let releaser2 = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(50));
        GO2.store(true, Ordering::Release);
    });
    let started = Instant::now();
    rt.mem_free(mem).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(40), "mem_free waited for the pending fill");
    releaser.join().unwrap();
    releaser2.join().unwrap();
}

/// A host kernel that fails when it runs.
unsafe fn fails(_: &ordo::host::HostThread, _: &ordo::raw::KernelArgs<'_>) -> Result<(), ordo::host::RuntimeError> {
    Err(ordo::host::RuntimeError::new(ErrorCode::InvalidValue, "this kernel always fails"))
}

static FAILING: ordo::host::HostProgram = ordo::host::HostProgram {
    name: "tests.host_queues.failing",
    kernels: &[ordo::host::HostKernel { name: "fails", run: fails, params: &[], extents_required: false }],
};

#[test]
fn an_error_of_enqueued_work_comes_back_at_the_next_synchronise_and_sizes_fail_at_once() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    ordo::register_host_program(&FAILING).unwrap();
    let rt = ordo::runtime();
    let _guard = rt.init_guard().unwrap();
    let d = host(rt);
    let q = rt.queue_create(d).unwrap();
    let dims = ordo::LaunchDims { grid: [1, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 };

    // A kernel that fails when it runs: the launch succeeds, the synchronise reports it (once).
    let p = rt.program_load(d, FAILING.name.as_bytes()).unwrap();
    let k = rt.kernel_get(p, "fails").unwrap();
    // SAFETY: no arguments.
    unsafe { rt.launch(q, k, &dims, &ordo::raw::KernelArgs::unsized_params(&[]).unwrap()) }.unwrap();
    assert_eq!(rt.queue_synchronize(q).unwrap_err().code, ErrorCode::InvalidValue);
    rt.queue_synchronize(q).unwrap();

    // A size that does not match the kernel's parameter fails the launch itself.
    let builtin = rt.program_load(d, ordo::builtin_program_image(ordo::BackendKind::Host).unwrap()).unwrap();
    let add = rt.kernel_get(builtin, "vector_add_f32").unwrap();
    let mem = rt.mem_alloc(d, MemKind::Device, 16).unwrap();
    let (ptr, count) = (mem.0, 4u32);
    let args = [
        (&raw const ptr).cast_mut().cast::<core::ffi::c_void>(),
        (&raw const ptr).cast_mut().cast(),
        (&raw const ptr).cast_mut().cast(),
        (&raw const count).cast_mut().cast(),
    ];
    let wrong = [8usize, 8, 8, 8];
    let kernel_args = ordo::raw::KernelArgs::new(&args, &wrong).unwrap();
    // SAFETY: every argument points to at least the bytes given for it.
    let r = unsafe { rt.launch(q, add, &dims, &kernel_args) };
    assert_eq!(r.unwrap_err().code, ErrorCode::InvalidSize, "a size mismatch fails at once");

    // A host function that would wait for queues gets `Busy` instead of a deadlock.
    unsafe extern "C" fn sync_from_inside(data: *mut core::ffi::c_void) {
        // The queue's raw handle travels as the data word (never dereferenced).
        let q = Queue::from_raw(data as u64);
        let r = ordo::runtime().queue_synchronize(q);
        assert_eq!(r.unwrap_err().code, ErrorCode::Busy);
    }
    // SAFETY: the function only passes a handle value to ordo.
    unsafe { rt.queue_host_function(q, sync_from_inside, q.to_raw() as usize as *mut core::ffi::c_void) }.unwrap();
    rt.queue_synchronize(q).unwrap();
    rt.queue_destroy(q).unwrap();
    rt.mem_free(mem).unwrap();
    rt.program_unload(p).unwrap();
    rt.program_unload(builtin).unwrap();
}

/// Runs `f` on a thread of its own and fails (instead of hanging the test) when it has not
/// returned within `limit`.
fn within<T: Send + 'static>(limit: Duration, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(f());
    });
    result.recv_timeout(limit).unwrap_or_else(|_| {
        // A panic would unwind into the test's init guard, whose final shutdown waits for the
        // stuck call: end the process instead, so that the hang is a failure.
        eprintln!("{what}: no answer within {limit:?} (a deadlock)");
        std::process::abort()
    })
}

#[test]
fn a_host_functions_query_while_another_thread_frees_answers_within_bounded_time() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    static FREEING: AtomicBool = AtomicBool::new(false);
    /// What the host function's query answered: 0 none yet, 1 success, 2 `Busy`, 3 another error.
    static ANSWER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    unsafe extern "C" fn query_while_freed(data: *mut core::ffi::c_void) {
        while !FREEING.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Long enough for the other thread's free to hold the runtime and wait for this queue.
        std::thread::sleep(Duration::from_millis(50));
        let d = ordo::raw::Device::from_raw(data as u64);
        let answer = match ordo::runtime().device_info(d, ordo::DeviceInfo::Name) {
            Ok(_) => 1,
            Err(e) if e.code == ErrorCode::Busy => 2,
            Err(_) => 3,
        };
        ANSWER.store(answer, Ordering::Release);
    }
    let rt = ordo::runtime();
    let _guard = rt.init_guard().unwrap();
    let d = host(rt);
    let q = rt.queue_create(d).unwrap();
    let mem = rt.mem_alloc(d, MemKind::Device, 64).unwrap();
    FREEING.store(false, Ordering::Release);
    ANSWER.store(0, Ordering::Release);
    // SAFETY: the function reads statics and passes a handle value to ordo.
    unsafe { rt.queue_host_function(q, query_while_freed, d.to_raw() as usize as *mut core::ffi::c_void) }.unwrap();
    FREEING.store(true, Ordering::Release);
    // `mem_free` is a create/destroy call that waits for the host queues, which wait for the
    // host function, which queries the device: it must not wait for the free.
    within(Duration::from_secs(20), "mem_free while a host function queries", move || ordo::runtime().mem_free(mem))
        .unwrap();
    let answer = ANSWER.load(Ordering::Acquire);
    assert!(answer == 1 || answer == 2, "the host function's query answered {answer} (1 success, 2 Busy)");
    rt.queue_synchronize(q).unwrap();
    // With nothing waiting, the same query from a host function works.
    FREEING.store(true, Ordering::Release);
    // SAFETY: as above.
    unsafe { rt.queue_host_function(q, query_while_freed, d.to_raw() as usize as *mut core::ffi::c_void) }.unwrap();
    rt.queue_synchronize(q).unwrap();
    assert_eq!(ANSWER.load(Ordering::Acquire), 1);
    rt.queue_destroy(q).unwrap();
}

/// A host kernel that panics when its argument is 1 and writes 7 to its output otherwise.
unsafe fn panics_on_one(
    t: &ordo::host::HostThread,
    args: &ordo::raw::KernelArgs<'_>,
) -> Result<(), ordo::host::RuntimeError> {
    let _ = t;
    // SAFETY: the kernel's declared parameters: a u32 and an output address.
    let (flag, out) = unsafe { (*args.params()[0].cast::<u32>(), *args.params()[1].cast::<u64>()) };
    assert!(flag != 1, "the kernel was told to panic ({flag})");
    // SAFETY: the caller passes a live 4-byte allocation of the host device.
    unsafe { core::ptr::with_exposed_provenance_mut::<u32>(out as usize).write(7) };
    Ok(())
}

static PANICKING: ordo::host::HostProgram = ordo::host::HostProgram {
    name: "tests.host_queues.panicking",
    kernels: &[ordo::host::HostKernel {
        name: "panics_on_one",
        run: panics_on_one,
        params: &[4, 8],
        extents_required: false,
    }],
};

#[test]
fn a_panicking_host_kernel_is_an_error_of_its_queue_which_stays_usable() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    ordo::register_host_program(&PANICKING).unwrap();
    let rt = ordo::runtime();
    let _guard = rt.init_guard().unwrap();
    let d = host(rt);
    let (q, other) = (rt.queue_create(d).unwrap(), rt.queue_create(d).unwrap());
    let p = rt.program_load(d, PANICKING.name.as_bytes()).unwrap();
    let k = rt.kernel_get(p, "panics_on_one").unwrap();
    let out = rt.mem_alloc(d, MemKind::Device, 4).unwrap();
    let dims = ordo::LaunchDims { grid: [1, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 };
    let launch = move |queue: Queue, flag: u32| {
        let address = out.0;
        let params = [(&raw const flag).cast_mut().cast::<core::ffi::c_void>(), (&raw const address).cast_mut().cast()];
        let args = ordo::raw::KernelArgs::new(&params, &[4, 8]).unwrap();
        // SAFETY: the arguments are the kernel's declared u32 and address, valid for the call.
        unsafe { ordo::runtime().launch(queue, k, &dims, &args) }
    };
    launch(q, 1).unwrap();
    let e = within(Duration::from_secs(20), "synchronising a queue whose kernel panicked", move || {
        ordo::runtime().queue_synchronize(q)
    })
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::BackendFailure, "{e}");
    let text = e.to_string();
    // The message names the kernel and the thread it ran on (a host queue's worker).
    assert!(
        text.contains("host kernel 'panics_on_one' panicked on thread")
            && text.contains("the kernel was told to panic (1)"),
        "{text}"
    );
    // The same queue runs the next launch; another queue was never affected.
    launch(q, 0).unwrap();
    rt.queue_synchronize(q).unwrap();
    launch(other, 0).unwrap();
    rt.queue_synchronize(other).unwrap();
    let mut seven = 0u32;
    // SAFETY: 4 bytes of `seven`; no queue (complete when it returns).
    unsafe { rt.memcpy(ordo::raw::CopyKind::DeviceToHost, (&raw mut seven) as u64, out.0, 4, None) }.unwrap();
    assert_eq!(seven, 7);
    // The panic's text is kept once: a second panic reads the same.
    launch(q, 1).unwrap();
    assert_eq!(rt.queue_synchronize(q).unwrap_err().to_string(), text);
    for queue in [q, other] {
        rt.queue_destroy(queue).unwrap();
    }
    rt.mem_free(out).unwrap();
    rt.program_unload(p).unwrap();
}

#[test]
fn the_host_platform_lists_asynchronous_queues_and_local_memory() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let rt = ordo::runtime();
    let _guard = rt.init_guard().unwrap();
    let caps = rt.platform_info(rt.platform(0).unwrap()).unwrap().capabilities;
    for cap in [ordo_core::Capabilities::ASYNC_QUEUES, ordo_core::Capabilities::SHARED_MEMORY] {
        assert!(caps.contains(cap), "{caps:?} lacks {cap:?}");
    }
}

#[test]
fn public_types_print_with_debug() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let rt = ordo::runtime();
    let _guard = rt.init_guard().unwrap();
    let text = format!("{rt:?}");
    assert!(text.contains("Runtime") && text.contains("host") && text.contains("Ready"), "{text}");
    let ctx = ordo::Context::new().unwrap();
    let host = ctx.devices().unwrap().into_iter().find(|d| d.kind() == ordo::BackendKind::Host).unwrap();
    let module = ordo::Module::load_builtin(&host).unwrap();
    let add = module.function("vector_add_f32").unwrap();
    let queue = host.queue().unwrap();
    let builder = queue.launch_builder(&add);
    let text = format!("{builder:?} {:?}", ordo::host::builtin::PROGRAMS[0]);
    assert!(text.contains("LaunchBuilder") && text.contains("vector_add_f32"), "{text}");
}

#[test]
fn a_release_waiting_for_a_blocked_queue_holds_up_no_other_threads_calls() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    static GO: AtomicBool = AtomicBool::new(false);
    GO.store(false, Ordering::Release);
    let rt = ordo::runtime();
    let _guard = rt.init_guard().unwrap();
    let d = host(rt);
    let (blocked, other) = (rt.queue_create(d).unwrap(), rt.queue_create(d).unwrap());
    let mem = rt.mem_alloc(d, MemKind::Device, 64).unwrap();
    block(rt, blocked, &GO);
    // mem_free waits for the blocked queue (as cuMemFree waits for the device)...
    let freeing = std::thread::spawn(move || ordo::runtime().mem_free(mem));
    std::thread::sleep(Duration::from_millis(50));
    // ...but not while holding the runtime: this thread's calls go on, and the one that
    // releases the queue comes after them (it waited for the free's writer, which waited for the
    // queue, which waited for this thread).
    let answered = within(Duration::from_secs(20), "a call while another thread's free waits", move || {
        let rt = ordo::runtime();
        (rt.queue_query(other), rt.device_info(d, ordo::DeviceInfo::Name).is_ok())
    });
    assert_eq!((answered.0.unwrap(), answered.1), (true, true));
    assert!(!freeing.is_finished(), "the free still waits for the blocked queue");
    GO.store(true, Ordering::Release);
    freeing.join().unwrap().unwrap();
    for q in [blocked, other] {
        rt.queue_destroy(q).unwrap();
    }
}
