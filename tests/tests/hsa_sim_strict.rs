//! The simulated HSA is strict: driven directly through ordo's HSA table (no ordo runtime),
//! each mistake the AMDGPU backend must not make is recorded as a violation, and a wrong
//! argument layout gives wrong numbers. A correct dispatch, written the same way, gives right
//! numbers and no violation (so the checks below fail for the mistake, not the harness).

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

use ordo_amdgpu::BUILTIN_GFX90A;
use ordo_amdgpu::sys::*;
use ordo_tests::hsa_sim::{lock, sim};

// The simulation's handles (its own constants: the host agent is 1, GPU agents start at 2).
const GPU: hsa_agent_t = hsa_handle_t { handle: 2 };
const KERNARG_POOL: hsa_amd_memory_pool_t = hsa_handle_t { handle: 0x100 };
const SYSTEM_POOL: hsa_amd_memory_pool_t = hsa_handle_t { handle: 0x101 };
const DEVICE_POOL: hsa_amd_memory_pool_t = hsa_handle_t { handle: 0x202 };

struct Raw {
    hsa: &'static Hsa,
    queue: *mut hsa_queue_t,
    executable: hsa_executable_t,
    object: u64,
    kernarg_size: u32,
}

fn ok(s: hsa_status_t) {
    assert_eq!(s, HSA_STATUS_SUCCESS, "HSA call failed: {s:#x}");
}

fn alloc(hsa: &Hsa, pool: hsa_amd_memory_pool_t, size: usize) -> *mut c_void {
    let mut p = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    ok(unsafe { (hsa.hsa_amd_memory_pool_allocate)(pool, size, 0, &mut p) });
    p
}

fn signal(hsa: &Hsa) -> hsa_signal_t {
    let mut s = hsa_signal_t::default();
    // SAFETY: valid out-pointer.
    ok(unsafe { (hsa.hsa_signal_create)(1, 0, std::ptr::null(), &mut s) });
    s
}

fn open() -> Raw {
    let sim = sim();
    sim.reset(1, None, 0);
    // SAFETY: the simulation exports every HSA function of the table, with HSA's signatures.
    let hsa = unsafe { load(sim.path()) }.unwrap();
    // SAFETY: the HSA API as documented, with valid pointers throughout.
    unsafe {
        ok((hsa.hsa_init)());
        let mut queue = std::ptr::null_mut();
        ok((hsa.hsa_queue_create)(
            GPU,
            64,
            HSA_QUEUE_TYPE_MULTI,
            None,
            std::ptr::null_mut(),
            u32::MAX,
            u32::MAX,
            &mut queue,
        ));
        let mut reader = hsa_code_object_reader_t::default();
        ok((hsa.hsa_code_object_reader_create_from_memory)(
            BUILTIN_GFX90A.as_ptr().cast(),
            BUILTIN_GFX90A.len(),
            &mut reader,
        ));
        let mut executable = hsa_executable_t::default();
        ok((hsa.hsa_executable_create_alt)(HSA_PROFILE_FULL, 0, std::ptr::null(), &mut executable));
        ok((hsa.hsa_executable_load_agent_code_object)(
            executable,
            GPU,
            reader,
            std::ptr::null(),
            std::ptr::null_mut(),
        ));
        ok((hsa.hsa_executable_freeze)(executable, std::ptr::null()));
        ok((hsa.hsa_code_object_reader_destroy)(reader));
        let mut symbol = hsa_executable_symbol_t::default();
        ok((hsa.hsa_executable_get_symbol_by_name)(executable, c"vector_add_f32.kd".as_ptr(), &GPU, &mut symbol));
        let (mut object, mut kernarg_size) = (0u64, 0u32);
        ok((hsa.hsa_executable_symbol_get_info)(
            symbol,
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
            (&raw mut object).cast(),
        ));
        ok((hsa.hsa_executable_symbol_get_info)(
            symbol,
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
            (&raw mut kernarg_size).cast(),
        ));
        Raw { hsa, queue, executable, object, kernarg_size }
    }
}

