//! `ordo_shutdown_at_exit` from Rust, with live CUDA objects and a kernel still running when
//! `main` returns (the C twin is `tests/gpu/atexit_hook.c`). A checker registered before ordo
//! runs after its hook: the report must show a clean teardown that ordo did itself (nothing
//! released by the driver) with every object counted, and a late `ordo_shutdown` must be turned
//! away. Exit 0 and an empty stderr mean success; 2: no CUDA; 3: a check failed.

use std::ffi::c_void;
use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

use ordo_ffi::*;

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> i32;
    fn _exit(status: i32) -> !;
}

static CUDA_DEVICES: AtomicU32 = AtomicU32::new(0);

fn ok(status: ordo_status_t) {
    assert_eq!(status, ORDO_SUCCESS, "{}", unsafe {
        // SAFETY: a static NUL-terminated string.
        std::ffi::CStr::from_ptr(ordo_status_string(status)).to_string_lossy()
    });
}

extern "C" fn check_after_ordo() {
    let mut report = std::mem::MaybeUninit::<ordo_teardown_report_t>::uninit();
    // SAFETY: a valid out-pointer; written on success.
    let status = unsafe { ordo_last_teardown_report(report.as_mut_ptr()) };
    let bad = if status == ORDO_SUCCESS {
        // SAFETY: written by the successful call above.
        let r = unsafe { report.assume_init() };
        let want = [2, 1 + CUDA_DEVICES.load(Ordering::Relaxed), 1, 1, 1, 2, 3, 0, 0];
        let line = format!(
            "atexit hook (Rust): sequence={} failures={} released_by_driver={} released={:?}\n",
            r.sequence, r.failure_count, r.released_by_driver, r.released
        );
        let _ = std::io::stdout().write_all(line.as_bytes());
        let _ = std::io::stdout().flush();
        r.sequence != 1 || r.failure_count != 0 || r.released_by_driver != 0 || r.released != want
    } else {
        true
    };
    if bad || ordo_shutdown() != ORDO_ERROR_UNINITIALIZED {
        let _ = std::io::stderr().write_all(b"the at-exit teardown was not ordo's own, complete and clean\n");
        // SAFETY: ends the process at once.
        unsafe { _exit(3) };
    }
}

fn main() {
    // SAFETY: registers a plain function before ordo registers its hook.
    assert_eq!(unsafe { atexit(check_after_ordo) }, 0);
    ok(ordo_init());
    ok(ordo_shutdown_at_exit());
    let (mut cuda, mut d) = (ordo_platform_t::default(), ordo_device_t::default());
    let mut info = std::mem::MaybeUninit::<ordo_platform_info_t>::uninit();
    // SAFETY: valid out-pointers throughout; C-ABI calls as a C program makes them.
    unsafe {
        ok(ordo_platform_get(1, &mut cuda));
        ok(ordo_platform_get_info(cuda, info.as_mut_ptr()));
        let info = info.assume_init();
        if info.present == 0 {
            println!("CUDA absent");
            _exit(2);
        }
        CUDA_DEVICES.store(info.device_count, Ordering::Relaxed);
        ok(ordo_device_get(cuda, 0, &mut d));
        // A failed PTX load explains itself with the JIT log, once: a later unrelated failure
        // (a bad host image) does not carry the old log.
        let mut bad = ordo_program_t::default();
        let ptx = b".version 8.0\n.target sm_90\n.address_size 64\nnot ptx";
        assert_eq!(ordo_program_load(d, ptx.as_ptr().cast(), ptx.len(), &mut bad), ORDO_ERROR_INVALID_BINARY);
        let detail = std::ffi::CStr::from_ptr(ordo_last_error_detail()).to_string_lossy().into_owned();
        assert!(detail.contains("ptxas"), "the JIT log is the detail: {detail}");
        let (mut host_platform, mut host) = (ordo_platform_t::default(), ordo_device_t::default());
        ok(ordo_platform_get(0, &mut host_platform));
        ok(ordo_device_get(host_platform, 0, &mut host));
        assert_eq!(ordo_program_load(host, c"no.such".as_ptr().cast(), 7, &mut bad), ORDO_ERROR_INVALID_BINARY);
        let detail = std::ffi::CStr::from_ptr(ordo_last_error_detail()).to_string_lossy().into_owned();
        assert!(!detail.contains("ptxas"), "an old JIT log explained a later failure: {detail}");
        let (mut q, mut e, mut p) = (ordo_queue_t::default(), ordo_event_t::default(), ordo_program_t::default());
        let (mut spin, mut add) = (ordo_kernel_t::default(), ordo_kernel_t::default());
        ok(ordo_queue_create(d, &mut q));
        ok(ordo_event_create(d, &mut e));
        let (mut image, mut size) = (std::ptr::null(), 0usize);
        ok(ordo_builtin_program_image(d, &mut image, &mut size));
        ok(ordo_program_load(d, image, size, &mut p));
        ok(ordo_kernel_get(p, c"spin_cycles".as_ptr(), &mut spin));
        ok(ordo_kernel_get(p, c"vector_add_f32".as_ptr(), &mut add));
        let (mut dev, mut host, mut managed): (*mut c_void, *mut c_void, *mut c_void) =
            (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        ok(ordo_mem_alloc(d, ORDO_MEM_DEVICE, 1 << 20, &mut dev));
        ok(ordo_mem_alloc(d, ORDO_MEM_HOST, 1 << 16, &mut host));
        ok(ordo_mem_alloc(d, ORDO_MEM_MANAGED, 1 << 16, &mut managed));
        ok(ordo_fill(dev, 7, 1, 1 << 20, q));
        let mut cycles: u64 = 300_000_000;
        let args = [(&mut cycles as *mut u64).cast::<c_void>()];
        let sizes = [8usize];
        let one = ordo_launch_dims_t { grid: [1, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 };
        ok(ordo_launch(q, spin, &one, args.as_ptr(), sizes.as_ptr(), 1));
        ok(ordo_event_record(e, q));
    }
    // Return without shutting down: the hook does it, while the kernel still runs.
}
