//! Graphs on a CUDA device: captured and replayed, updated with new arguments (from two threads
//! at once too), and what a capture refuses.

use ordo::{Context, DeviceBuffer, ErrorCode, Module};

use super::{SAXPY, SAXPY_PROGRAM, cuda};

/// A graph captured once on a CUDA queue (saxpy, y = 2x + y, three times) and launched three
/// times: nothing runs during the capture, each launch applies the captured work to the
/// buffers' current contents, a buffer rewritten between launches is read anew; during the
/// capture the queue cannot be synchronised; the graph outlives nothing it uses.
#[test]
fn a_captured_graph_replays_its_launches_on_a_cuda_queue() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    let n = 4096u32;
    let saxpy = Module::load_for(&gpu, &SAXPY_PROGRAM).unwrap().kernel(&SAXPY).unwrap();
    let mut x = DeviceBuffer::from_slice(&gpu, &vec![1.0f32; n as usize]).unwrap();
    let mut y = DeviceBuffer::from_slice(&gpu, &vec![0.0f32; n as usize]).unwrap();
    let queue = gpu.queue().unwrap();
    let graph = queue
        .capture(|q| {
            assert_eq!(
                q.synchronize().unwrap_err().code(),
                ErrorCode::InvalidArgument,
                "no synchronise while capturing"
            );
            for _ in 0..3 {
                // SAFETY: saxpy reads n elements of x and writes n of y, both n long; the graph's
                // launches are synchronised below, while both buffers live.
                unsafe { q.launch(&saxpy, saxpy.dims_for(n)?, (2.0f32, &x, &mut y, n))? };
            }
            Ok(())
        })
        .unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 0.0), "nothing ran during the capture");
    // SAFETY: x and y are alive and used by nothing else until the queue is synchronised (after
    // every launch below).
    let launch = || unsafe { graph.launch(&queue) }.unwrap();
    launch();
    queue.synchronize().unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 6.0), "three saxpy steps");
    launch();
    launch();
    queue.synchronize().unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 18.0), "nine saxpy steps");
    x.copy_from(&vec![0.5f32; n as usize]).unwrap();
    launch();
    queue.synchronize().unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 21.0), "the rewritten x is read by the next launch");
    drop(graph);
    let host_queue = ctx.device(0).unwrap().queue().unwrap();
    let empty = host_queue.capture(|_| Ok(())).unwrap();
    assert_eq!(empty.kernel_count().unwrap(), 0, "the host device captures too");
}

/// A graph's kernel launches take new arguments between launches (`cuGraphExecKernelNodeSetParams`),
/// numbered in capture order; an update that names another kernel or index is refused.
#[test]
fn a_graph_launch_takes_new_arguments_without_a_new_capture() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    let n = 4096u32;
    let module = Module::load_for(&gpu, &SAXPY_PROGRAM).unwrap();
    let saxpy = module.kernel(&SAXPY).unwrap();
    let x = DeviceBuffer::from_slice(&gpu, &vec![1.0f32; n as usize]).unwrap();
    let mut y = DeviceBuffer::from_slice(&gpu, &vec![0.0f32; n as usize]).unwrap();
    let mut z = DeviceBuffer::from_slice(&gpu, &vec![0.0f32; n as usize]).unwrap();
    let queue = gpu.queue().unwrap();
    // SAFETY: each launch reads n elements of x and writes n of y or z (all n long), alive and
    // unshared until the queue is synchronised after each graph launch below.
    let graph = queue
        .capture(|q| unsafe {
            q.launch(&saxpy, saxpy.dims_for(n)?, (1.0f32, &x, &mut y, n))?;
            q.launch(&saxpy, saxpy.dims_for(n)?, (10.0f32, &x, &mut y, n))
        })
        .unwrap();
    assert_eq!(graph.kernel_count().unwrap(), 2);
    // SAFETY: as above.
    unsafe {
        graph.launch(&queue).unwrap();
        queue.synchronize().unwrap();
        assert!(y.to_vec().unwrap().iter().all(|&v| v == 11.0));
        // The second launch now adds 100 x to z; the first still adds x to y.
        graph.set_args(1, &saxpy, (100.0f32, &x, &mut z, n)).unwrap();
        graph.launch(&queue).unwrap();
        queue.synchronize().unwrap();
        assert!(y.to_vec().unwrap().iter().all(|&v| v == 12.0), "the first launch kept its arguments");
        assert!(z.to_vec().unwrap().iter().all(|&v| v == 100.0), "the second launch took the new ones");
        let refused = graph.set_args(2, &saxpy, (1.0f32, &x, &mut z, n)).unwrap_err();
        assert_eq!(refused.code(), ErrorCode::InvalidArgument, "no third launch");
    }
    let nothing = queue.capture(|_| Ok(())).unwrap();
    assert_eq!(nothing.kernel_count().unwrap(), 0, "an empty capture");
    // SAFETY: an empty graph.
    unsafe { nothing.launch(&queue) }.unwrap();
    let builtin = Module::load_builtin(&gpu).unwrap();
    let empty = builtin.typed_function::<()>("empty").unwrap();
    // SAFETY: refused before anything runs (the launch runs saxpy, not empty).
    let refused = unsafe { graph.set_args(0, &empty, ()) }.unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidArgument, "the launch runs another kernel");
}

