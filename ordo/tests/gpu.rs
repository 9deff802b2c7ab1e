//! The typed API on a CUDA device: kernel parameter layouts from the driver, checked launches,
//! the JIT's log in errors, buffers of another device refused, asynchronous copies and events.
//! Without a CUDA device every test says so and passes; `ORDO_REQUIRE_GPU=1` makes that a
//! failure (tests/gpu/run.sh sets it).

use ordo::{BackendKind, Context, Device, DeviceBuffer, Error, ErrorCode, Module};

/// The first CUDA device of the default runtime, or `None` (printed) where there is none.
fn cuda(ctx: &Context<'static>) -> Option<Device<'static>> {
    let dev = ctx.devices().expect("devices").into_iter().find(|d| d.kind() == BackendKind::Cuda);
    if dev.is_none() {
        assert!(std::env::var("ORDO_REQUIRE_GPU").as_deref() != Ok("1"), "ORDO_REQUIRE_GPU=1 but no CUDA device");
        println!("skipped: no CUDA device");
    }
    dev
}

#[test]
fn launches_are_checked_against_the_drivers_parameter_layout() {
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let module = Module::load_builtin(&dev).unwrap();
    let add = module.function("vector_add_f32").unwrap();
    let layout = add.param_layout().expect("CUDA 12.4+ drivers describe parameters");
    let sizes: Vec<u32> = layout.iter().map(|p| p.size).collect();
    assert_eq!(sizes, [8, 8, 8, 4]);
    let n = 100_000u32;
    let a = DeviceBuffer::from_slice(&dev, &(0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let b = DeviceBuffer::from_slice(&dev, &vec![0.5f32; n as usize]).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&dev, n as usize).unwrap();
    let queue = dev.queue().unwrap();
    let dims = add.dims_for(n).unwrap();
    assert!(dims.block[0] > 1, "the occupancy query picks a block size: {dims:?}");
    // SAFETY: refused before anything runs.
    let five = unsafe { queue.launch_builder(&add).arg(&a).arg(&b).arg(&c).arg(&n).arg(&n).launch(dims) };
    assert_eq!(five.unwrap_err(), Error::ArgumentCount { expected: 4, actual: 5 });
    // SAFETY: refused before anything runs.
    let wide = unsafe { queue.launch_builder(&add).arg(&a).arg(&b).arg(&c).arg(&u64::from(n)).launch(dims) };
    assert_eq!(wide.unwrap_err(), Error::ArgumentSize { index: 3, expected: 4, actual: 8 });
    assert!(c.to_vec().unwrap().iter().all(|&v| v == 0.0), "a refused launch ran");
    // SAFETY: vector_add_f32(a, b, c, n) reads n floats of a and b and writes n of c.
    unsafe { queue.launch_builder(&add).arg(&a).arg(&b).arg(&c.as_mut_slice()).arg(&n).launch(dims) }.unwrap();
    queue.synchronize().unwrap();
    let out = c.to_vec().unwrap();
    assert!(out.iter().enumerate().all(|(i, &v)| v == i as f32 + 0.5));
}

#[test]
fn a_buffer_of_the_host_device_is_refused_on_a_cuda_queue() {
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let host = ctx.device(0).unwrap();
    assert_eq!(host.kind(), BackendKind::Host);
    let module = Module::load_builtin(&dev).unwrap();
    let sum = module.function("reduce_sum_f32").unwrap();
    let on_host = DeviceBuffer::from_slice(&host, &[1.0f32; 4]).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&dev, 1).unwrap();
    // SAFETY: refused before anything runs.
    let r = unsafe {
        dev.queue().unwrap().launch_builder(&sum).arg(&on_host).arg(&out).arg(&4u32).launch(sum.dims_for(4).unwrap())
    };
    assert_eq!(r.unwrap_err(), Error::ArgumentDevice { index: 0 });
    // The safe built-in wrappers check the same.
    let r = ordo::builtin::reduce_sum(&dev.queue().unwrap(), &on_host, &mut out);
    assert_eq!(r.unwrap_err(), Error::ArgumentDevice { index: 0 });
}

#[test]
fn ptx_the_jit_refuses_is_a_load_error_with_the_jit_log() {
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let ptx = b".version 8.0\n.target sm_50\n.address_size 64\n.visible .entry broken() { this is not ptx; }\n\0";
    let e = Module::load(&dev, ptx).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidBinary);
    let Error::Load { log, .. } = &e else { panic!("no JIT log: {e}") };
    assert!(!log.trim().is_empty());
    let text = e.to_string();
    assert!(text.contains(log.trim_end()), "{text}");
    println!("the error reads: {text}");
    // The log belongs to that failure only: a good load afterwards loads.
    Module::load_builtin(&dev).unwrap();
}

