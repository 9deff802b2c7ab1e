//! The typed API on a CUDA device: kernel parameter layouts from the driver, checked launches,
//! the JIT's log in errors, buffers of another device refused, asynchronous copies and events.
//! Without a CUDA device every test says so and passes; `ORDO_REQUIRE_GPU=1` makes that a
//! failure (tests/gpu/run.sh sets it).

use ordo::{BackendKind, Context, Device, DeviceBuffer, Error, ErrorCode, Module};

/// The first CUDA device of the default runtime, or `None` (printed) where there is none.
fn cuda<'c>(ctx: &'c Context<'static>) -> Option<Device<'c>> {
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