/// One graph updated on one thread while another launches it (`cuGraphExecKernelNodeSetParams`
/// beside `cuGraphLaunch` on one executable graph faults in the driver unless the two are
/// serialised: the graph's own lock does it). Every launch runs, with whole arguments.
#[test]
fn a_graph_updated_and_launched_from_two_threads_at_once() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    let n = 1024u32;
    let module = Module::load_for(&gpu, &SAXPY_PROGRAM).unwrap();
    let saxpy = module.kernel(&SAXPY).unwrap();
    let x = DeviceBuffer::from_slice(&gpu, &vec![1.0f32; n as usize]).unwrap();
    let mut y = DeviceBuffer::from_slice(&gpu, &vec![0.0f32; n as usize]).unwrap();
    let queue = gpu.queue().unwrap();
    // SAFETY: the launch reads n elements of x and writes n of y (both n long), alive until the
    // queue is synchronised below; nothing else uses them meanwhile.
    let graph = queue.capture(|q| unsafe { q.launch(&saxpy, saxpy.dims_for(n)?, (1.0f32, &x, &mut y, n)) }).unwrap();
    let rounds = 2_000;
    let (graph, queue, y_out) = (&graph, &queue, &mut y);
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..rounds {
                // SAFETY: the same buffers as captured, alive until the end of the test.
                unsafe { graph.set_args(0, &saxpy, (1.0f32, &x, &mut *y_out, n)) }.unwrap();
            }
        });
        s.spawn(|| {
            for _ in 0..rounds {
                // SAFETY: as above.
                unsafe { graph.launch(queue) }.unwrap();
            }
        });
    });
    queue.synchronize().unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == rounds as f32), "every launch ran once, whole");
}

/// On a CUDA queue: a graph launched into a capture is refused before the driver and the
/// capture goes on; an event recorded during a capture stays refused after it ended (its record
/// is part of the graph: the driver refuses to synchronise it) until it is recorded again.
#[test]
fn captured_event_records_and_graphs_launched_into_a_capture_are_refused_alike() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    let rt = ctx.runtime();
    let queue = gpu.queue().unwrap();
    let empty = queue.capture(|_| Ok(())).unwrap();
    let event = rt.event_create(gpu.raw()).unwrap();
    let graph = queue
        .capture(|q| {
            // SAFETY: an empty graph.
            let into = unsafe { empty.launch(q) }.unwrap_err();
            assert_eq!(into.code(), ErrorCode::InvalidArgument, "a graph launched into a capture");
            rt.event_record(event, q.raw()).unwrap();
            Ok(())
        })
        .expect("the capture went on after the refused launch");
    for refused in
        [rt.event_synchronize(event), rt.event_query(event).map(drop), rt.queue_wait_event(queue.raw(), event)]
    {
        assert_eq!(refused.unwrap_err().code, ErrorCode::InvalidArgument, "a captured record after the capture");
    }
    rt.event_record(event, queue.raw()).unwrap();
    rt.event_synchronize(event).unwrap();
    // SAFETY: a graph of an event record only.
    unsafe { graph.launch(&queue) }.unwrap();
    queue.synchronize().unwrap();
    rt.event_destroy(event).unwrap();
}
