//! Reads its input as a sequence of C API calls against the host backend: init and shutdown,
//! every object operation, with live, stale (released or from before a shutdown), forged,
//! wrong-kind and null handles, and sizes including 0 and huge. Checks that every status is a
//! defined code, that out-parameters are written only on success, and that after the final
//! shutdowns the runtime is uninitialised. Also the calls added for liboffload's API: pattern
//! fills, host functions on a queue, globals, parameter layouts, occupancy, image checks; and
//! graphs (capture, launch, argument updates, destroy: a graph is launched only while no memory
//! was freed since its capture, the graph launch's own contract). Host memory handed to ordo is
//! always valid for the size given (the host side of a copy is the caller's contract, not ordo's
//! to check).
#![no_main]

use std::ffi::c_void;

use libfuzzer_sys::fuzz_target;
use ordo_ffi::*;

const HOST_BYTES: usize = 1 << 20;
const SENTINEL: u64 = 0x5e5e_5e5e_5e5e_5e5e;

#[path = "input.rs"]
mod input;
use input::Input;

impl Input<'_> {
    /// A size: small, zero, huge, or just past a boundary.
    fn size(&mut self) -> Option<usize> {
        Some(match self.byte()? % 8 {
            0 => 0,
            1 => usize::MAX,
            2 => isize::MAX as usize + 1,
            3 => 1 << 40,
            4 => HOST_BYTES + 1,
            _ => (self.u32()? as usize) % 4096 + 1,
        })
    }
}

/// Every handle value ever seen, plus forged and null ones: the fuzzer picks from all of them.
#[derive(Default)]
struct Pool {
    handles: Vec<u64>,
    /// Allocations: (address, size, live).
    memory: Vec<(usize, usize, bool)>,
    /// Frees so far (and final shutdowns): a graph captured at another count may hold launches
    /// of freed memory, which its launch's contract forbids.
    frees: u64,
    /// Graphs ended: (handle, `frees` at the end of the capture). Kept apart from `handles`, so
    /// that only graph operations name them.
    graphs: Vec<(u64, u64)>,
}

impl Pool {
    fn pick(&self, b: u8) -> u64 {
        match b % 8 {
            0 => 0,
            1 => u64::MAX >> 8,           // unknown kind tag
            2 => (3 << 56) | 0x00ff_ffff, // queue tag, slot out of range
            _ if self.handles.is_empty() => 0,
            _ => self.handles[usize::from(b) % self.handles.len()],
        }
    }
    /// A graph, or a bad handle, and whether it may be launched.
    fn graph(&self, b: u8) -> (u64, bool) {
        match b % 8 {
            0 => (0, false),
            1 => (u64::MAX >> 8, false),
            2 => (self.pick(b.rotate_left(1)), false),
            _ if self.graphs.is_empty() => (0, false),
            _ => {
                let (g, at) = self.graphs[usize::from(b) % self.graphs.len()];
                (g, at == self.frees)
            }
        }
    }
    fn address(&self, b: u8) -> (*mut c_void, usize, bool) {
        match b % 8 {
            0 => (std::ptr::null_mut(), 0, false),
            1 => (0xdead_0000 as *mut c_void, 0, false),
            _ if self.memory.is_empty() => (std::ptr::null_mut(), 0, false),
            _ => {
                let (a, s, live) = self.memory[usize::from(b) % self.memory.len()];
                (a as *mut c_void, s, live)
            }
        }
    }
}

static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

