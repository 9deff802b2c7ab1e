//! A `#![no_std]`, `#![no_main]` program that links `ordo-core` and runs init -> alloc -> copy ->
//! launch -> verify -> shutdown on the host backend. It defines its own `#[panic_handler]`, so
//! it stops compiling (duplicate lang item `panic_impl`) if `std` ever creeps into the core.
//! Exit status 0 means every step and check passed; 10 + the error code otherwise.
#![no_std]
#![no_main]

use core::ffi::c_void;
use core::panic::PanicInfo;

use ordo_core::host::{HostArena, HostBackend, builtin};
use ordo_core::{Backend, ErrorCode, KernelArgs, LaunchDims, MemKind, Shutdown};

static ARENA: HostArena<{ 64 * 1024 }> = HostArena::new();
static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
static BACKENDS: [&dyn Backend; 1] = [&HOST];
ordo_core::static_runtime!(static RUNTIME = &BACKENDS);

#[link(name = "c")]
unsafe extern "C" {
    fn write(fd: i32, buf: *const u8, count: usize) -> isize;
    fn abort() -> !;
}

fn say(text: &str) {
    // SAFETY: `text` is valid for its length; fd 1 is stdout (a failed write is ignored).
    unsafe { write(1, text.as_ptr(), text.len()) };
}

const N: usize = 1000;

fn run() -> Result<(), ErrorCode> {
    let rt = &RUNTIME;
    rt.init().map_err(|e| e.code)?;
    let device = rt.device(rt.platform(0).map_err(|e| e.code)?, 0).map_err(|e| e.code)?;
    let queue = rt.queue_create(device).map_err(|e| e.code)?;
    let program = rt.program_load(device, builtin::PROGRAM_NAME.as_bytes()).map_err(|e| e.code)?;
    let kernel = rt.kernel_get(program, "vector_add_f32").map_err(|e| e.code)?;
    let bytes = N * 4;
    let a = rt.mem_alloc(device, MemKind::Device, bytes).map_err(|e| e.code)?;
    let b = rt.mem_alloc(device, MemKind::Device, bytes).map_err(|e| e.code)?;
    let c = rt.mem_alloc(device, MemKind::Device, bytes).map_err(|e| e.code)?;
    let mut host = [0f32; N];
    for (i, x) in host.iter_mut().enumerate() {
        *x = i as f32;
    }
    // SAFETY: f32 has no padding; the byte view covers exactly the array.
    let bytes_of = |v: &[f32; N]| unsafe { core::slice::from_raw_parts(v.as_ptr().cast::<u8>(), bytes) };
    rt.copy_to_device(a, bytes_of(&host)).map_err(|e| e.code)?;
    rt.copy_to_device(b, bytes_of(&host)).map_err(|e| e.code)?;
    let (pa, pb, pc, n) = (a.as_ptr::<f32>(), b.as_ptr::<f32>(), c.as_ptr::<f32>(), N as u32);
    let params = [
        &pa as *const _ as *mut c_void,
        &pb as *const _ as *mut c_void,
        &pc as *const _ as *mut c_void,
        &n as *const _ as *mut c_void,
    ];
    const PTR: usize = core::mem::size_of::<*mut f32>();
    let args = KernelArgs::new(&params, &[PTR, PTR, PTR, 4]).map_err(|e| e.code)?;
    // SAFETY: the arguments match vector_add_f32(f32*, f32*, f32*, u32) over N-element buffers.
    unsafe { rt.launch(queue, kernel, &LaunchDims::linear(4, 256), &args) }.map_err(|e| e.code)?;
    rt.queue_synchronize(queue).map_err(|e| e.code)?;
    let mut out = [0f32; N];
    // SAFETY: as above, for a mutable view.
    let out_bytes = unsafe { core::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), bytes) };
    rt.copy_from_device(out_bytes, c).map_err(|e| e.code)?;
    if out.iter().enumerate().any(|(i, &x)| x != 2.0 * i as f32) {
        return Err(ErrorCode::Unknown);
    }
    let Shutdown::TornDown(summary) = rt.shutdown().map_err(|e| e.code)? else {
        return Err(ErrorCode::TeardownFailed);
    };
    let released = rt.last_teardown_report().map(|r| r.released_of(ordo_core::ObjectKind::Allocation));
    if !summary.is_clean() || released != Some(3) {
        return Err(ErrorCode::TeardownFailed);
    }
    if rt.platform_count().map_err(|e| e.code) != Err(ErrorCode::Uninitialized) {
        return Err(ErrorCode::Internal);
    }
    Ok(())
}

/// The C entry point (crt calls it).
#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: i32, _argv: *const *const u8) -> i32 {
    match run() {
        Ok(()) => {
            say("no_std proof: init, alloc, copy, launch, verify, shutdown: ok\n");
            0
        }
        Err(code) => {
            say("no_std proof: FAILED\n");
            10 + code as i32
        }
    }
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    say("no_std proof: panic\n");
    // SAFETY: abort never returns and needs no precondition.
    unsafe { abort() }
}

/// The prebuilt `libcore` (compiled with unwinding) references this symbol; with
/// `panic = "abort"` nothing unwinds, so it is never called.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}
