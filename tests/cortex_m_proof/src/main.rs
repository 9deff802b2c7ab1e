//! ordo-core on a Cortex-M4 (run under QEMU's mps2-an386 board with semihosting): two full
//! cycles of init -> alloc -> copy -> launch the built-in kernels -> check every result ->
//! shutdown with a clean report. Prints each cycle and exits through semihosting: status 0 when
//! every check passed, 1 otherwise (a panic exits 1 too).
#![no_std]
#![no_main]

use core::ffi::c_void;

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use ordo_core::host::{HostArena, HostBackend, builtin};
use ordo_core::{Backend, ErrorCode, KernelArgs, LaunchDims, MemKind, ObjectKind, Shutdown};

static ARENA: HostArena<{ 16 * 1024 }> = HostArena::new();
static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
static BACKENDS: [&dyn Backend; 1] = [&HOST];
ordo_core::static_runtime!(static RUNTIME = &BACKENDS);

const N: usize = 256;
const PTR: usize = core::mem::size_of::<*mut f32>();

fn bytes(v: &[f32; N]) -> &[u8] {
    // SAFETY: f32 has no padding; the view covers exactly the array.
    unsafe { core::slice::from_raw_parts(v.as_ptr().cast::<u8>(), N * 4) }
}

fn bytes_mut(v: &mut [f32; N]) -> &mut [u8] {
    // SAFETY: as above; any bytes written back form valid f32s.
    unsafe { core::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), N * 4) }
}

fn cycle(round: u32) -> Result<(), ErrorCode> {
    let rt = &RUNTIME;
    rt.init().map_err(|e| e.code)?;
    let device = rt.device(rt.platform(0).map_err(|e| e.code)?, 0).map_err(|e| e.code)?;
    let queue = rt.queue_create(device).map_err(|e| e.code)?;
    let program = rt.program_load(device, builtin::PROGRAM_NAME.as_bytes()).map_err(|e| e.code)?;
    let add = rt.kernel_get(program, "vector_add_f32").map_err(|e| e.code)?;
    let reduce = rt.kernel_get(program, "reduce_sum_f32").map_err(|e| e.code)?;
    let [a, b, c, sum] = [N * 4, N * 4, N * 4, 4].map(|size| rt.mem_alloc(device, MemKind::Device, size));
    let (a, b, c, sum) =
        (a.map_err(|e| e.code)?, b.map_err(|e| e.code)?, c.map_err(|e| e.code)?, sum.map_err(|e| e.code)?);
    let mut x = [0f32; N];
    let mut y = [0f32; N];
    for i in 0..N {
        x[i] = i as f32;
        y[i] = (round + 1) as f32 * 0.5 * i as f32;
    }
    rt.copy_to_device(a, bytes(&x)).map_err(|e| e.code)?;
    rt.copy_to_device(b, bytes(&y)).map_err(|e| e.code)?;
    rt.fill(sum, ordo_core::FillValue::U32(0), 1, None).map_err(|e| e.code)?;
    let (pa, pb, pc, ps, n): (*mut f32, *mut f32, *mut f32, *mut f32, u32) =
        (a.as_ptr(), b.as_ptr(), c.as_ptr(), sum.as_ptr(), N as u32);
    let add_params = [
        &pa as *const _ as *mut c_void,
        &pb as *const _ as *mut c_void,
        &pc as *const _ as *mut c_void,
        &n as *const _ as *mut c_void,
    ];
    let reduce_params = [&pa as *const _ as *mut c_void, &ps as *const _ as *mut c_void, &n as *const _ as *mut c_void];
    let add_args = KernelArgs::new(&add_params, &[PTR, PTR, PTR, 4]).map_err(|e| e.code)?;
    let reduce_args = KernelArgs::new(&reduce_params, &[PTR, PTR, 4]).map_err(|e| e.code)?;
    let dims = LaunchDims::linear((N / 64) as u32, 64);
    // SAFETY: the arguments match the built-in kernels' parameters over N-element buffers.
    unsafe {
        rt.launch(queue, add, &dims, &add_args).map_err(|e| e.code)?;
        rt.launch(queue, reduce, &dims, &reduce_args).map_err(|e| e.code)?;
    }
    rt.queue_synchronize(queue).map_err(|e| e.code)?;
    let mut out = [0f32; N];
    rt.copy_from_device(bytes_mut(&mut out), c).map_err(|e| e.code)?;
    if (0..N).any(|i| out[i] != x[i] + y[i]) {
        return Err(ErrorCode::Unknown);
    }
    let mut total = [0f32; N];
    rt.copy_from_device(&mut bytes_mut(&mut total)[..4], sum).map_err(|e| e.code)?;
    let expected: f32 = x.iter().sum();
    if total[0] != expected {
        return Err(ErrorCode::Unknown);
    }
    let Shutdown::TornDown(summary) = rt.shutdown().map_err(|e| e.code)? else {
        return Err(ErrorCode::TeardownFailed);
    };
    let report = rt.last_teardown_report().ok_or(ErrorCode::TeardownFailed)?;
    if !summary.is_clean()
        || report.released_of(ObjectKind::Allocation) != 4
        || report.released_of(ObjectKind::Kernel) != 2
    {
        return Err(ErrorCode::TeardownFailed);
    }
    if rt.platform_count().map_err(|e| e.code) != Err(ErrorCode::Uninitialized) {
        return Err(ErrorCode::Internal);
    }
    hprintln!("cortex-m4 cycle {}: {} elements and the reduction ({}) correct; teardown clean", round, N, total[0]);
    Ok(())
}

#[entry]
fn main() -> ! {
    let result = cycle(1).and_then(|()| cycle(2));
    match result {
        Ok(()) => {
            hprintln!("cortex-m4 proof: ok");
            debug::exit(debug::EXIT_SUCCESS);
        }
        Err(code) => {
            hprintln!("cortex-m4 proof: FAILED with {:?}", code);
            debug::exit(debug::EXIT_FAILURE);
        }
    }
    // Not reached: semihosting ended the emulation (on hardware without a debugger, wait here).
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hprintln!("cortex-m4 proof: panic: {}", info);
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}
