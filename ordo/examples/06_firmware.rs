//! A firmware-style runtime: no heap, no default runtime, a static arena the program provides,
//! a runtime built at compile time (`static_runtime!`), and the typed API over it. The same code
//! builds with `default-features = false` for a microcontroller (see tests/cortex_m_proof).
use ordo::host::{HostArena, HostBackend, builtin};
use ordo::{Context, DeviceBuffer, raw::Backend};

static ARENA: HostArena<{ 64 * 1024 }> = HostArena::new();
static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
static BACKENDS: [&dyn Backend; 1] = [&HOST];
ordo::static_runtime!(static RUNTIME = &BACKENDS);

fn main() -> Result<(), ordo::Error> {
    {
        let ctx = Context::with_runtime(&RUNTIME)?;
        let dev = ctx.default_device()?;
        let x = DeviceBuffer::from_slice(&dev, &[0.25f32; 256])?;
        let mut sum = DeviceBuffer::<f32>::zeroed(&dev, 1)?;
        ordo::builtin::reduce_sum(&dev.queue()?, &x, &mut sum)?;
        let mut out = [0.0f32];
        sum.copy_to(&mut out)?;
        assert_eq!(out, [64.0]);
        println!("sum over the static arena: {}, {} bytes free", out[0], HOST.free_bytes());
    } // the context's drop is the final shutdown: buffers and queue were released first
    assert_eq!(RUNTIME.state(), ordo::State::Uninit);
    println!("teardown: {}", RUNTIME.last_teardown_report().expect("one teardown ran"));
    Ok(())
}
