//! Vector add on the default device (the first GPU, else the host CPU): no `unsafe`.
use ordo::{Context, DeviceBuffer};

fn main() -> Result<(), ordo::Error> {
    let ctx = Context::new()?;
    let dev = ctx.default_device()?;
    let n = 1 << 16;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (2 * i) as f32).collect();
    let a_dev = DeviceBuffer::from_slice(&dev, &a)?;
    let b_dev = DeviceBuffer::from_slice(&dev, &b)?;
    let mut c_dev = DeviceBuffer::<f32>::zeroed(&dev, n)?;
    ordo::builtin::vector_add(&dev.queue()?, &a_dev, &b_dev, &mut c_dev)?;
    let c = c_dev.to_vec()?;
    assert!(c.iter().enumerate().all(|(i, &v)| v == (3 * i) as f32));
    println!("vector add of {n} elements on {} ({}): ok", dev.name()?, dev.kind().name());
    Ok(())
}
