//! Your own host kernel: a typed Rust function the host device runs per thread, loaded on the
//! default runtime's host device and launched with no `unsafe`.
use ordo::host::HostProgram;
use ordo::{BackendKind, Context, DeviceBuffer, In, LaunchDims, Module, Out};

ordo::host_kernel! {
    /// y[i] = a * x[i] + y[i]
    pub const SAXPY = fn saxpy(t, a: f32, x: In<f32>, y: Out<f32>) {
        let i = t.global_x() as usize;
        if let (Some(xi), Some(yi)) = (x.get(i), y.get(i)) {
            y.set(i, a * xi + yi);
        }
    }
}

static MY_KERNELS: HostProgram = HostProgram { name: "example.saxpy", kernels: &[SAXPY.kernel] };

fn main() -> Result<(), ordo::Error> {
    let ctx = Context::new()?;
    let host = ctx.devices()?.into_iter().find(|d| d.kind() == BackendKind::Host).ok_or(ordo::Error::NoDevice)?;
    let saxpy = Module::load_host(&host, &MY_KERNELS)?.kernel(&SAXPY)?;
    let x = DeviceBuffer::from_slice(&host, &[1.0f32, 2.0, 3.0, 4.0])?;
    let mut y = DeviceBuffer::from_slice(&host, &[10.0f32; 4])?;
    host.queue()?.launch_host(&saxpy, LaunchDims::linear(1, 4), (2.0f32, &x, &mut y))?;
    assert_eq!(y.to_vec()?, [12.0, 14.0, 16.0, 18.0]);
    println!("saxpy on the host device: {:?}", y.to_vec()?);
    Ok(())
}
