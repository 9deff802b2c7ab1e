//! Graphs on the host device's threaded queues (`QueuedHost`, the default with `std`): a
//! captured sequence of typed launches, a fill and a host function replays in order as one piece
//! of a queue's work, on any queue of the device, as often as wanted; new arguments apply to
//! later launches only; 16 threads launching one graph at once while another updates it lose
//! nothing; event records and waits on a capturing host queue are `Unsupported`.

use std::sync::atomic::{AtomicU32, Ordering};

use ordo::host::HostProgram;
use ordo::{Context, DeviceBuffer, ErrorCode, Module, Out};

ordo::host_kernel! {
    /// y[i] += a for i < n.
    pub const ADD = fn add(t, a: u32, y: Out<u32>, n: u32) {
        let i = t.global_x() as usize;
        if let (true, Some(v)) = (i < n as usize, y.get(i)) {
            y.set(i, v + a);
        }
    }
}
static PROGRAM: HostProgram = HostProgram { name: "graphs.add", kernels: &[ADD.kernel] };

static CALLS: AtomicU32 = AtomicU32::new(0);

/// The tests share the default runtime's host device, on which a capture refuses other threads'
/// calls without a queue (`DeviceBuffer::zeroed`'s fill): one test at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

unsafe extern "C" fn count(_: *mut core::ffi::c_void) {
    CALLS.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn a_host_graph_replays_in_order_and_takes_new_arguments() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = Context::new().unwrap();
    let dev = ctx.device(0).unwrap();
    let module = Module::load_host(&dev, &PROGRAM).unwrap();
    let add = module.kernel(&ADD).unwrap();
    let n = 1000u32;
    let mut y = DeviceBuffer::<u32>::zeroed(&dev, n as usize).unwrap();
    let mut z = DeviceBuffer::<u32>::zeroed(&dev, n as usize).unwrap();
    let queue = dev.queue().unwrap();
    let before = CALLS.load(Ordering::SeqCst);
    // SAFETY: `add` writes n elements of y or z (n long), alive and unshared until the queue is
    // synchronised after each launch of the graph; `count` may run on any thread, many times.
    let graph = queue
        .capture(|q| unsafe {
            q.launch(&add, add.dims_for(n)?, (1u32, &mut y, n))?;
            q.launch(&add, add.dims_for(n)?, (10u32, &mut y, n))?;
            ctx.runtime().queue_host_function(q.raw(), count, core::ptr::null_mut())?;
            Ok(())
        })
        .unwrap();
    assert_eq!(graph.kernel_count().unwrap(), 2);
    queue.synchronize().unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 0), "nothing ran during the capture");
    assert_eq!(CALLS.load(Ordering::SeqCst), before);
    let other = dev.queue().unwrap();
    // SAFETY: as above.
    unsafe {
        graph.launch(&queue).unwrap();
        graph.launch(&queue).unwrap();
        queue.synchronize().unwrap();
        graph.launch(&other).unwrap();
        other.synchronize().unwrap();
    }
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 33));
    assert_eq!(CALLS.load(Ordering::SeqCst), before + 3);
    // SAFETY: as above.
    unsafe {
        graph.launch(&queue).unwrap();
        graph.set_args(1, &add, (100u32, &mut z, n)).unwrap();
        graph.launch(&queue).unwrap();
    }
    queue.synchronize().unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 45), "the launch before the update kept its arguments");
    assert!(z.to_vec().unwrap().iter().all(|&v| v == 100), "the launch after it took the new ones");
    // SAFETY: refused before anything runs.
    let refused = unsafe { graph.set_args(2, &add, (1u32, &mut z, n)) }.unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidArgument);
    let event = dev.event().unwrap();
    let refused = queue.capture(|q| q.record(&event)).unwrap_err();
    assert_eq!(refused.code(), ErrorCode::Unsupported, "host graphs capture no events");
    assert!(!ctx.runtime().queue_is_capturing(queue.raw()).unwrap(), "the failed capture ended");
}

#[test]
fn sixteen_threads_launch_one_host_graph_while_it_is_updated() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = Context::new().unwrap();
    let dev = ctx.device(0).unwrap();
    let module = Module::load_host(&dev, &PROGRAM).unwrap();
    let add = module.kernel(&ADD).unwrap();
    let mut y = DeviceBuffer::<u32>::zeroed(&dev, 1).unwrap();
    let queue = dev.queue().unwrap();
    // SAFETY: `add` writes y's one element; every launch below is synchronised before y is read.
    let graph = queue.capture(|q| unsafe { q.launch(&add, add.dims_for(1)?, (1u32, &mut y, 1u32)) }).unwrap();
    std::thread::scope(|s| {
        for _ in 0..16 {
            s.spawn(|| {
                let q = dev.queue().unwrap();
                for _ in 0..50 {
                    // SAFETY: as above (each launch adds 1 to y; the adds are serialised by the
                    // host device, which runs one piece of work at a time).
                    unsafe { graph.launch(&q) }.unwrap();
                }
                q.synchronize().unwrap();
            });
        }
        let (graph, add, y) = (&graph, &add, &mut y);
        s.spawn(move || {
            for _ in 0..20 {
                // SAFETY: the same buffer and amount: each update keeps what the launches do.
                unsafe { graph.set_args(0, add, (1u32, &mut *y, 1u32)) }.unwrap();
            }
        });
    });
    assert_eq!(y.to_vec().unwrap(), [800], "16 threads × 50 launches, none lost or doubled");
}

