//! MLIR's CUDA runtime ABI (`mgpu*`) on two GPUs, as a program that calls
//! `mgpuSetDefaultDevice` between its parts uses it: per device a stream, memory and the
//! built-in PTX module loaded with `mgpuModuleLoadJIT`; a kernel on device 0, an event of
//! device 0's stream waited for by device 1's stream, a copy from device 0's memory to device
//! 1's on device 1's stream (a peer copy), a kernel on device 1 reading what arrived, and the
//! result copied back and checked. Needs two CUDA devices (skipped with a printed reason
//! otherwise; a failure under `ORDO_REQUIRE_GPUS=2`, which the two-GPU pass sets).

use core::ffi::c_void;
use core::ptr::null_mut;

use ordo::BackendKind;
use ordo_ffi::mlir::*;

/// The built-in PTX (`vector_add_f32(a, b, c, n)` among its kernels), NUL-terminated for the JIT.
const PTX: &str = concat!(include_str!("../../backend-cuda/src/builtin.ptx"), "\0");

fn cuda_device_count() -> u32 {
    let rt = ordo::runtime();
    (0..rt.platform_count().unwrap())
        .filter_map(|i| rt.platform(i).ok())
        .filter_map(|p| rt.platform_info(p).ok())
        .filter(|i| i.kind == BackendKind::Cuda)
        .map(|i| i.device_count)
        .sum()
}

/// What one device holds: a stream, three buffers of `N` floats, the module and its kernel.
struct Part {
    stream: *mut c_void,
    bufs: [*mut c_void; 3],
    module: *mut c_void,
    kernel: *mut c_void,
}

const N: usize = 1 << 20;

/// Makes device `d` this thread's default and builds its part.
fn part(d: i32) -> Part {
    mgpuSetDefaultDevice(d);
    let stream = mgpuStreamCreate();
    let bufs = [0; 3].map(|_| mgpuMemAlloc((N * 4) as u64, stream, 0));
    assert!(!stream.is_null() && bufs.iter().all(|b| !b.is_null()), "device {d}: stream and memory");
    // SAFETY: a NUL-terminated PTX image; a kernel name the image has.
    let (module, kernel) = unsafe {
        let module = mgpuModuleLoadJIT(PTX.as_ptr().cast(), 2);
        assert!(!module.is_null(), "device {d}: module");
        (module, mgpuModuleGetFunction(module, c"vector_add_f32".as_ptr()))
    };
    assert!(!kernel.is_null(), "device {d}: kernel");
    Part { stream, bufs, module, kernel }
}

/// `c = a + b` over `N` floats on the part's stream.
fn add(p: &Part, a: *mut c_void, b: *mut c_void, c: *mut c_void) {
    let n = N as u32;
    let arg = |p: &*mut c_void| p as *const *mut c_void as *mut c_void;
    let mut params = [arg(&a), arg(&b), arg(&c), &n as *const u32 as *mut c_void];
    // SAFETY: four pointers to the kernel's four arguments, alive until the launch returns.
    unsafe {
        mgpuLaunchKernel(p.kernel, (N / 256) as i64, 1, 1, 256, 1, 1, 0, p.stream, params.as_mut_ptr(), null_mut(), 4)
    };
}

#[test]
fn mgpu_calls_on_two_devices_with_a_peer_copy_and_an_event_between_them() {
    assert_eq!(ordo_ffi::ordo_init(), 0);
    let gpus = cuda_device_count();
    if gpus < 2 {
        assert_ne!(std::env::var("ORDO_REQUIRE_GPUS").as_deref(), Ok("2"), "two CUDA devices needed");
        println!("skipped: {gpus} CUDA device(s), two needed");
        return;
    }
    let (p0, p1) = (part(0), part(1));
    let ones = vec![1.0f32; N];
    let twos = vec![2.0f32; N];
    // SAFETY: host vectors of N floats, alive until the streams are synchronised below.
    unsafe {
        mgpuMemcpy(p0.bufs[0], ones.as_ptr() as *mut c_void, (N * 4) as i64, p0.stream);
        mgpuMemcpy(p0.bufs[1], twos.as_ptr() as *mut c_void, (N * 4) as i64, p0.stream);
        mgpuMemcpy(p1.bufs[1], twos.as_ptr() as *mut c_void, (N * 4) as i64, p1.stream);
    }
    add(&p0, p0.bufs[0], p0.bufs[1], p0.bufs[2]); // 3 on device 0
    mgpuSetDefaultDevice(0);
    let done = mgpuEventCreate();
    mgpuEventRecord(done, p0.stream);
    mgpuSetDefaultDevice(1);
    mgpuStreamWaitEvent(p1.stream, done);
    // SAFETY: two device ranges of N floats (ordo checks them).
    unsafe { mgpuMemcpy(p1.bufs[0], p0.bufs[2], (N * 4) as i64, p1.stream) };
    add(&p1, p1.bufs[0], p1.bufs[1], p1.bufs[2]); // 3 + 2 on device 1
    let mut out = vec![0.0f32; N];
    // SAFETY: `out` holds N floats and outlives the synchronise below.
    unsafe { mgpuMemcpy(out.as_mut_ptr().cast(), p1.bufs[2], (N * 4) as i64, p1.stream) };
    mgpuStreamSynchronize(p1.stream);
    assert!(out.iter().all(|&v| v == 5.0), "device 1 computed from device 0's result");
    mgpuEventDestroy(done);
    for (d, p) in [(0, p0), (1, p1)] {
        mgpuSetDefaultDevice(d);
        mgpuStreamSynchronize(p.stream);
        for b in p.bufs {
            mgpuMemFree(b, p.stream);
        }
        mgpuModuleUnload(p.module);
        mgpuStreamDestroy(p.stream);
    }
    assert_eq!(ordo_ffi::ordo_shutdown(), 0);
}