#[allow(clippy::too_many_arguments)] // one value per argument written
/// vector_add_f32's kernel arguments as its metadata lays them out (a, b, c at 0, 8, 16; n at
/// 24; hidden block count x at 32, group size x at 44), or with `n` misplaced.
fn kernargs(
    buf: *mut c_void,
    a: *mut c_void,
    b: *mut c_void,
    c: *mut c_void,
    n: u32,
    blocks: u32,
    wg: u16,
    misplace: bool,
) {
    // SAFETY: `buf` is a kernarg allocation of at least 64 bytes.
    unsafe {
        let p = buf.cast::<u8>();
        p.cast::<u64>().write(a as u64);
        p.add(8).cast::<u64>().write(b as u64);
        p.add(16).cast::<u64>().write(c as u64);
        p.add(if misplace { 28 } else { 24 }).cast::<u32>().write(n);
        p.add(32).cast::<u32>().write(blocks);
        p.add(44).cast::<u16>().write(wg);
    }
}

/// Publishes a one-dimensional dispatch: body then header, or (`header_first`) header, a pause
/// long enough for the packet processor to look, then body.
fn dispatch(r: &Raw, kernarg: *mut c_void, items: u32, wg: u16, done: hsa_signal_t, header_first: bool) {
    let hsa = r.hsa;
    // SAFETY: a live queue; the slot is ours once reserved; the header word is written atomically.
    unsafe {
        let q = &*r.queue;
        let index = (hsa.hsa_queue_add_write_index_scacq_screl)(r.queue, 1);
        let packet = q.base_address.cast::<u8>().add((index % u64::from(q.size)) as usize * 64);
        let body = hsa_kernel_dispatch_packet_t {
            header: 0,
            setup: 1,
            workgroup_size_x: wg,
            workgroup_size_y: 1,
            workgroup_size_z: 1,
            reserved0: 0,
            grid_size_x: items,
            grid_size_y: 1,
            grid_size_z: 1,
            private_segment_size: 0,
            group_segment_size: 0,
            kernel_object: r.object,
            kernarg_address: kernarg,
            reserved2: 0,
            completion_signal: done,
        };
        let bytes: [u8; 64] = std::mem::transmute(body);
        let header = u32::from(HSA_PACKET_TYPE_KERNEL_DISPATCH | 1 << HSA_PACKET_HEADER_BARRIER) | 1 << 16;
        if header_first {
            (*packet.cast::<AtomicU32>()).store(header, Ordering::Release);
            (hsa.hsa_signal_store_screlease)(q.doorbell_signal, index as i64);
            std::thread::sleep(std::time::Duration::from_millis(200));
            std::ptr::copy_nonoverlapping(bytes[4..].as_ptr(), packet.add(4), 60);
        } else {
            std::ptr::copy_nonoverlapping(bytes[4..].as_ptr(), packet.add(4), 60);
            (*packet.cast::<AtomicU32>()).store(header, Ordering::Release);
            (hsa.hsa_signal_store_screlease)(q.doorbell_signal, index as i64);
        }
    }
}

/// Waits up to two seconds for the signal (a packet read before its body was written never
/// completes it: the processor saw no completion signal).
fn wait(hsa: &Hsa, s: hsa_signal_t) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    // SAFETY: a live signal.
    while unsafe { (hsa.hsa_signal_load_scacquire)(s) } >= 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Runs vector_add over 64 floats with the given mistakes; returns c and the violations.
fn vector_add(
    kernarg_pool: hsa_amd_memory_pool_t,
    kernarg_extra: usize,
    misplace: bool,
    header_first: bool,
    ungranted: bool,
) -> (Vec<f32>, Vec<String>) {
    let _l = lock();
    let r = open();
    let hsa = r.hsa;
    let n = 64usize;
    let data_pool = if ungranted { SYSTEM_POOL } else { DEVICE_POOL };
    let (a, b, c) = (alloc(hsa, data_pool, n * 4), alloc(hsa, data_pool, n * 4), alloc(hsa, data_pool, n * 4));
    // SAFETY: allocations of n floats (host memory backs the simulation's pools).
    unsafe {
        for i in 0..n {
            *a.cast::<f32>().add(i) = i as f32;
            *b.cast::<f32>().add(i) = 100.0;
        }
    }
    let kernarg = alloc(hsa, kernarg_pool, r.kernarg_size as usize + kernarg_extra);
    kernargs(kernarg, a, b, c, n as u32, 2, 32, misplace);
    let done = signal(hsa);
    dispatch(&r, kernarg, n as u32, 32, done, header_first);
    wait(hsa, done);
    // SAFETY: n floats.
    let out: Vec<f32> = unsafe { std::slice::from_raw_parts(c.cast::<f32>(), n) }.to_vec();
    // SAFETY: everything was created above and is released once.
    unsafe {
        for p in [a, b, c, kernarg] {
            ok((hsa.hsa_amd_memory_pool_free)(p));
        }
        ok((hsa.hsa_signal_destroy)(done));
        ok((hsa.hsa_queue_destroy)(r.queue));
        ok((hsa.hsa_executable_destroy)(r.executable));
        ok((hsa.hsa_shut_down)());
    }
    let v = sim().violations();
    sim().reset(1, None, 0);
    (out, v)
}