/// A graph holds what it uses: its kernels' module stays loaded after the module is dropped,
/// and a launch is refused (`InvalidHandle`, nothing launched) once a buffer one of its typed
/// launches was given (captured or set later) is dropped, as a direct launch would refuse it. A
/// second load of the same program is another module: its kernel is refused by an update.
#[test]
fn a_graph_keeps_its_module_and_refuses_a_released_buffer() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = Context::new().unwrap();
    let dev = ctx.device(0).unwrap();
    let n = 64u32;
    let queue = dev.queue().unwrap();
    let mut y = DeviceBuffer::<u32>::zeroed(&dev, n as usize).unwrap();
    let graph = {
        let module = Module::load_host(&dev, &PROGRAM).unwrap();
        let add = module.kernel(&ADD).unwrap();
        // SAFETY: `add` writes n elements of y (n long); each launch of the graph is synchronised
        // while y lives, and after y is dropped the launch is refused.
        queue.capture(|q| unsafe { q.launch(&add, add.dims_for(n)?, (1u32, &mut y, n)) }).unwrap()
    };
    // SAFETY: as above.
    unsafe { graph.launch(&queue) }.unwrap();
    queue.synchronize().unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 1), "the module stayed loaded for the graph");
    let other = Module::load_host(&dev, &PROGRAM).unwrap();
    let other_add = other.kernel(&ADD).unwrap();
    // SAFETY: refused before anything runs.
    let refused = unsafe { graph.set_args(0, &other_add, (5u32, &mut y, n)) }.unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidArgument, "another load's kernel: {refused}");
    drop(y);
    // SAFETY: refused before anything runs.
    let refused = unsafe { graph.launch(&queue) }.unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidHandle, "{refused}");

    // A graph captured from the second load: new arguments name a live buffer, launchable
    // again; refused once that one is dropped too.
    let mut y2 = DeviceBuffer::<u32>::zeroed(&dev, n as usize).unwrap();
    let mut z = DeviceBuffer::<u32>::zeroed(&dev, n as usize).unwrap();
    // SAFETY: `add` writes n elements of y2, then of z; each launch is synchronised while they live.
    let graph2 =
        queue.capture(|q| unsafe { q.launch(&other_add, other_add.dims_for(n)?, (1u32, &mut y2, n)) }).unwrap();
    drop(y2);
    // SAFETY: refused before anything runs.
    assert_eq!(unsafe { graph2.launch(&queue) }.unwrap_err().code(), ErrorCode::InvalidHandle);
    // SAFETY: as above.
    unsafe {
        graph2.set_args(0, &other_add, (5u32, &mut z, n)).unwrap();
        graph2.launch(&queue).unwrap();
    }
    queue.synchronize().unwrap();
    assert!(z.to_vec().unwrap().iter().all(|&v| v == 5));
    drop(z);
    // SAFETY: refused before anything runs.
    assert_eq!(unsafe { graph2.launch(&queue) }.unwrap_err().code(), ErrorCode::InvalidHandle);
    drop((graph, graph2));
}

/// A typed host kernel's buffer views need each buffer's length, which only the typed launch
/// gives: an untyped launch of it (the launch builder, as C's `ordo_launch`) is refused when it
/// is made, nothing enqueued, where it used to be accepted and fail at the next synchronise.
#[test]
fn an_untyped_launch_of_a_typed_host_kernel_is_refused_when_made() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = Context::new().unwrap();
    let dev = ctx.device(0).unwrap();
    let module = Module::load_host(&dev, &PROGRAM).unwrap();
    let untyped = module.function("add").unwrap();
    let n = 8u32;
    let y = DeviceBuffer::<u32>::zeroed(&dev, n as usize).unwrap();
    let queue = dev.queue().unwrap();
    let mut launch = queue.launch_builder(&untyped);
    launch.arg(&5u32).arg(&y).arg(&n);
    // SAFETY: refused before anything runs (and `add` writes n elements of y, n long).
    let refused = unsafe { launch.launch(untyped.dims_for(n).unwrap()) }.unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidArgument, "{refused}");
    assert!(refused.to_string().contains("typed launch"), "{refused}");
    queue.synchronize().unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 0), "nothing ran");
    // The typed launch of the same kernel runs.
    let add = module.kernel(&ADD).unwrap();
    let mut y = y;
    queue.launch_host(&add, add.dims_for(n).unwrap(), (5u32, &mut y, n)).unwrap();
    queue.synchronize().unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 5));
}