unsafe extern "C" fn count_call(_: *mut c_void) {
    CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

fn check(status: ordo_status_t) -> bool {
    assert!((0..=20).contains(&status), "undefined status {status}");
    status == ORDO_SUCCESS
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let mut pool = Pool::default();
    // Twice the largest allocation that can succeed, so every copy that passes ordo's
    // device-side checks stays inside it.
    let mut host = vec![0u8; 2 * HOST_BYTES];
    // SAFETY (whole block): every pointer passed is NULL, a local out-parameter, `host` (valid for
    // HOST_BYTES, and no size above that reaches a copy that passes the device-side checks), or a
    // device address ordo validates; kernels run only with live allocations large enough.
    unsafe {
        while let Some(op) = input.byte() {
            let Some(arg) = input.byte() else { break };
            match op % 27 {
                0 => {
                    check(ordo_init());
                }
                1 => {
                    let s = ordo_shutdown();
                    assert!(s == ORDO_SUCCESS || s == ORDO_ERROR_UNINITIALIZED, "shutdown: {s}");
                    let (mut phase, mut refs) = (9, 9);
                    assert!(check(ordo_get_state(&mut phase, &mut refs)));
                    if phase == 0 {
                        // The final shutdown freed every allocation (their handles stay in the pool).
                        for m in pool.memory.iter_mut() {
                            m.2 = false;
                        }
                        pool.frees += 1;
                    }
                }
                2 => {
                    let mut p = ordo_platform_t { raw: SENTINEL };
                    if check(ordo_platform_get(u32::from(arg % 3), &mut p)) {
                        pool.handles.push(p.raw);
                        let mut d = ordo_device_t { raw: SENTINEL };
                        if check(ordo_device_get(p, u32::from(arg % 2), &mut d)) {
                            pool.handles.push(d.raw);
                        } else {
                            assert_eq!(d.raw, SENTINEL);
                        }
                    } else {
                        assert_eq!(p.raw, SENTINEL);
                    }
                }
                3 => {
                    let mut v: ordo_info_value_t = std::mem::zeroed();
                    check(ordo_device_get_info(ordo_device_t { raw: pool.pick(arg) }, u32::from(arg % 10), &mut v));
                }
                4 => {
                    let Some(size) = input.size() else { break };
                    let mut out = SENTINEL as usize as *mut c_void;
                    let d = ordo_device_t { raw: pool.pick(arg) };
                    let made = if arg & 0x80 != 0 {
                        // Memory in a queue's order.
                        ordo_mem_alloc_async(ordo_queue_t { raw: pool.pick(arg.rotate_left(2)) }, size, &mut out)
                    } else {
                        ordo_mem_alloc(d, u32::from(arg % 4), size, &mut out)
                    };
                    if check(made) {
                        assert!(size <= HOST_BYTES + 1);
                        pool.memory.push((out as usize, size, true));
                    } else {
                        assert_eq!(out as usize as u64, SENTINEL);
                    }
                }
                5 => {
                    let (a, _, _) = pool.address(arg);
                    let freed = if arg & 0x80 != 0 {
                        ordo_mem_free_async(ordo_queue_t { raw: pool.pick(arg.rotate_left(2)) }, a)
                    } else {
                        ordo_mem_free(a)
                    };
                    if arg & 0x40 != 0 {
                        // The cache of queue-ordered blocks: a queue's trim, a device's counts.
                        let mut released = usize::MAX;
                        if !check(ordo_queue_trim(ordo_queue_t { raw: pool.pick(arg.rotate_left(3)) }, &mut released)) {
                            assert_eq!(released, usize::MAX);
                        }
                        let mut stats = ordo_cache_stats_t { bytes: SENTINEL, ..Default::default() };
                        if !check(ordo_device_cache_stats(
                            ordo_device_t { raw: pool.pick(arg.rotate_left(4)) },
                            &mut stats,
                        )) {
                            assert_eq!(stats.bytes, SENTINEL);
                        }
                    }
                    if check(freed) {
                        for m in pool.memory.iter_mut().filter(|m| m.0 == a as usize) {
                            m.2 = false;
                        }
                        pool.frees += 1;
                    }
                }
                6 | 7 => {
                    let (a, _, _) = pool.address(arg);
                    let Some(size) = input.size() else { break };
                    let Some(b) = input.byte() else { break };
                    let offset = usize::from(b % 16);
                    let dev = if a.is_null() { a } else { a.cast::<u8>().wrapping_add(offset).cast() };
                    let host_ptr = host.as_mut_ptr().cast::<c_void>();
                    let kind = u32::from(b % 4);
                    let s = match (op % 27, kind) {
                        (6, 1) => ordo_memcpy(host_ptr, dev, size, kind),
                        (6, 2) => ordo_memcpy(dev, pool.address(b).0, size, kind),
                        (6, _) => ordo_memcpy(dev, host_ptr, size, kind),
                        _ => ordo_fill(dev, u32::from(b), u32::from(arg % 5), size, ordo_queue_t { raw: pool.pick(b) }),
                    };
                    check(s);
                }
                8 => {
                    let mut q = ordo_queue_t { raw: SENTINEL };
                    if check(ordo_queue_create(ordo_device_t { raw: pool.pick(arg) }, &mut q)) {
                        pool.handles.push(q.raw);
                    } else {
                        assert_eq!(q.raw, SENTINEL);
                    }
                }
                9 => {
                    let q = ordo_queue_t { raw: pool.pick(arg) };
                    let mut done = 7;
                    match arg % 4 {
                        0 => check(ordo_queue_destroy(q)),
                        1 => check(ordo_queue_synchronize(q)),
                        2 => {
                            let ok = check(ordo_queue_query(q, &mut done));
                            assert!(ok || done == 7);
                            ok
                        }
                        _ => check(ordo_queue_wait_event(q, ordo_event_t { raw: pool.pick(arg.rotate_left(3)) })),
                    };
                }
                10 => {
                    let mut e = ordo_event_t { raw: SENTINEL };
                    if check(ordo_event_create(ordo_device_t { raw: pool.pick(arg) }, &mut e)) {
                        pool.handles.push(e.raw);
                    } else {
                        assert_eq!(e.raw, SENTINEL);
                    }
                }
                11 => {
                    let e = ordo_event_t { raw: pool.pick(arg) };
                    let other = ordo_event_t { raw: pool.pick(arg.rotate_left(2)) };
                    let mut ms = -1.0f32;
                    let mut done = 7;
                    match arg % 6 {
                        0 => check(ordo_event_destroy(e)),
                        1 => check(ordo_event_record(e, ordo_queue_t { raw: pool.pick(arg.rotate_left(5)) })),
                        2 => check(ordo_event_synchronize(e)),
                        3 => check(ordo_event_query(e, &mut done)),
                        _ => {
                            let ok = check(ordo_event_elapsed_ms(e, other, &mut ms));
                            assert!(ok || ms == -1.0);
                            ok
                        }
                    };
                }
                12 => {
                    let image: &[u8] = match arg % 4 {
                        0 => b"ordo.builtin",
                        1 => b"ordo.builtin\0",
                        2 => b"no.such.program",
                        _ => b"",
                    };
                    let ptr = if arg % 9 == 8 { std::ptr::null() } else { image.as_ptr().cast() };
                    let mut p = ordo_program_t { raw: SENTINEL };
                    if check(ordo_program_load(ordo_device_t { raw: pool.pick(arg) }, ptr, image.len(), &mut p)) {
                        pool.handles.push(p.raw);
                    } else {
                        assert_eq!(p.raw, SENTINEL);
                    }
                }
                13 => {
                    check(ordo_program_unload(ordo_program_t { raw: pool.pick(arg) }));
                }
                14 => {
                    let names: [&[u8]; 5] = [b"vector_add_f32\0", b"reduce_sum_f32\0", b"nope\0", b"\0", b"\xff\xfe\0"];
                    let name = names[usize::from(arg % 5)];
                    let mut k = ordo_kernel_t { raw: SENTINEL };
                    let program = ordo_program_t { raw: pool.pick(arg.rotate_left(4)) };
                    if check(ordo_kernel_get(program, name.as_ptr().cast(), &mut k)) {
                        pool.handles.push(k.raw);
                    } else {
                        assert_eq!(k.raw, SENTINEL);
                    }
                }
                15 | 16 => {
                    // Launch shapes that ordo must reject before a kernel reads an argument.
                    let Some(b) = input.byte() else { break };
                    let dims = ordo_launch_dims_t {
                        grid: [u32::from(b % 3), 1, 1],
                        block: [u32::from(arg % 3), 1, 1],
                        shared_mem_bytes: u32::from(b % 2) * 64,
                    };
                    let n = 1u32;
                    let p: *mut c_void = std::ptr::null_mut();
                    let args = [&p as *const _ as *mut c_void, std::ptr::null_mut(), &n as *const _ as *mut c_void];
                    let sizes = [8usize, 8, 2];
                    let count = u32::from(b % 4).min(3);
                    let q = ordo_queue_t { raw: pool.pick(arg) };
                    let k = ordo_kernel_t { raw: pool.pick(b) };
                    let s = ordo_launch(
                        q,
                        k,
                        if b % 7 == 6 { std::ptr::null() } else { &dims },
                        args.as_ptr(),
                        sizes.as_ptr(),
                        count,
                    );
                    assert!(s != ORDO_SUCCESS || count == 0, "a launch with bad arguments succeeded");
                    check(s);
                }
                17 => {
                    // A well-formed vector add over three live allocations, if there are some.
                    let live: Vec<_> = pool.memory.iter().filter(|m| m.2 && m.1 >= 64).copied().collect();
                    if live.len() >= 3 {
                        let mut prog = ordo_program_t { raw: 0 };
                        let mut k = ordo_kernel_t { raw: 0 };
                        let d = ordo_device_t { raw: pool.pick(arg) };
                        let mut q = ordo_queue_t { raw: 0 };
                        if check(ordo_program_load(d, b"ordo.builtin".as_ptr().cast(), 12, &mut prog))
                            && check(ordo_kernel_get(prog, c"vector_add_f32".as_ptr(), &mut k))
                            && check(ordo_queue_create(d, &mut q))
                        {
                            let (a, b2, c) =
                                (live[0].0 as *mut c_void, live[1].0 as *mut c_void, live[2].0 as *mut c_void);
                            let n = (live[0].1.min(live[1].1).min(live[2].1) / 4) as u32;
                            let args = [
                                &a as *const _ as *mut c_void,
                                &b2 as *const _ as *mut c_void,
                                &c as *const _ as *mut c_void,
                                &n as *const _ as *mut c_void,
                            ];
                            let sizes = [8usize, 8, 8, 4];
                            let dims = ordo_launch_dims_t {
                                grid: [n.div_ceil(64), 1, 1],
                                block: [64, 1, 1],
                                shared_mem_bytes: 0,
                            };
                            check(ordo_launch(q, k, &dims, args.as_ptr(), sizes.as_ptr(), 4));
                        }
                    }
                }
                18 => {
                    let mut r: ordo_teardown_report_t = std::mem::zeroed();
                    check(ordo_last_teardown_report(&mut r));
                    let mut phase = 9;
                    let mut refs = 9;
                    check(ordo_get_state(&mut phase, &mut refs));
                    assert!(phase <= 3);
                }
                19 => {
                    let _ = ordo_status_string(i32::from(arg as i8));
                    let _ = ordo_last_error_detail();
                }
                20 => {
                    // A pattern of up to 16 bytes from `host` (valid for that), any size and offset.
                    let (a, _, _) = pool.address(arg);
                    let Some(size) = input.size() else { break };
                    let Some(b) = input.byte() else { break };
                    let dev = if a.is_null() { a } else { a.cast::<u8>().wrapping_add(usize::from(b % 8)).cast() };
                    let pattern = if b % 11 == 10 { std::ptr::null() } else { host.as_ptr().cast::<c_void>() };
                    let q = ordo_queue_t { raw: pool.pick(b.rotate_left(3)) };
                    check(ordo_fill_pattern(dev, pattern, usize::from(arg % 17), size, q));
                }
                21 => {
                    let q = ordo_queue_t { raw: pool.pick(arg) };
                    let f: ordo_host_fn_t = if arg % 5 == 4 { None } else { Some(count_call) };
                    let before = CALLS.load(std::sync::atomic::Ordering::Relaxed);
                    // A capturing queue refuses queries (and records the function instead).
                    let mut done = 0;
                    let capturing = ordo_queue_query(q, &mut done) == ORDO_ERROR_INVALID_ARGUMENT;
                    let ok = check(ordo_queue_host_function(q, f, std::ptr::null_mut()));
                    // The host platform runs it on the queue's thread, in order: it has run when
                    // the queue's synchronise returns (with whatever status the queue's earlier
                    // work left); a failed call never runs it, a capture records it.
                    if ok && !capturing {
                        check(ordo_queue_synchronize(q));
                    }
                    let after = CALLS.load(std::sync::atomic::Ordering::Relaxed);
                    assert_eq!(after, before + u32::from(ok && !capturing), "host function calls");
                }
                22 => {
                    let names: [&[u8]; 4] = [b"g\0", b"\0", b"vector_add_f32\0", b"\xff\0"];
                    let (mut addr, mut size) = (SENTINEL as usize as *mut c_void, SENTINEL as usize);
                    let program = ordo_program_t { raw: pool.pick(arg) };
                    let name =
                        if arg % 9 == 8 { std::ptr::null() } else { names[usize::from(arg % 4)].as_ptr().cast() };
                    // Host programs have no global variables: never a success here.
                    assert!(!check(ordo_program_global(program, name, &mut addr, &mut size)));
                    assert_eq!((addr as usize as u64, size as u64), (SENTINEL, SENTINEL));
                    let mut slots = [ordo_param_slot_t { offset: 7, size: 7 }; 8];
                    let mut count = SENTINEL as usize;
                    let capacity = usize::from(arg % 10);
                    let out = if arg % 7 == 6 { std::ptr::null_mut() } else { slots.as_mut_ptr() };
                    let k = ordo_kernel_t { raw: pool.pick(arg.rotate_left(2)) };
                    if check(ordo_kernel_param_layout(k, out, capacity.min(8), &mut count)) {
                        assert!(count <= 4 && (capacity == 0 || count <= capacity));
                    } else {
                        assert_eq!(count as u64, SENTINEL);
                    }
                }
                23 | 24 => {
                    let q = ordo_queue_t { raw: pool.pick(arg) };
                    let (g, launchable) = pool.graph(arg.rotate_left(3));
                    let graph = ordo_graph_t { raw: g };
                    match (op % 27, arg % 3) {
                        (23, 0) => {
                            check(ordo_queue_begin_capture(q));
                            let mut capturing = u32::MAX;
                            if check(ordo_queue_is_capturing(q, &mut capturing)) {
                                assert!(capturing <= 1);
                            } else {
                                assert_eq!(capturing, u32::MAX);
                            }
                        }
                        (23, 1) => {
                            let mut out = ordo_graph_t { raw: SENTINEL };
                            if check(ordo_queue_end_capture(q, &mut out)) {
                                pool.graphs.push((out.raw, pool.frees));
                            } else {
                                assert_eq!(out.raw, SENTINEL);
                            }
                        }
                        (23, _) => {
                            check(ordo_graph_destroy(graph));
                        }
                        (_, 0) if launchable => {
                            // Its host functions run on the queue's thread: done before the next
                            // operation counts calls.
                            if check(ordo_graph_launch(graph, q)) {
                                check(ordo_queue_synchronize(q));
                            }
                        }
                        _ => {
                            let mut count = u32::MAX;
                            if !check(ordo_graph_kernel_count(graph, &mut count)) {
                                assert_eq!(count, u32::MAX);
                            }
                            // No arguments for a four-parameter kernel, an index past the graph's
                            // launches, or bad handles: never a success.
                            let k = ordo_kernel_t { raw: pool.pick(arg.rotate_left(5)) };
                            let s = ordo_graph_set_args(
                                graph,
                                u32::from(arg % 4),
                                k,
                                std::ptr::null(),
                                std::ptr::null(),
                                0,
                            );
                            assert!(!check(s), "an argument update with no arguments succeeded");
                        }
                    }
                }
                26 => {
                    // Communicators and collectives (the host device's reference engine).
                    let comm = ordo_comm_t { raw: pool.pick(arg) };
                    match arg % 4 {
                        0 => {
                            let devices = [ordo_device_t { raw: pool.pick(arg.rotate_left(2)) }];
                            let mut out = ordo_comm_t { raw: SENTINEL };
                            if check(ordo_comm_create_all(devices.as_ptr(), 1, &mut out)) {
                                pool.handles.push(out.raw);
                            } else {
                                assert_eq!(out.raw, SENTINEL);
                            }
                        }
                        1 => {
                            let (addr, _, _) = pool.address(arg.rotate_left(3));
                            let count = input.size().unwrap_or(0) / 8;
                            let part = ordo_collective_t {
                                comm,
                                queue: ordo_queue_t { raw: pool.pick(arg.rotate_left(5)) },
                                kind: u32::from(input.byte().unwrap_or(0) % 8),
                                data_type: u32::from(input.byte().unwrap_or(0) % 11),
                                op: u32::from(input.byte().unwrap_or(0) % 6),
                                peer: u32::from(arg % 3),
                                count,
                                send: addr,
                                recv: addr,
                            };
                            check(ordo_collective(&part, 1));
                        }
                        2 => {
                            if arg & 16 == 0 {
                                check(ordo_comm_destroy(comm));
                            } else {
                                check(ordo_comm_abort(comm));
                            }
                        }
                        _ => {
                            let (mut rank, mut size, mut device) =
                                (u32::MAX, u32::MAX, ordo_device_t { raw: SENTINEL });
                            if check(ordo_comm_info(comm, &mut rank, &mut size, &mut device)) {
                                assert!(rank < size && size == 1);
                            } else {
                                assert_eq!((rank, size, device.raw), (u32::MAX, u32::MAX, SENTINEL));
                            }
                            let mut native = SENTINEL as usize as *mut c_void;
                            assert!(
                                !check(ordo_comm_native(comm, &mut native)),
                                "the reference engine has no native object"
                            );
                            assert_eq!(native as usize as u64, SENTINEL);
                            let mut id = ordo_comm_id_t { internal: [9; 128] };
                            let p = ordo_platform_t { raw: pool.pick(arg.rotate_left(1)) };
                            assert!(!check(ordo_comm_unique_id(p, &mut id)));
                            assert_eq!(id.internal, [9; 128]);
                            let mut out = ordo_comm_t { raw: SENTINEL };
                            let d = ordo_device_t { raw: pool.pick(arg.rotate_left(2)) };
                            assert!(!check(ordo_comm_create_rank(d, &id, 0, 1, 10, &mut out)));
                            assert_eq!(out.raw, SENTINEL);
                        }
                    }
                }
                _ => {
                    let mut block = u32::MAX;
                    let k = ordo_kernel_t { raw: pool.pick(arg) };
                    if check(ordo_kernel_optimal_block_size(k, usize::from(arg), &mut block)) {
                        assert_eq!(block, 1, "the host platform runs one thread at a time");
                    } else {
                        assert_eq!(block, u32::MAX);
                    }
                    let images: [&[u8]; 3] = [b"ordo.builtin", b"nope", b""];
                    let image = images[usize::from(arg % 3)];
                    let mut valid = 7;
                    let d = ordo_device_t { raw: pool.pick(arg.rotate_left(4)) };
                    if check(ordo_program_image_check(d, image.as_ptr().cast(), image.len(), &mut valid)) {
                        assert_eq!(valid, i32::from(arg % 3 == 0));
                    } else {
                        assert_eq!(valid, 7);
                    }
                    let mut native = SENTINEL as usize as *mut c_void;
                    if !check(ordo_queue_native(ordo_queue_t { raw: pool.pick(arg.rotate_left(6)) }, &mut native)) {
                        assert_eq!(native as usize as u64, SENTINEL);
                    }
                    let mut native = SENTINEL as usize as *mut c_void;
                    if !check(ordo_kernel_native(ordo_kernel_t { raw: pool.pick(arg.rotate_left(7)) }, &mut native)) {
                        assert_eq!(native as usize as u64, SENTINEL);
                    }
                }
            }
        }
        // Drop every reference: the runtime must end uninitialised, ready for the next input.
        while ordo_shutdown() == ORDO_SUCCESS {}
        let (mut phase, mut refs) = (9, 9);
        assert!(check(ordo_get_state(&mut phase, &mut refs)));
        assert_eq!((phase, refs), (0, 0));
    }
    drop(host);
});
