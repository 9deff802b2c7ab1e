//! Loading a PTX or cubin module and launching its kernel with checked arguments (CUDA only:
//! without a CUDA device this says so and exits 0). Pass a file to load it; by default the
//! example loads ordo's built-in PTX.
use ordo::{BackendKind, Context, DeviceBuffer, Module};

fn main() -> Result<(), ordo::Error> {
    let ctx = Context::new()?;
    let Some(dev) = ctx.devices()?.into_iter().find(|d| d.kind() == BackendKind::Cuda) else {
        println!("no CUDA device: this example needs one (skipped)");
        return Ok(());
    };
    let image = match std::env::args().nth(1) {
        Some(path) => std::fs::read(path).expect("the module file is readable"),
        None => ordo::builtin_program_image(BackendKind::Cuda).expect("built with feature cuda").to_vec(),
    };
    let module = Module::load(&dev, &image)?; // a JIT error names the driver's code
    let add = module.function("vector_add_f32")?;
    println!("vector_add_f32 takes {:?} parameters", add.param_count());
    let n = 4096u32;
    let a = DeviceBuffer::from_slice(&dev, &vec![1.5f32; n as usize])?;
    let mut c = DeviceBuffer::<f32>::zeroed(&dev, n as usize)?;
    let queue = dev.queue()?;
    // A wrong argument is refused before the driver sees it (here: n as a u64, 8 bytes for 4).
    // SAFETY: refused before the kernel runs.
    let wrong =
        unsafe { queue.launch_builder(&add).arg(&a).arg(&a).arg(&c).arg(&u64::from(n)).launch(add.dims_for(n)?) };
    println!("refused: {}", wrong.unwrap_err());
    // SAFETY: vector_add_f32(a, b, c, n) reads a and b and writes c, n elements each.
    unsafe { queue.launch_builder(&add).arg(&a).arg(&a).arg(&c.as_mut_slice()).arg(&n).launch(add.dims_for(n)?)? };
    assert!(c.to_vec()?.iter().all(|&v| v == 3.0));
    println!("module kernel on {}: ok", dev.name()?);
    Ok(())
}
