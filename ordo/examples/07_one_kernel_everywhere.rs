//! One kernel, every device: SAXPY declared once in Rust types, run as PTX on a GPU and as its
//! Rust twin on the CPU, with one launch line. `ORDO_DEVICE=host` picks the CPU device even
//! where there is a GPU. (25 lines of code, its CPU twin included; cudarc's GPU-only launch
//! example, `03-launch-kernel.rs`, has 26.)
use ordo::{Context, DeviceBuffer, In, Module, Out, ProgramImages, host::HostProgram};

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

fn main() -> Result<(), ordo::Error> {
    let ctx = Context::new()?;
    let dev =
        if std::env::var("ORDO_DEVICE").as_deref() == Ok("host") { ctx.device(0)? } else { ctx.default_device()? };
    let (n, queue, saxpy) = (1u32 << 20, dev.queue()?, Module::load_for(&dev, &PROGRAM)?.kernel(&SAXPY)?);
    let x = DeviceBuffer::from_slice(&dev, &vec![1.0f32; n as usize])?;
    let mut y = DeviceBuffer::from_slice(&dev, &vec![2.0f32; n as usize])?;
    // SAFETY: saxpy reads n elements of x and writes n of y, which hold n; nothing else uses them
    // until the queue is synchronised.
    unsafe { queue.launch(&saxpy, saxpy.dims_for(n)?, (3.0f32, &x, &mut y, n))? };
    queue.synchronize()?;
    assert!(y.to_vec()?.iter().all(|&v| v == 5.0));
    println!("saxpy over {n} elements on {} ({}): 3 * 1 + 2 = 5 everywhere", dev.name()?, dev.kind().name());
    Ok(())
}
