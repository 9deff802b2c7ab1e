//! A time-stepping loop captured once and replayed: positions advance by velocity times dt,
//! eight steps (eight SAXPY launches) captured as one graph, the graph launched four times,
//! then the velocities rewritten and the same graph launched again (a graph reads its buffers'
//! contents at each launch, so new data needs no new capture), then the time step doubled by
//! giving the eight launches new arguments (`Graph::set_args`, no new capture either). Graphs
//! exist on CUDA and on the host device (which `ORDO_DEVICE=host` picks, and where there is no
//! GPU); on a device without them (AMDGPU) `Queue::capture` answers `Unsupported` and the
//! example launches the same steps one by one, as a program does there.
use ordo::{Context, DeviceBuffer, ErrorCode, In, Module, Out, ProgramImages, Queue, TypedFunction, host::HostProgram};

ordo::host_kernel! {
    /// y[i] = a * x[i] + y[i] for i < n (the CPU twin of `kernels/saxpy.ptx`).
    pub const SAXPY = fn saxpy(t, a: f32, x: In<f32>, y: Out<f32>, n: u32) {
        let i = t.global_x() as usize;
        if let (true, Some(xi), Some(yi)) = (i < n as usize, x.get(i), y.get(i)) {
            y.set(i, a * xi + yi);
        }
    }
}
static HOST: HostProgram = HostProgram { name: "example.saxpy", kernels: &[SAXPY.kernel] };
static PROGRAM: ProgramImages =
    ProgramImages { cuda: Some(include_bytes!("kernels/saxpy.ptx")), host: Some(&HOST), ..ProgramImages::NONE };

type Saxpy<'r> = TypedFunction<'r, (f32, In<'static, f32>, Out<'static, f32>, u32)>;

/// Eight steps of `pos += dt * vel` on `q`.
fn eight_steps(
    q: &Queue<'_>,
    saxpy: &Saxpy<'_>,
    dt: f32,
    vel: &DeviceBuffer<f32>,
    pos: &mut DeviceBuffer<f32>,
) -> ordo::Result<()> {
    let n = pos.len() as u32;
    for _ in 0..8 {
        // SAFETY: saxpy reads n elements of vel and writes n of pos, which hold n; the queue is
        // synchronised before either is read or dropped.
        unsafe { q.launch(saxpy, saxpy.dims_for(n)?, (dt, vel, &mut *pos, n))? };
    }
    Ok(())
}

fn main() -> Result<(), ordo::Error> {
    let ctx = Context::new()?;
    let dev =
        if std::env::var("ORDO_DEVICE").as_deref() == Ok("host") { ctx.device(0)? } else { ctx.default_device()? };
    let (n, queue, saxpy) = (1usize << 16, dev.queue()?, Module::load_for(&dev, &PROGRAM)?.kernel(&SAXPY)?);
    let mut vel = DeviceBuffer::from_slice(&dev, &vec![1.0f32; n])?;
    let mut pos = DeviceBuffer::<f32>::zeroed(&dev, n)?;
    // Capture once where the device has graphs; otherwise the steps are launched each time.
    let graph = match queue.capture(|q| eight_steps(q, &saxpy, 0.125, &vel, &mut pos)) {
        Ok(graph) => Some(graph),
        Err(e) if e.code() == ErrorCode::Unsupported => None,
        Err(e) => return Err(e),
    };
    let run = |dt: f32, vel: &DeviceBuffer<f32>, pos: &mut DeviceBuffer<f32>| match &graph {
        // SAFETY: the captured launches' buffers, vel and pos, are alive and borrowed here; the
        // queue is synchronised before they are read.
        Some(graph) => unsafe { graph.launch(&queue) },
        None => eight_steps(&queue, &saxpy, dt, vel, pos),
    };
    for _ in 0..4 {
        run(0.125, &vel, &mut pos)?; // 8 steps of 0.125 * 1.0
    }
    queue.synchronize()?;
    assert!(pos.to_vec()?.iter().all(|&p| p == 4.0), "32 steps of 1/8");
    vel.copy_from(&vec![-2.0f32; n])?; // new data, same graph
    run(0.125, &vel, &mut pos)?;
    queue.synchronize()?;
    assert!(pos.to_vec()?.iter().all(|&p| p == 2.0), "8 more steps of -2/8");
    if let Some(graph) = &graph {
        // A doubled time step: new arguments for the eight launches, no new capture.
        for i in 0..graph.kernel_count()? {
            // SAFETY: as for the launches captured: vel and pos hold n elements and stay alive
            // and borrowed until the queue is synchronised below.
            unsafe { graph.set_args(i, &saxpy, (0.25f32, &vel, &mut pos, n as u32))? };
        }
    }
    run(0.25, &vel, &mut pos)?;
    queue.synchronize()?;
    assert!(pos.to_vec()?.iter().all(|&p| p == -2.0), "8 more steps of -2/4");
    let how = if graph.is_some() {
        "one graph of 8 launches, launched 6 times, its arguments updated once"
    } else {
        "48 launches (no graphs on this device)"
    };
    println!("{n} positions advanced 48 steps on {} ({}): {how}", dev.name()?, dev.kind().name());
    Ok(())
}
