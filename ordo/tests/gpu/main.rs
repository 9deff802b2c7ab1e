//! The typed API on a CUDA device: kernel parameter layouts from the driver, checked launches,
//! the JIT's log in errors, buffers of another device refused, asynchronous copies and events.
//! Without a CUDA device every test says so and passes; `ORDO_REQUIRE_GPU=1` makes that a
//! failure (tests/gpu/run.sh sets it).
//! Split by concern: `memory` (allocations, host and managed buffers, queue-ordered memory and
//! its cache), `graphs` (capture, replay, updates), `collectives` (NCCL); the rest here.

mod collectives;
mod graphs;
mod memory;

use ordo::{BackendKind, Context, Device, DeviceBuffer, Error, ErrorCode, Module};

/// The tests share the default runtime's device, on which a capture refuses other threads'
/// calls without a queue and a trace counts every thread's work: one test at a time, also under
/// `cargo test`'s threads (a test that failed leaves the lock usable).
pub(crate) fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The first CUDA device of the default runtime, or `None` (printed) where there is none.
pub(crate) fn cuda(ctx: &Context<'static>) -> Option<Device<'static>> {
    let dev = ctx.devices().expect("devices").into_iter().find(|d| d.kind() == BackendKind::Cuda);
    if dev.is_none() {
        assert!(std::env::var("ORDO_REQUIRE_GPU").as_deref() != Ok("1"), "ORDO_REQUIRE_GPU=1 but no CUDA device");
        println!("skipped: no CUDA device");
    }
    dev
}

#[test]
fn launches_are_checked_against_the_drivers_parameter_layout() {
    let _one = crate::one_at_a_time();
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
    let _one = crate::one_at_a_time();
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
    let _one = crate::one_at_a_time();
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
    let _one = crate::one_at_a_time();
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
pub(crate) static SAXPY_PROGRAM: ordo::ProgramImages = ordo::ProgramImages {
    cuda: Some(include_bytes!("../../examples/kernels/saxpy.ptx")),
    host: Some(&SAXPY_HOST),
    ..ordo::ProgramImages::NONE
};

/// One typed kernel, one launch line, on the GPU and on the CPU: the same results; a signature
/// that differs from the PTX's parameters is refused at lookup.
#[test]
fn one_typed_launch_runs_the_ptx_kernel_and_its_host_twin() {
    let _one = crate::one_at_a_time();
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

/// A struct owning a context and its CUDA objects moves to another thread and launches there.
#[test]
fn owned_cuda_objects_move_to_another_thread() {
    let _one = crate::one_at_a_time();
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
pub(crate) fn two_cuda(ctx: &Context<'static>) -> Option<(Device<'static>, Device<'static>)> {
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
    let _one = crate::one_at_a_time();
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

/// An event recorded on one GPU's queue gates the other GPU's queue (`cuStreamWaitEvent`
/// across contexts): the gated copy reads what the first GPU's kernel wrote, though the kernel
/// runs long.
#[test]
fn an_event_of_one_gpu_gates_work_on_the_other() {
    let _one = crate::one_at_a_time();
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
    let _one = crate::one_at_a_time();
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
    let _one = crate::one_at_a_time();
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

/// A queue of `gpu` with an event recorded on it, both named in `HOST_FN_OBJECTS` for the host
/// functions the tests enqueue.
fn host_fn_objects<'r>(rt: &ordo_core::Runtime, gpu: &Device<'r>) -> (ordo::Queue<'r>, ordo_core::Event) {
    let queue = gpu.queue().unwrap();
    let event = rt.event_create(gpu.raw()).unwrap();
    rt.event_record(event, queue.raw()).unwrap();
    *HOST_FN_OBJECTS.lock().unwrap() = Some((queue.raw(), event, gpu.raw()));
    (queue, event)
}

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
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    let rt = ctx.runtime();
    let (queue, event) = host_fn_objects(rt, &gpu);
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

/// Set once the test has a create/destroy call pending (`a_host_function_meeting_a_pending_writer_answers_busy`).
static WRITER_PENDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// What that host function's call answered (an error code, or 0), -1 until it ran.
static FROM_WAITING_HOST_FN: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

unsafe extern "C" fn calls_ordo_after_a_writer(_: *mut core::ffi::c_void) {
    let t = std::time::Instant::now();
    while !WRITER_PENDING.load(std::sync::atomic::Ordering::SeqCst) && t.elapsed().as_secs() < 10 {
        std::thread::yield_now();
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (_, e, _) = HOST_FN_OBJECTS.lock().unwrap().expect("set before the host function was enqueued");
    let answer = ordo::runtime().event_query(e).err().map_or(0, |e| e.code as i32);
    FROM_WAITING_HOST_FN.store(answer, std::sync::atomic::Ordering::SeqCst);
}

/// A CUDA host function whose call into ordo meets a create/destroy call that waits for a
/// synchronise in flight, which waits for that host function: the call answers `Busy` at once
/// and all three finish (it used to wait for the writer for ever; 16 threads of this suite at
/// once hung so).
#[test]
fn a_host_function_meeting_a_pending_writer_answers_busy() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    let rt = ctx.runtime();
    let (queue, event) = host_fn_objects(rt, &gpu);
    WRITER_PENDING.store(false, std::sync::atomic::Ordering::SeqCst);
    // SAFETY: the function may run on any thread; it uses only statics.
    unsafe { rt.queue_host_function(queue.raw(), calls_ordo_after_a_writer, core::ptr::null_mut()) }.unwrap();
    let (synced_tx, synced) = std::sync::mpsc::channel();
    let q = queue.raw();
    // A synchronise in flight, waiting for the host function.
    std::thread::spawn(move || synced_tx.send(ordo::runtime().queue_synchronize(q)));
    std::thread::sleep(std::time::Duration::from_millis(100));
    // A create/destroy call, waiting for the synchronise to leave.
    let (made_tx, made) = std::sync::mpsc::channel();
    let d = gpu.raw();
    std::thread::spawn(move || made_tx.send(ordo::runtime().queue_create(d)));
    WRITER_PENDING.store(true, std::sync::atomic::Ordering::SeqCst);
    let timeout = std::time::Duration::from_secs(20);
    synced.recv_timeout(timeout).expect("the synchronise returned within 20 s").unwrap();
    let other = made.recv_timeout(timeout).expect("the create returned within 20 s").unwrap();
    let answer = FROM_WAITING_HOST_FN.load(std::sync::atomic::Ordering::SeqCst);
    assert!(answer == ErrorCode::Busy as i32 || answer == 0, "the host function's call answered {answer}");
    rt.queue_destroy(other).unwrap();
    rt.event_destroy(event).unwrap();
}
