//! Every device at once: a vector add split across all devices of the default runtime (the host
//! CPU, and every GPU), each part computed where it lives, gathered into one buffer on the
//! default device with copies between devices, and checked. Without a GPU the host device does
//! it all.
use ordo::{Context, DeviceBuffer, builtin};

fn main() -> Result<(), ordo::Error> {
    let ctx = Context::new()?;
    let devices = ctx.devices()?;
    let n: usize = 1 << 22;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (n - i) as f32).collect();
    // One part per device, in order; each computed on its own device.
    let part = n.div_ceil(devices.len());
    let mut parts = Vec::new();
    for (i, dev) in devices.iter().enumerate() {
        let range = i * part..((i + 1) * part).min(n);
        let x = DeviceBuffer::from_slice(dev, &a[range.clone()])?;
        let y = DeviceBuffer::from_slice(dev, &b[range.clone()])?;
        let mut sum = DeviceBuffer::<f32>::zeroed(dev, range.len())?;
        builtin::vector_add(&dev.queue()?, &x, &y, &mut sum)?;
        parts.push((range, sum));
    }
    // Gathered on the default device: each part copied from the device that computed it.
    let home = ctx.default_device()?;
    let mut all = DeviceBuffer::<f32>::zeroed(&home, n)?;
    for (range, sum) in &parts {
        all.slice_mut(range.clone())?.copy_from_device(&sum.as_slice())?;
    }
    assert!(all.to_vec()?.iter().all(|&v| v == n as f32), "a[i] + b[i] = n everywhere");
    for (dev, (range, _)) in devices.iter().zip(&parts) {
        println!("{} {} ({}): elements {range:?}", dev.kind().name(), dev.ordinal(), dev.name()?);
    }
    println!("{n} sums from {} device(s), gathered on {}: all correct", devices.len(), home.name()?);
    Ok(())
}