fn expected() -> Vec<f32> {
    (0..64).map(|i| i as f32 + 100.0).collect()
}

#[test]
fn a_correct_dispatch_gives_right_numbers_and_no_violation() {
    let (out, v) = vector_add(KERNARG_POOL, 0, false, false, false);
    assert_eq!(v, Vec::<String>::new());
    assert_eq!(out, expected());
}

#[test]
fn kernel_arguments_outside_the_kernarg_pool_are_a_violation() {
    let (_, v) = vector_add(SYSTEM_POOL, 0, false, false, false);
    assert!(v.iter().any(|x| x.contains("not from the kernarg pool")), "{v:?}");
}

#[test]
fn a_kernarg_buffer_of_another_size_than_the_symbols_is_a_violation() {
    let (_, v) = vector_add(KERNARG_POOL, 8, false, false, false);
    assert!(v.iter().any(|x| x.contains("the symbol's segment is")), "{v:?}");
}

#[test]
fn a_header_published_before_its_body_is_a_violation() {
    let (_, v) = vector_add(KERNARG_POOL, 0, false, true, false);
    assert!(v.iter().any(|x| x.contains("header published before the body")), "{v:?}");
}

#[test]
fn a_wrong_argument_layout_gives_wrong_numbers() {
    let (out, v) = vector_add(KERNARG_POOL, 0, true, false, false);
    assert_eq!(v, Vec::<String>::new(), "a layout mistake is not detectable as such, only by its numbers");
    assert_ne!(out, expected());
}

#[test]
fn memory_not_granted_to_the_agent_is_a_violation() {
    let (_, v) = vector_add(KERNARG_POOL, 0, false, false, true);
    assert!(v.iter().any(|x| x.contains("not granted")), "{v:?}");
}

#[test]
fn double_releases_destroyed_signals_and_early_teardown_are_violations() {
    let _l = lock();
    let r = open();
    let hsa = r.hsa;
    // SAFETY: the HSA API with valid pointers; the mistakes are the point.
    unsafe {
        let p = alloc(hsa, DEVICE_POOL, 16);
        ok((hsa.hsa_amd_memory_pool_free)(p));
        assert_ne!((hsa.hsa_amd_memory_pool_free)(p), HSA_STATUS_SUCCESS);
        let s = signal(hsa);
        ok((hsa.hsa_signal_destroy)(s));
        (hsa.hsa_signal_store_screlease)(s, 0);
        assert_ne!((hsa.hsa_signal_destroy)(s), HSA_STATUS_SUCCESS);
        // A reserved packet never published: the queue is destroyed with it pending.
        (hsa.hsa_queue_add_write_index_scacq_screl)(r.queue, 1);
        ok((hsa.hsa_queue_destroy)(r.queue));
        // The executable is left alive at shutdown.
        ok((hsa.hsa_shut_down)());
        assert_ne!((hsa.hsa_executable_destroy)(r.executable), HSA_STATUS_SUCCESS, "after shutdown");
    }
    let v = sim().violations();
    sim().reset(1, None, 0);
    for expected in [
        "hsa_amd_memory_pool_free of",
        "destroyed signal",
        "destroyed twice",
        "not yet processed",
        "hsa_shut_down with 1 live executables",
        "called while HSA is not initialised",
    ] {
        assert!(v.iter().any(|x| x.contains(expected)), "no violation containing {expected:?} in {v:?}");
    }
}