#[test]
fn asynchronous_copies_and_events_on_a_cuda_queue() {
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let queue = dev.queue().unwrap();
    let (start, end) = (dev.event().unwrap(), dev.event().unwrap());
    let src: Vec<u64> = (0..1 << 20).collect();
    let mut back = vec![0u64; src.len()];
    let mut buf = DeviceBuffer::<u64>::zeroed(&dev, src.len()).unwrap();
    queue.record(&start).unwrap();
    queue
        .scope(|s| {
            s.copy_to_device(&src, &mut buf.as_mut_slice())?;
            s.copy_from_device(&buf.as_slice(), &mut back)
        })
        .unwrap();
    queue.record(&end).unwrap();
    end.synchronize().unwrap();
    assert_eq!(back, src);
    let ms = end.elapsed_since(&start).unwrap();
    assert!(ms >= 0.0, "{ms}");
    let part = buf.slice(10..20).unwrap().to_vec().unwrap();
    assert_eq!(part, (10..20).collect::<Vec<u64>>());
}

#[test]
fn a_released_cuda_allocation_is_released_once() {
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let rt = ctx.runtime();
    let (allocation, ptr) = DeviceBuffer::<f32>::zeroed(&dev, 16).unwrap().into_raw();
    rt.mem_release(allocation).unwrap();
    assert_eq!(rt.mem_release(allocation).unwrap_err().code, ErrorCode::InvalidHandle);
    // A newer allocation, wherever the driver puts it, is not freed by the stale handle.
    let newer = DeviceBuffer::<f32>::zeroed(&dev, 16).unwrap();
    assert_eq!(rt.mem_release(allocation).unwrap_err().code, ErrorCode::InvalidHandle);
    assert_eq!(newer.to_vec().unwrap(), [0.0; 16]);
    println!("first allocation at {:#x}, newer at {:#x}", ptr.0, newer.device_ptr().0);
}

ordo::host_kernel! {
    /// y[i] = a * x[i] + y[i] for i < n: the host twin of `examples/kernels/saxpy.ptx`.
    pub const SAXPY = fn saxpy(t, a: f32, x: ordo::In<f32>, y: ordo::Out<f32>, n: u32) {
        let i = t.global_x() as usize;
        if let (true, Some(xi), Some(yi)) = (i < n as usize, x.get(i), y.get(i)) {
            y.set(i, a * xi + yi);
        }
    }
}
static SAXPY_HOST: ordo::host::HostProgram =
    ordo::host::HostProgram { name: "gpu-tests.saxpy", kernels: &[SAXPY.kernel] };
static SAXPY_PROGRAM: ordo::ProgramImages = ordo::ProgramImages {
    cuda: Some(include_bytes!("../examples/kernels/saxpy.ptx")),
    host: Some(&SAXPY_HOST),
    ..ordo::ProgramImages::NONE
};

