//! The default runtime's host device allocates from the process heap lazily: a large allocation
//! touches no page before use (resident memory barely moves), its reported total memory is what
//! the process can have, and a request beyond it is `OutOfResources` — never a kill by the
//! kernel's out-of-memory killer. (The old heap zeroed every block with `memset` at allocation:
//! 2 GiB took 2.6 s and 2 GiB of resident memory, and one of the reported total was killed.)

use ordo::{ErrorCode, raw::MemKind};
use ordo_core::{CopyKind, DeviceInfo, InfoValue};

/// The process's resident memory in bytes (`VmRSS`).
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kb * 1024
}

#[test]
fn large_host_allocations_touch_no_page_and_the_reported_total_is_never_a_kill() {
    if !cfg!(target_os = "linux") {
        println!("skipped: resident memory is read from Linux's /proc");
        return;
    }
    let rt = ordo::runtime();
    let _guard = rt.init_guard().unwrap();
    let device = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let InfoValue::Int(total) = rt.device_info(device, DeviceInfo::TotalMemory).unwrap() else {
        panic!("the host device's total memory is a number");
    };
    assert!(total > 1 << 20, "total memory {total}");

    // 1 GiB (or an eighth of the total, on a small machine): no page touched.
    let size = (1usize << 30).min((total / 8) as usize);
    let before = resident_bytes();
    let start = std::time::Instant::now();
    let ptr = rt.mem_alloc(device, MemKind::Device, size).unwrap();
    let grew = resident_bytes().saturating_sub(before);
    println!("{} MiB allocated in {:?}; resident memory grew {} KiB", size >> 20, start.elapsed(), grew >> 10);
    assert!(grew < 16 << 20, "allocating {size} bytes made {grew} bytes resident");
    // Still zeroed where it is used: the first and last bytes read 0.
    let mut ends = [0xffu8; 2];
    for (i, at) in [(0, 0), (1, size as u64 - 1)] {
        let host = ends[i..].as_mut_ptr() as u64;
        // SAFETY: one byte of `ends`, a copy without a queue (complete when it returns).
        unsafe { rt.memcpy(CopyKind::DeviceToHost, host, ptr.offset(at).0, 1, None) }.unwrap();
    }
    assert_eq!(ends, [0, 0]);
    rt.mem_free(ptr).unwrap();

    // Beyond the total: OutOfResources, nothing allocated.
    let beyond = usize::try_from(total).unwrap_or(usize::MAX).saturating_add(1);
    assert_eq!(rt.mem_alloc(device, MemKind::Device, beyond).unwrap_err().code, ErrorCode::OutOfResources);

    // The whole total: allocated without touching it, or refused by the system, never a kill.
    let before = resident_bytes();
    match rt.mem_alloc(device, MemKind::Device, total as usize) {
        Ok(ptr) => {
            let grew = resident_bytes().saturating_sub(before);
            assert!(grew < 16 << 20, "allocating the total memory made {grew} bytes resident");
            rt.mem_free(ptr).unwrap();
        }
        Err(e) => assert_eq!(e.code, ErrorCode::OutOfResources, "{e}"),
    }
}
