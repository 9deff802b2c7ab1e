//! Reads its input as a sequence of liboffload `ol*` calls against ordo's CPU device and
//! liboffload's host device: init and shutdown (counted), device iteration, every info query
//! with every property value (unknown ones too) and buffer sizes from 0 up, allocations,
//! copies, fills, registration, queues, events, programs, symbols, launches and host
//! functions, with live, stale (destroyed, or from before a final shutdown), forged and NULL
//! handles, and sizes including 0 and beyond `isize::MAX`. Checks that every result is NULL or a
//! defined error code with readable details, that out-parameters and info buffers are written
//! only on success (and info buffers only within the size given), and that after the final
//! shutdowns every call answers `OL_ERRC_UNINITIALIZED`. Memory handed to ordo is always valid
//! for the size given, and a launch runs a kernel only with arguments it can use: those are the
//! caller's contract, not ordo's to check.
#![no_main]

use std::ffi::{CStr, c_void};
use std::ptr::{null, null_mut};

use libfuzzer_sys::fuzz_target;
use ordo_ffi::offload::*;

const HOST_BYTES: usize = 1 << 16;
const SENTINEL: usize = 0x5e5e_5e5e_5e5e_5e5e;
const CANARY: u8 = 0xa5;

#[path = "input.rs"]
mod input;
use input::Input;

impl Input<'_> {
    /// A size for a copy or fill of at most `fits` bytes: one that fits, 0, or one beyond
    /// `isize::MAX` (which must be refused whatever the pointers are).
    fn size(&mut self, fits: usize) -> Option<usize> {
        Some(match self.byte()? % 6 {
            0 => 0,
            1 => usize::MAX,
            2 => isize::MAX as usize + 1,
            _ => usize::from(self.u16()?) % (fits + 1),
        })
    }
}

/// Every handle ever seen, plus forged and NULL ones, and the allocations made.
#[derive(Default)]
struct Pool {
    handles: Vec<usize>,
    /// Allocations: (address, size, live).
    memory: Vec<(usize, usize, bool)>,
}

impl Pool {
    fn pick(&self, b: u8) -> *mut c_void {
        (match b % 8 {
            0 => 0,
            1 => usize::MAX >> 8,
            2 => (3 << 60) | 0x00ff_ffff,
            _ if self.handles.is_empty() => 0,
            _ => self.handles[usize::from(b) % self.handles.len()],
        }) as *mut c_void
    }
    /// A live allocation's address and size, if any.
    fn live(&self, b: u8) -> Option<(*mut c_void, usize)> {
        let live: Vec<_> = self.memory.iter().filter(|m| m.2).collect();
        let m = live.get(usize::from(b) % live.len().max(1))?;
        Some((m.0 as *mut c_void, m.1))
    }
}

/// The result's code (0 for success), after checking it is defined and its details readable.
fn code(r: ol_result_t) -> u32 {
    if r.is_null() {
        return OL_ERRC_SUCCESS;
    }
    // SAFETY: a non-NULL result points to an error that lives for the process (the contract
    // under test: a crash here is a finding).
    let e = unsafe { &*r };
    assert!(e.Code > OL_ERRC_SUCCESS && e.Code < OL_ERRC_LAST, "undefined code {}", e.Code);
    assert!(!e.Details.is_null(), "an error without details");
    // SAFETY: as above: NUL-terminated details.
    let _ = unsafe { CStr::from_ptr(e.Details) }.to_bytes().len();
    e.Code
}

fn ok(r: ol_result_t) -> bool {
    code(r) == OL_ERRC_SUCCESS
}

unsafe extern "C" fn collect(device: ol_device_handle_t, data: *mut c_void) -> bool {
    // SAFETY: `data` is the `Vec` the iteration was given.
    unsafe { (*data.cast::<Vec<usize>>()).push(device as usize) };
    true
}

static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