/// One typed kernel, one launch line, on the GPU and on the CPU: the same results; a signature
/// that differs from the PTX's parameters is refused at lookup.
#[test]
fn one_typed_launch_runs_the_ptx_kernel_and_its_host_twin() {
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    let n = 1_000_003u32;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let mut results = Vec::new();
    for dev in [gpu.clone(), ctx.device(0).unwrap()] {
        let saxpy = Module::load_for(&dev, &SAXPY_PROGRAM).unwrap().kernel(&SAXPY).unwrap();
        let xb = DeviceBuffer::from_slice(&dev, &x).unwrap();
        let mut y = DeviceBuffer::from_slice(&dev, &vec![1.0f32; n as usize]).unwrap();
        let queue = dev.queue().unwrap();
        // SAFETY: saxpy reads n elements of x and writes n of y, both n long; synchronised below.
        unsafe { queue.launch(&saxpy, saxpy.dims_for(n).unwrap(), (2.0f32, &xb, &mut y, n)) }.unwrap();
        queue.synchronize().unwrap();
        results.push(y.to_vec().unwrap());
    }
    assert_eq!(results[0], results[1], "the GPU and the CPU agree");
    assert!(results[0].iter().zip(&x).all(|(&y, &x)| y == 2.0 * x + 1.0));
    let module = Module::load_for(&gpu, &SAXPY_PROGRAM).unwrap();
    let wrong = module.typed_function::<(f32, ordo::In<'static, f32>, u32)>("saxpy").unwrap_err();
    assert_eq!(wrong.code(), ErrorCode::InvalidArgument, "three parameters declared for the PTX's four");
    let q = gpu.queue().unwrap();
    let unsafe_only = q.launch_host(
        &module.kernel(&SAXPY).unwrap(),
        ordo::LaunchDims::linear(1, 1),
        (
            1.0f32,
            &DeviceBuffer::<f32>::zeroed(&gpu, 1).unwrap(),
            &mut DeviceBuffer::<f32>::zeroed(&gpu, 1).unwrap(),
            1u32,
        ),
    );
    assert_eq!(unsafe_only.unwrap_err().code(), ErrorCode::Unsupported, "a safe launch is the host device's only");
}

/// Page-locked host buffers on CUDA: registered, and asynchronous copies through them in a scope
/// carry 64 MiB there and back intact.
#[test]
fn host_buffers_are_page_locked_and_carry_asynchronous_copies() {
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let n = 16 << 20;
    let mut staging = ordo::HostBuffer::<u32>::zeroed(&dev, n).unwrap();
    assert!(staging.is_page_locked());
    for (i, v) in staging.iter_mut().enumerate() {
        *v = i as u32;
    }
    let mut buf = DeviceBuffer::<u32>::zeroed(&dev, n).unwrap();
    let queue = dev.queue().unwrap();
    queue.scope(|s| s.copy_to_device(&staging, &mut buf.as_mut_slice())).unwrap();
    staging.fill(0);
    queue.scope(|s| s.copy_from_device(&buf.as_slice(), &mut staging)).unwrap();
    assert!(staging.iter().enumerate().all(|(i, &v)| v == i as u32));
}

/// Managed memory on CUDA: a buffer like any other, launched on and read back.
#[test]
fn managed_buffers_work_like_device_buffers() {
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let a = DeviceBuffer::<f32>::managed(&dev, 4096).unwrap();
    let mut b = DeviceBuffer::<f32>::managed(&dev, 4096).unwrap();
    b.fill(3.0).unwrap();
    let mut c = DeviceBuffer::<f32>::managed(&dev, 4096).unwrap();
    ordo::builtin::vector_add(&dev.queue().unwrap(), &a, &b, &mut c).unwrap();
    assert_eq!(c.to_vec().unwrap(), vec![3.0; 4096]);
}

/// A struct owning a context and its CUDA objects moves to another thread and launches there.
#[test]
fn owned_cuda_objects_move_to_another_thread() {
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    struct Work {
        queue: ordo::Queue<'static>,
        x: DeviceBuffer<'static, f32>,
        y: DeviceBuffer<'static, f32>,
    }
    let work = Work {
        queue: dev.queue().unwrap(),
        x: DeviceBuffer::from_slice(&dev, &[1.0f32; 1024]).unwrap(),
        y: DeviceBuffer::<f32>::zeroed(&dev, 1024).unwrap(),
    };
    drop((dev, ctx));
    std::thread::spawn(move || {
        let mut w = work;
        ordo::builtin::vector_add(&w.queue, &w.x, &w.x, &mut w.y).unwrap();
        assert_eq!(w.y.to_vec().unwrap(), vec![2.0; 1024]);
    })
    .join()
    .unwrap();
}

/// The CUDA devices of the default runtime; with fewer than two, says so (a failure under
/// `ORDO_REQUIRE_GPUS=2`, which the two-GPU pass sets).
fn two_cuda(ctx: &Context<'static>) -> Option<(Device<'static>, Device<'static>)> {
    let cuda: Vec<_> = ctx.devices().expect("devices").into_iter().filter(|d| d.kind() == BackendKind::Cuda).collect();
    if cuda.len() < 2 {
        assert!(
            std::env::var("ORDO_REQUIRE_GPUS").as_deref() != Ok("2"),
            "ORDO_REQUIRE_GPUS=2 but {} CUDA device(s)",
            cuda.len()
        );
        println!("skipped: {} CUDA device(s), two needed", cuda.len());
        return None;
    }
    Some((cuda[0].clone(), cuda[1].clone()))
}

/// 1 GiB between two GPUs, each way, checked element by element; both ways at once on two
/// queues; and to and from the host device.
#[test]
fn gigabytes_between_two_gpus_and_the_host() {
    let ctx = Context::new().unwrap();
    let Some((g0, g1)) = two_cuda(&ctx) else { return };
    let access = ctx.runtime().peer_access(g0.raw(), g1.raw()).unwrap();
    println!("peer access 0 -> 1: {access:?}");
    let n = 1 << 28; // 1 GiB of u32
    let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    for (from, to) in [(&g0, &g1), (&g1, &g0)] {
        let src = DeviceBuffer::from_slice(from, &data).unwrap();
        let mut dst = DeviceBuffer::<u32>::zeroed(to, n).unwrap();
        dst.copy_from_device(&src).unwrap();
        assert!(dst.to_vec().unwrap() == data, "1 GiB from {:?} to {:?}", from, to);
    }
    // Both directions at once, each on its destination's queue.
    let (a, b) = (DeviceBuffer::from_slice(&g0, &data).unwrap(), DeviceBuffer::from_slice(&g1, &data).unwrap());
    let (mut a2, mut b2) = (DeviceBuffer::<u32>::zeroed(&g1, n).unwrap(), DeviceBuffer::<u32>::zeroed(&g0, n).unwrap());
    let (q1, q0) = (g1.queue().unwrap(), g0.queue().unwrap());
    let (sa, mut da, sb, mut db) = (a.as_slice(), a2.as_mut_slice(), b.as_slice(), b2.as_mut_slice());
    q1.scope(|s1| {
        q0.scope(|s0| {
            s1.copy_between(&sa, &mut da)?;
            s0.copy_between(&sb, &mut db)
        })
    })
    .unwrap();
    assert!(a2.to_vec().unwrap() == data && b2.to_vec().unwrap() == data, "both ways at once");
    // The host device and a GPU, both ways.
    let host = ctx.device(0).unwrap();
    let on_host = DeviceBuffer::from_slice(&host, &data[..1 << 20]).unwrap();
    let mut on_gpu = DeviceBuffer::<u32>::zeroed(&g1, 1 << 20).unwrap();
    on_gpu.copy_from_device(&on_host).unwrap();
    let mut back = DeviceBuffer::<u32>::zeroed(&host, 1 << 20).unwrap();
    back.copy_from_device(&on_gpu).unwrap();
    assert_eq!(back.to_vec().unwrap(), &data[..1 << 20]);
}

/// Large copies between a GPU and the host device page-lock the host device's allocation and
/// run asynchronously on the GPU's queue, both ways, checked byte for byte; freeing the host
/// allocation while such a copy is queued waits for it first; what is still page-locked at the
/// teardown is unregistered by it (the report is clean).
#[test]
fn large_copies_with_the_host_device_are_page_locked_and_asynchronous() {
    use ordo::raw::{CopyKind, MemKind};
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    let host = ctx.device(0).unwrap();
    let n = 16 << 20; // 64 MiB of u32
    let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let on_host = DeviceBuffer::from_slice(&host, &data).unwrap();
    let mut on_gpu = DeviceBuffer::<u32>::zeroed(&gpu, n).unwrap();
    let mut back = DeviceBuffer::<u32>::zeroed(&host, n).unwrap();
    let q = gpu.queue().unwrap();
    let (from, mut to) = (on_host.as_slice(), on_gpu.as_mut_slice());
    q.scope(|s| s.copy_between(&from, &mut to)).unwrap();
    let (from, mut to) = (on_gpu.as_slice(), back.as_mut_slice());
    q.scope(|s| s.copy_between(&from, &mut to)).unwrap();
    assert!(back.to_vec().unwrap() == data, "64 MiB there and back on the GPU's queue");
    // The raw API: a host allocation freed right after its copy was queued.
    let rt = ctx.runtime();
    let bytes = n * 4;
    let (h, g) = (
        rt.mem_alloc(host.raw(), MemKind::Device, bytes).unwrap(),
        rt.mem_alloc(gpu.raw(), MemKind::Device, bytes).unwrap(),
    );
    rt.copy_to_device(h, bytemuck_bytes(&data)).unwrap();
    let raw_q = rt.queue_create(gpu.raw()).unwrap();
    for _ in 0..4 {
        rt.copy_device(g, h, bytes, Some(raw_q)).unwrap();
    }
    rt.mem_free(h).unwrap(); // waits for the queued copies, then unregisters and frees
    let mut out = vec![0u32; n];
    // SAFETY: `out` is `bytes` long and outlives the synchronous copy.
    unsafe { rt.memcpy(CopyKind::DeviceToHost, out.as_mut_ptr() as u64, g.0, bytes, None) }.unwrap();
    assert!(out == data, "the copies queued before the free read the data");
    rt.queue_destroy(raw_q).unwrap();
    rt.mem_free(g).unwrap();
}

fn bytemuck_bytes(v: &[u32]) -> &[u8] {
    // SAFETY: u32 has no padding; the byte view covers the same memory for its whole length.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

/// Buffers allocated and freed in a CUDA queue's order (`cuMemAllocAsync` / `cuMemFreeAsync`):
/// zeroed on the queue, written and read back, freed when dropped, a hundred times over; an
/// address of the raw call is `Ordered` to `mem_info`, and `mem_free` frees it too.
#[test]
fn queue_ordered_buffers_on_a_cuda_queue() {
    use ordo::raw::MemKind;
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let q = dev.queue().unwrap();
    let n = 1 << 16;
    for round in 0..100u32 {
        let mut b = DeviceBuffer::<u32>::zeroed_on(&q, n).unwrap();
        assert!(b.to_vec().unwrap().iter().all(|&v| v == 0), "zeroed in queue order");
        b.copy_from(&vec![round; n]).unwrap();
        assert!(b.to_vec().unwrap().iter().all(|&v| v == round));
    }
    let rt = ctx.runtime();
    let (_, p) = rt.mem_alloc_on(q.raw(), 4096).unwrap();
    assert_eq!(rt.mem_info(p).unwrap().2, MemKind::Ordered);
    rt.mem_free_on(q.raw(), p).unwrap();
    let (_, p) = rt.mem_alloc_on(q.raw(), 4096).unwrap();
    rt.mem_free(p).unwrap();
    assert_eq!(rt.mem_free(p).unwrap_err().code, ErrorCode::NotFound);
}

/// A graph captured once on a CUDA queue (saxpy, y = 2x + y, three times) and launched three
/// times: nothing runs during the capture, each launch applies the captured work to the
/// buffers' current contents, a buffer rewritten between launches is read anew; during the
/// capture the queue cannot be synchronised; the graph outlives nothing it uses.
#[test]
fn a_captured_graph_replays_its_launches_on_a_cuda_queue() {
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

/// A host-and-device copy whose host side is a GPU's device memory (known to ordo) is refused
/// before the driver, nothing copied: the host would read or write a device address and fault.
#[test]
fn a_gpus_memory_named_as_the_host_side_of_a_copy_is_refused() {
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    let rt = ctx.runtime();
    let a = rt.mem_alloc(gpu.raw(), ordo_core::MemKind::Device, 256).unwrap();
    let b = rt.mem_alloc(gpu.raw(), ordo_core::MemKind::Device, 256).unwrap();
    // Initialised, so that the device-to-device copy below reads no uninitialised memory.
    rt.copy_to_device(a, &[1u8; 256]).unwrap();
    for kind in [ordo_core::CopyKind::HostToDevice, ordo_core::CopyKind::DeviceToHost] {
        // SAFETY: refused before anything is read or written.
        let r = unsafe { rt.memcpy(kind, b.0, a.0 + 16, 64, None) };
        assert_eq!(r.unwrap_err().code, ErrorCode::InvalidArgument, "{kind:?}");
    }
    // SAFETY: two device allocations of 256 bytes.
    unsafe { rt.memcpy(ordo_core::CopyKind::DeviceToDevice, b.0, a.0, 256, None) }.unwrap();
    rt.mem_free(a).unwrap();
    rt.mem_free(b).unwrap();
}

/// On a CUDA queue: a graph launched into a capture is refused before the driver and the
/// capture goes on; an event recorded during a capture stays refused after it ended (its record
/// is part of the graph: the driver refuses to synchronise it) until it is recorded again.
#[test]
fn captured_event_records_and_graphs_launched_into_a_capture_are_refused_alike() {
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

/// An event recorded on one GPU's queue gates the other GPU's queue (`cuStreamWaitEvent`
/// across contexts): the gated copy reads what the first GPU's kernel wrote, though the kernel
/// runs long.
#[test]
fn an_event_of_one_gpu_gates_work_on_the_other() {
    let ctx = Context::new().unwrap();
    let Some((g0, g1)) = two_cuda(&ctx) else { return };
    let n = 1 << 24;
    let ones = DeviceBuffer::from_slice(&g0, &vec![1.0f32; n]).unwrap();
    let mut twos = DeviceBuffer::<f32>::zeroed(&g0, n).unwrap();
    let mut on_g1 = DeviceBuffer::<f32>::zeroed(&g1, n).unwrap();
    let (q0, q1, done) = (g0.queue().unwrap(), g1.queue().unwrap(), g0.event().unwrap());
    let module = Module::load_builtin(&g0).unwrap();
    type Add = (ordo::In<'static, f32>, ordo::In<'static, f32>, ordo::Out<'static, f32>, u32);
    let add = module.typed_function::<Add>("vector_add_f32").unwrap();
    let spin = module.function("spin_cycles").unwrap();
    // A kernel that holds queue 0 for a while, then the add, then the event.
    let cycles = 200_000_000u64;
    // SAFETY: spin_cycles(cycles) only spins; vector_add reads n of ones and writes n of twos.
    unsafe {
        q0.launch_builder(&spin).arg(&cycles).launch(ordo::LaunchDims::linear(1, 1)).unwrap();
        q0.launch(&add, add.dims_for(n as u32).unwrap(), (&ones, &ones, &mut twos, n as u32)).unwrap();
    }
    q0.record(&done).unwrap();
    q1.wait(&done).unwrap();
    let (from, mut to) = (twos.as_slice(), on_g1.as_mut_slice());
    q1.scope(|s| s.copy_between(&from, &mut to)).unwrap();
    assert!(on_g1.to_vec().unwrap().iter().all(|&v| v == 2.0), "the copy waited for the other GPU's kernel");
}

/// CUDA C++ compiled at run time (NVRTC) for the GPU's own architecture, loaded and launched
/// through the typed API: an `extern "C"` kernel by its name, a template instantiation by the
/// mangled name its name expression reports; source that does not compile comes back with the
/// compiler's log. Needs NVRTC on the GPU machine (skips saying so without it, unless
/// `ORDO_REQUIRE_NVRTC=1`).
#[test]
fn kernels_compiled_from_source_run_on_the_gpu() {
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    if !ordo::nvrtc::available() {
        assert!(std::env::var("ORDO_REQUIRE_NVRTC").as_deref() != Ok("1"), "{}", ordo::nvrtc::NVRTC_MISSING);
        eprintln!("skipped: {}", ordo::nvrtc::NVRTC_MISSING);
        return;
    }
    let source = r#"
extern "C" __global__ void axpb(float a, const float* x, float b, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}
template <typename T> __global__ void square(T* v, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = v[i] * v[i];
}
"#;
    let options = ordo::nvrtc::CompileOptions { name_expressions: vec!["square<float>".into()], ..Default::default() };
    let (module, compiled) = Module::compile_cuda(&gpu, source, &options).unwrap();
    let ordo::InfoValue::Version(major, minor) = gpu.info(ordo::DeviceInfo::ComputeCapability).unwrap() else {
        panic!("a compute capability")
    };
    assert!(compiled.ptx_text().contains(&format!(".target sm_{major}{minor}")), "the device's own architecture");
    let axpb =
        module.typed_function::<(f32, ordo::In<'static, f32>, f32, ordo::Out<'static, f32>, u32)>("axpb").unwrap();
    let square = module
        .typed_function::<(ordo::Out<'static, f32>, u32)>(compiled.lowered_name("square<float>").unwrap())
        .unwrap();
    let n = 1000u32;
    let x = DeviceBuffer::from_slice(&gpu, &(0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let mut y = DeviceBuffer::<f32>::zeroed(&gpu, n as usize).unwrap();
    let queue = gpu.queue().unwrap();
    // SAFETY: axpb reads n elements of x and writes n of y; square rewrites n of y; all n long,
    // alive until the queue is synchronised.
    unsafe {
        queue.launch(&axpb, axpb.dims_for(n).unwrap(), (2.0f32, &x, 1.0f32, &mut y, n)).unwrap();
        queue.launch(&square, square.dims_for(n).unwrap(), (&mut y, n)).unwrap();
    }
    queue.synchronize().unwrap();
    let want: Vec<f32> = (0..n).map(|i| (2.0 * i as f32 + 1.0).powi(2)).collect();
    assert_eq!(y.to_vec().unwrap(), want);
    let broken = Module::compile_cuda(&gpu, "__global__ void k() { nope(); }", &Default::default()).unwrap_err();
    match broken {
        ordo::Error::Load { error, log } => {
            assert_eq!(error.code, ErrorCode::InvalidBinary);
            assert!(log.contains("nope"), "{log}");
        }
        other => panic!("expected the compiler's log, got {other:?}"),
    }
    let host = ctx.device(0).unwrap();
    assert_eq!(Module::compile_cuda(&host, source, &options).unwrap_err().code(), ErrorCode::Unsupported);
}

/// What the timeline hands a sink, kept for `a_trace_times_cuda_work_on_the_device`.
struct Collected {
    work: std::sync::Mutex<Vec<ordo::trace::Work>>,
    names: std::sync::Mutex<Vec<(u64, String)>>,
    calls: std::sync::atomic::AtomicU64,
}

impl ordo::trace::Sink for Collected {
    fn now_ns(&self) -> u64 {
        ordo_core::std_clock_ns()
    }
    fn call(&self, _: &ordo::trace::Call<'_>) {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn work(&self, work: &ordo::trace::Work) {
        self.work.lock().unwrap().push(*work);
    }
    fn kernel_named(&self, kernel: u64, name: &str) {
        self.names.lock().unwrap().push((kernel, name.into()));
    }
}

static COLLECTED: Collected = Collected {
    work: std::sync::Mutex::new(Vec::new()),
    names: std::sync::Mutex::new(Vec::new()),
    calls: std::sync::atomic::AtomicU64::new(0),
};

#[test]
fn a_trace_times_cuda_work_on_the_device() {
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    let n = 1usize << 22;
    let x = DeviceBuffer::from_slice(&gpu, &vec![1.0f32; n]).unwrap();
    let queue = gpu.queue().unwrap();
    assert!(ordo::trace::install(&COLLECTED), "no other sink");
    let mut y = DeviceBuffer::<f32>::zeroed_on(&queue, n).unwrap();
    for _ in 0..3 {
        ordo::builtin::vector_add(&queue, &x, &x, &mut y).unwrap();
    }
    let mut back = vec![0f32; n];
    queue.scope(|s| s.copy_from_device(&y.as_slice(), &mut back)).unwrap();
    queue.synchronize().unwrap();
    drop(queue); // resolves the queue's spans
    ordo::trace::uninstall();
    assert!(back.iter().all(|&v| v == 2.0));
    let work = COLLECTED.work.lock().unwrap().clone();
    let names = COLLECTED.names.lock().unwrap().clone();
    println!("{} calls traced; device work:", COLLECTED.calls.load(std::sync::atomic::Ordering::Relaxed));
    for w in &work {
        println!(
            "  {:?} {} ns (submitted {} ns before it started)",
            w.kind,
            w.end_ns - w.start_ns,
            w.start_ns - w.submit_ns
        );
    }
    let kernels: Vec<_> = work.iter().filter(|w| matches!(w.kind, ordo::trace::WorkKind::Kernel { .. })).collect();
    assert_eq!(kernels.len(), 3, "three launches, each timed");
    assert!(work.iter().all(|w| w.backend == BackendKind::Cuda && w.ordinal == gpu.ordinal()));
    for k in &kernels {
        let ordo::trace::WorkKind::Kernel { kernel, grid, block } = k.kind else { unreachable!() };
        assert!(names.iter().any(|(h, name)| *h == kernel && name == "vector_add_f32"), "named at its lookup");
        assert_eq!(u64::from(grid[0]) * u64::from(block[0]), n.next_multiple_of(block[0] as usize) as u64);
        // 4 Mi elements, 48 MiB moved: more than a microsecond on any GPU.
        assert!(k.end_ns - k.start_ns > 1_000, "a kernel of 4 Mi elements takes device time");
    }
    let copies: Vec<_> = work.iter().filter(|w| matches!(w.kind, ordo::trace::WorkKind::Copy { .. })).collect();
    assert_eq!(copies.len(), 1);
    assert_eq!(copies[0].kind, ordo::trace::WorkKind::Copy { bytes: 4 * n as u64 });
    assert!(work.iter().any(|w| matches!(w.kind, ordo::trace::WorkKind::Fill { bytes } if bytes == 4 * n as u64)));
    let mut spans: Vec<_> = work.iter().map(|w| (w.start_ns, w.end_ns, w.submit_ns)).collect();
    spans.sort();
    for (s, e, submitted) in &spans {
        assert!(s >= submitted && e >= s, "after its call, not negative");
    }
    for p in spans.windows(2) {
        assert!(p[1].0 >= p[0].1, "one queue: no overlap");
    }
}

/// What a CUDA host function's calls into ordo answered: (queue_synchronize, mem_alloc,
/// event_query), as error codes (0: it worked).
static FROM_HOST_FN: std::sync::Mutex<Option<[i32; 3]>> = std::sync::Mutex::new(None);

/// The queue and event a host function uses (raw handles), set before it is enqueued.
static HOST_FN_OBJECTS: std::sync::Mutex<Option<(ordo_core::Queue, ordo_core::Event, ordo_core::Device)>> =
    std::sync::Mutex::new(None);

unsafe extern "C" fn calls_ordo(_: *mut core::ffi::c_void) {
    let rt = ordo::runtime();
    let (q, e, d) = HOST_FN_OBJECTS.lock().unwrap().expect("set before the host function was enqueued");
    let code = |r: ordo_core::Result<()>| r.err().map_or(0, |e| e.code as i32);
    let answers = [
        code(rt.queue_synchronize(q)),
        code(rt.mem_alloc(d, ordo_core::MemKind::Device, 64).map(drop)),
        code(rt.event_query(e).map(drop)),
    ];
    *FROM_HOST_FN.lock().unwrap() = Some(answers);
}

/// docs/lifecycle.md ("Callbacks"): a call from inside a callback works or answers `Busy`, never hangs. A CUDA host
/// function may make no CUDA call (`cuLaunchHostFunc`'s rule; a synchronise there waits for
/// itself): ordo's calls from one that reach the driver answer `Busy`, and the queue goes on.
#[test]
fn calls_from_a_cuda_host_function_are_busy_and_never_hang() {
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    let rt = ctx.runtime();
    let queue = gpu.queue().unwrap();
    let event = rt.event_create(gpu.raw()).unwrap();
    rt.event_record(event, queue.raw()).unwrap();
    *HOST_FN_OBJECTS.lock().unwrap() = Some((queue.raw(), event, gpu.raw()));
    // SAFETY: `calls_ordo` may run on any thread; it uses only statics.
    unsafe { rt.queue_host_function(queue.raw(), calls_ordo, core::ptr::null_mut()) }.unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let q = queue.raw();
    std::thread::spawn(move || tx.send(ordo::runtime().queue_synchronize(q)));
    rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the queue finished within 20 s").unwrap();
    let busy = ErrorCode::Busy as i32;
    assert_eq!(FROM_HOST_FN.lock().unwrap().take(), Some([busy, busy, busy]), "each call answered Busy");
    rt.event_destroy(event).unwrap();
}

/// The cache of queue-ordered memory on a GPU: a buffer dropped on its queue while that queue's
/// kernel (a long spin, then an add writing the buffer) still runs is kept for the queue; another
/// queue's allocation of its size gets other memory at once; the same queue's next allocation
/// gets the same block, and writes through it land after the old kernel (checked values).
#[test]
fn a_cached_block_is_reused_in_its_queues_order_only() {
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let n = 1 << 20;
    let (q, other) = (dev.queue().unwrap(), dev.queue().unwrap());
    let module = Module::load_builtin(&dev).unwrap();
    type Add = (ordo::In<'static, f32>, ordo::In<'static, f32>, ordo::Out<'static, f32>, u32);
    let add = module.typed_function::<Add>("vector_add_f32").unwrap();
    let spin = module.function("spin_cycles").unwrap();
    let ones = DeviceBuffer::from_slice(&dev, &vec![1.0f32; n]).unwrap();
    let mut result = DeviceBuffer::<f32>::zeroed(&dev, n).unwrap();
    let mut first = DeviceBuffer::<f32>::zeroed_on(&q, n).unwrap();
    let address = first.device_ptr();
    let dims = add.dims_for(n as u32).unwrap();
    // SAFETY: spin_cycles only spins; each vector_add reads n of its inputs and writes n of its
    // output: `first` = 2, then `result` = `first` + 1 = 3, both after the spin.
    unsafe {
        q.launch_builder(&spin).arg(&200_000_000u64).launch(ordo::LaunchDims::linear(1, 1)).unwrap();
        q.launch(&add, dims, (&ones, &ones, &mut first, n as u32)).unwrap();
        q.launch(&add, dims, (&first, &ones, &mut result, n as u32)).unwrap();
    }
    drop(first); // freed on `q` while its kernels run: kept for `q`
    assert_eq!(dev.cache_stats().unwrap().blocks, 1);
    let elsewhere = DeviceBuffer::<f32>::zeroed_on(&other, n).unwrap();
    assert_ne!(elsewhere.device_ptr(), address, "another queue never gets a block of this one");
    let mut again = DeviceBuffer::<f32>::zeroed_on(&q, n).unwrap();
    assert_eq!(again.device_ptr(), address, "the queue's next allocation of the size takes its block");
    assert_eq!(dev.cache_stats().unwrap().hits, 1);
    // Written after the adds that used the block before (a fill without a queue starts after
    // the device's queued work): the second add read 2s, never 7s or 0s.
    again.fill(7.0).unwrap();
    assert!(result.to_vec().unwrap().iter().all(|&v| v == 3.0), "the old user's kernels saw their own data");
    assert!(again.to_vec().unwrap().iter().all(|&v| v == 7.0));
    drop(again);
    assert_eq!(q.trim().unwrap(), n * 4);
    assert_eq!(dev.cache_stats().unwrap().blocks, 0);
}