unsafe extern "C" fn count_call(_: *mut c_void) {
    CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// An info query through `get` with a buffer of `size` bytes (up to 64) followed by canaries:
/// on failure nothing is written, on success nothing past `size`.
fn info(
    size: usize,
    get: impl FnOnce(usize, *mut c_void) -> ol_result_t,
    with_size: impl FnOnce(*mut usize) -> ol_result_t,
) {
    let mut buf = [CANARY; 80];
    let given = size.min(64);
    let ptr = if size == 65 { null_mut() } else { buf.as_mut_ptr().cast() };
    if ok(get(given, ptr)) {
        assert!(buf[given..].iter().all(|&b| b == CANARY), "an info query wrote past its size");
    } else {
        assert!(buf.iter().all(|&b| b == CANARY), "a failed info query wrote its buffer");
    }
    let mut needed = SENTINEL;
    if !ok(with_size(&mut needed)) {
        assert_eq!(needed, SENTINEL, "a failed size query wrote its output");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let mut pool = Pool::default();
    let mut host = vec![0u8; HOST_BYTES];
    let images: [&[u8]; 6] =
        [b"ordo.builtin", b"ordo.builtin\0", b"no.such.program", b"\x7fELF\x02\x01\x01", b"", b"\0"];
    let names: [&[u8]; 6] = [b"vector_add_f32\0", b"reduce_sum_f32\0", b"nope\0", b"\0", b"\xff\xfe\0", b"g\0"];
    // SAFETY (whole block): every pointer passed is NULL, a local out-parameter or buffer, `host`
    // (valid for HOST_BYTES), a live allocation with a size within it, or a forged or stale
    // address ordo must refuse without touching it; a launch that can pass ordo's checks gets
    // arguments its kernel can use.
    unsafe {
        while let Some(op) = input.byte() {
            let Some(arg) = input.byte() else { break };
            match op % 20 {
                0 => {
                    assert!(ok(olInit()));
                }
                1 => {
                    let c = code(olShutDown());
                    assert!(c == OL_ERRC_SUCCESS || c == OL_ERRC_UNINITIALIZED, "olShutDown: {c}");
                    if c == OL_ERRC_UNINITIALIZED || code(olMemFree(null_mut())) == OL_ERRC_UNINITIALIZED {
                        // The final shutdown freed every allocation (their addresses stay in the pool).
                        for m in pool.memory.iter_mut() {
                            m.2 = false;
                        }
                    }
                }
                2 => {
                    let mut found: Vec<usize> = Vec::new();
                    let cb: ol_device_iterate_cb_t = if arg % 7 == 6 { None } else { Some(collect) };
                    if ok(olIterateDevices(cb, (&raw mut found).cast())) {
                        assert!(!found.is_empty(), "liboffload's host device is always there");
                        pool.handles.extend(found);
                    }
                }
                3 => {
                    let d = pool.pick(arg);
                    let Some(b) = input.byte() else { break };
                    let prop = u32::from(b % 32);
                    info(
                        usize::from(arg % 66),
                        |s, p| olGetDeviceInfo(d, prop, s, p),
                        |n| olGetDeviceInfoSize(d, prop, n),
                    );
                    // The platform, for the platform queries.
                    let mut platform = SENTINEL as *mut c_void;
                    if ok(olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, 8, (&raw mut platform).cast())) {
                        pool.handles.push(platform as usize);
                    } else {
                        assert_eq!(platform as usize, SENTINEL);
                    }
                }
                4 => {
                    let p = pool.pick(arg);
                    let Some(b) = input.byte() else { break };
                    let prop = u32::from(b % 8);
                    info(
                        usize::from(b % 66),
                        |s, q| olGetPlatformInfo(p, prop, s, q),
                        |n| olGetPlatformInfoSize(p, prop, n),
                    );
                }
                5 => {
                    let Some(b) = input.byte() else { break };
                    let size = match b % 6 {
                        0 => 0,
                        1 => usize::MAX,
                        2 => isize::MAX as usize + 1,
                        _ => usize::from(input.u16().unwrap_or(1)) % 4096 + 1,
                    };
                    let mut out = SENTINEL as *mut c_void;
                    if ok(olMemAlloc(pool.pick(arg), u32::from(b % 5), size, &mut out)) {
                        assert!(size <= 4096, "an allocation of {size} bytes succeeded");
                        assert!(!out.is_null());
                        pool.memory.push((out as usize, size, true));
                    } else {
                        assert_eq!(out as usize, SENTINEL);
                    }
                }
                6 => {
                    // Live, freed or forged addresses (a freed one must not be freed twice).
                    let a = match (arg % 4, pool.memory.get(usize::from(arg) % pool.memory.len().max(1))) {
                        (0, _) | (_, None) => null_mut(),
                        (1, _) => 0xdead_0000 as *mut c_void,
                        (_, Some(m)) => m.0 as *mut c_void,
                    };
                    if ok(olMemFree(a)) {
                        let m = pool.memory.iter_mut().find(|m| m.0 == a as usize && m.2);
                        m.expect("only a live allocation is freed").2 = false;
                    }
                }
                7 => {
                    // A copy between `host` and a live allocation (or within either), each side
                    // named with any device handle: the size fits both sides or is refused.
                    let Some(b) = input.byte() else { break };
                    let hosted = (host.as_mut_ptr().cast::<c_void>(), HOST_BYTES);
                    let (dst, dst_len) = if b % 2 == 0 { pool.live(arg).unwrap_or(hosted) } else { hosted };
                    let (src, src_len) =
                        if b % 4 < 2 { hosted } else { pool.live(arg.rotate_left(3)).unwrap_or(hosted) };
                    let Some(size) = input.size(dst_len.min(src_len)) else { break };
                    let (dd, sd) = (pool.pick(b), pool.pick(b.rotate_left(4)));
                    let q = if arg % 3 == 0 { null_mut() } else { pool.pick(arg) };
                    let r = olMemcpy(q, dst, dd, src, sd, size);
                    if size > isize::MAX as usize {
                        assert!(!ok(r), "a copy beyond isize::MAX succeeded");
                    }
                }
                8 => {
                    // A fill of a live allocation (or of `host`) with a pattern from `host`.
                    let Some(b) = input.byte() else { break };
                    let (ptr, len) = pool.live(arg).unwrap_or((host.as_mut_ptr().cast(), HOST_BYTES));
                    let Some(size) = input.size(len) else { break };
                    let pattern = if b % 11 == 10 { null() } else { host.as_ptr().cast::<c_void>() };
                    let q = if b % 3 == 0 { null_mut() } else { pool.pick(b) };
                    let r = olMemFill(q, ptr, usize::from(arg % 17), pattern, size);
                    if size > isize::MAX as usize {
                        assert!(!ok(r), "a fill beyond isize::MAX succeeded");
                    }
                }
                9 => {
                    let mut q = SENTINEL as *mut c_void;
                    if ok(olCreateQueue(pool.pick(arg), &mut q)) {
                        pool.handles.push(q as usize);
                    } else {
                        assert_eq!(q as usize, SENTINEL);
                    }
                }
                10 => {
                    let q = pool.pick(arg);
                    let Some(b) = input.byte() else { break };
                    match b % 4 {
                        0 => {
                            code(olDestroyQueue(q));
                        }
                        1 => {
                            code(olSyncQueue(q));
                        }
                        2 => {
                            let prop = u32::from(b % 5);
                            info(
                                usize::from(arg % 66),
                                |s, p| olGetQueueInfo(q, prop, s, p),
                                |n| olGetQueueInfoSize(q, prop, n),
                            );
                        }
                        _ => {
                            let mut events = [pool.pick(b), pool.pick(b.rotate_left(3)), pool.pick(arg.rotate_left(5))];
                            let n = usize::from(b % 5);
                            let list = if n == 4 { null_mut() } else { events.as_mut_ptr() };
                            code(olWaitEvents(q, list, n.min(3)));
                        }
                    }
                }
                11 => {
                    let mut e = SENTINEL as *mut c_void;
                    if ok(olCreateEvent(pool.pick(arg), &mut e)) {
                        pool.handles.push(e as usize);
                    } else {
                        assert_eq!(e as usize, SENTINEL);
                    }
                }
                12 => {
                    let e = pool.pick(arg);
                    let Some(b) = input.byte() else { break };
                    match b % 3 {
                        0 => {
                            code(olDestroyEvent(e));
                        }
                        1 => {
                            code(olSyncEvent(e));
                        }
                        _ => {
                            let prop = u32::from(b % 4);
                            info(
                                usize::from(arg % 66),
                                |s, p| olGetEventInfo(e, prop, s, p),
                                |n| olGetEventInfoSize(e, prop, n),
                            );
                        }
                    }
                }
                13 => {
                    let image = images[usize::from(arg % 6)];
                    let ptr = if arg % 13 == 12 { null() } else { image.as_ptr().cast::<c_void>() };
                    let d = pool.pick(arg.rotate_left(3));
                    let mut p = SENTINEL as *mut c_void;
                    if ok(olCreateProgram(d, ptr, image.len(), &mut p)) {
                        pool.handles.push(p as usize);
                    } else {
                        assert_eq!(p as usize, SENTINEL);
                    }
                    let mut valid = true;
                    let valid_ptr = if arg % 17 == 16 { null_mut() } else { &raw mut valid };
                    code(olIsValidBinary(d, ptr, image.len(), valid_ptr));
                    if arg % 5 == 4 {
                        code(olDestroyProgram(pool.pick(arg)));
                    }
                }
                14 => {
                    let Some(b) = input.byte() else { break };
                    let name = if b % 13 == 12 { null() } else { names[usize::from(b % 6)].as_ptr().cast() };
                    let mut s = SENTINEL as *mut c_void;
                    if ok(olGetSymbol(pool.pick(arg), name, u32::from(b % 3), &mut s)) {
                        pool.handles.push(s as usize);
                    } else {
                        assert_eq!(s as usize, SENTINEL);
                    }
                    let sym = pool.pick(b);
                    let prop = u32::from(arg % 5);
                    info(
                        usize::from(b % 66),
                        |n, p| olGetSymbolInfo(sym, prop, n, p),
                        |n| olGetSymbolInfoSize(sym, prop, n),
                    );
                    let mut group = u32::MAX as usize;
                    if !ok(olCalculateOptimalOccupancy(pool.pick(arg.rotate_left(2)), sym, usize::from(b), &mut group))
                    {
                        assert_eq!(group, u32::MAX as usize);
                    }
                }
                15 => {
                    // A launch that ordo must refuse: a buffer that ends before any of the
                    // built-in kernels' parameters do (they take at least two pointers and a
                    // count), or a shape no device runs; the rest from the pool.
                    let Some(b) = input.byte() else { break };
                    let dims = ol_kernel_launch_size_args_t {
                        Dimensions: usize::from(b % 5),
                        NumGroups: ol_dimensions_t { x: u32::from(arg % 3), y: 1, z: 1 },
                        GroupSize: ol_dimensions_t { x: u32::from(b % 3), y: u32::MAX * u32::from(b % 7 == 6), z: 1 },
                        DynSharedMemory: if b % 9 == 8 { usize::MAX } else { 0 },
                    };
                    let short = b % 2 == 0;
                    let refused_shape =
                        dims.Dimensions == 0 || dims.Dimensions > 3 || dims.NumGroups.x == 0 || dims.GroupSize.x == 0;
                    let size = if short || !refused_shape { usize::from(arg % 20) } else { 64 };
                    let buffer = if b % 13 == 12 { null() } else { host.as_ptr().cast::<c_void>() };
                    let dims_ptr = if arg % 11 == 10 { null() } else { &raw const dims };
                    let r = olLaunchKernel(
                        pool.pick(arg),
                        pool.pick(b),
                        pool.pick(b.rotate_left(3)),
                        buffer,
                        size,
                        dims_ptr,
                    );
                    assert!(!ok(r), "a launch that cannot be run succeeded");
                }
                16 => {
                    // A well-formed vector add over three live allocations, if there are some.
                    let live: Vec<_> = pool.memory.iter().filter(|m| m.2 && m.1 >= 64).copied().collect();
                    let mut devices: Vec<usize> = Vec::new();
                    if live.len() >= 3 && ok(olIterateDevices(Some(collect), (&raw mut devices).cast())) {
                        let d = devices[usize::from(arg) % devices.len()] as *mut c_void;
                        let (mut p, mut k, mut q) = (null_mut(), null_mut(), null_mut());
                        if ok(olCreateProgram(d, b"ordo.builtin".as_ptr().cast(), 12, &mut p))
                            && ok(olGetSymbol(p, c"vector_add_f32".as_ptr(), OL_SYMBOL_KIND_KERNEL, &mut k))
                            && ok(olCreateQueue(d, &mut q))
                        {
                            pool.handles.extend([p as usize, k as usize, q as usize]);
                            #[repr(C)]
                            struct Args(usize, usize, usize, u32);
                            let n = (live[0].1.min(live[1].1).min(live[2].1) / 4) as u32;
                            let args = Args(live[0].0, live[1].0, live[2].0, n);
                            let dims = ol_kernel_launch_size_args_t {
                                Dimensions: 1,
                                NumGroups: ol_dimensions_t { x: n.div_ceil(64), y: 1, z: 1 },
                                GroupSize: ol_dimensions_t { x: 64, y: 1, z: 1 },
                                DynSharedMemory: 0,
                            };
                            let size = size_of::<Args>();
                            assert!(ok(olLaunchKernel(q, d, k, (&raw const args).cast(), size, &dims)));
                            assert!(ok(olSyncQueue(q)));
                        }
                    }
                }
                17 => {
                    let q = if arg % 3 == 0 { null_mut() } else { pool.pick(arg) };
                    let f: ol_host_function_cb_t = if arg % 5 == 4 { None } else { Some(count_call) };
                    let before = CALLS.load(std::sync::atomic::Ordering::Relaxed);
                    let launched = ok(olLaunchHostFunction(q, f, null_mut()));
                    // Host functions run in queue order: after the queue's synchronise it has
                    // run, and a failed call never runs it.
                    if !launched || ok(olSyncQueue(q)) {
                        let after = CALLS.load(std::sync::atomic::Ordering::Relaxed);
                        assert_eq!(after, before + u32::from(launched), "host function calls");
                    }
                }
                18 => {
                    // Registration of part of `host`, or of an allocation, or of garbage.
                    let Some(b) = input.byte() else { break };
                    let offset = usize::from(b % 16) * 64;
                    let (ptr, len) = match b % 3 {
                        0 => (host.as_mut_ptr().wrapping_add(offset).cast::<c_void>(), HOST_BYTES - offset),
                        1 => pool.live(arg).unwrap_or((null_mut(), 0)),
                        _ => (0xdead_0000 as *mut c_void, 4096),
                    };
                    let Some(size) = input.size(len.min(4096)) else { break };
                    let d = pool.pick(arg);
                    let mut out = SENTINEL as *mut c_void;
                    let registered = ok(olMemRegister(d, ptr, size, u32::from(arg % 3), &mut out));
                    if !registered {
                        assert_eq!(out as usize, SENTINEL);
                    }
                    if b % 4 != 3 {
                        code(olMemUnregister(d, ptr));
                    }
                }
                _ => {
                    // Memory information about live, freed, host and forged addresses.
                    let Some(b) = input.byte() else { break };
                    let p = match b % 4 {
                        0 => host.as_ptr().cast::<c_void>(),
                        1 => 0xdead_0000 as *const c_void,
                        _ => pool
                            .memory
                            .get(usize::from(arg) % pool.memory.len().max(1))
                            .map_or(null(), |m| (m.0 as *const u8).wrapping_add(usize::from(b % 8)).cast()),
                    };
                    let prop = u32::from(arg % 6);
                    info(usize::from(b % 66), |s, q| olGetMemInfo(p, prop, s, q), |n| olGetMemInfoSize(p, prop, n));
                }
            }
        }
        // Drop every reference: every call then answers UNINITIALIZED, ready for the next input.
        while ok(olShutDown()) {}
        assert_eq!(code(olShutDown()), OL_ERRC_UNINITIALIZED);
        let mut out = SENTINEL as *mut c_void;
        assert_eq!(code(olMemAlloc(pool.pick(3), OL_ALLOC_TYPE_HOST, 64, &mut out)), OL_ERRC_UNINITIALIZED);
        assert_eq!(out as usize, SENTINEL);
        assert_eq!(code(olIterateDevices(Some(collect), (&raw mut pool.handles).cast())), OL_ERRC_UNINITIALIZED);
    }
    drop(host);
});
