//! Reads its input as a sequence of MLIR CUDA runtime calls (`mgpu*`, ordo's drop-in for
//! `libmlir_cuda_runtime.so`): streams and events created, destroyed (twice, too), synchronised
//! and waited on; device and managed allocations freed twice; copies and fills between host
//! memory, live allocations, freed allocations and NULL; host registration of host memory and of
//! device pointers; modules loaded from PTX and from garbage, functions looked up by good and bad
//! names; launches with bad functions, shapes, shared memory, streams and argument counts, and
//! well-formed ones. Needs a CUDA device (`mgpu*` exits without one, as an MLIR program must):
//! built here, run on the GPU machine (`tests/gpu/run.sh` has the command).
//!
//! Checks that no call crashes, hangs or corrupts memory (with AddressSanitizer), that device
//! memory survives calls that must not free it, and that a copy or fill through a freed or NULL
//! pointer leaves the host buffer on the other side as it was. Host memory handed to ordo is
//! always valid for the size given, and a launch that can pass ordo's checks gets arguments its
//! kernel can use (the caller's contract, not ordo's to check). Each input frees what it made.
#![no_main]

use std::ffi::c_void;
use std::ptr::null_mut;

use libfuzzer_sys::fuzz_target;
use ordo_ffi::mlir::*;

const HOST_BYTES: usize = 1 << 14;

/// Two kernels: `empty()` and `store(u64 p, u32 v)`, which writes `v` at `p`.
const PTX: &[u8] = b".version 7.0\n.target sm_70\n.address_size 64\n\
.visible .entry empty()\n{\n\tret;\n}\n\
.visible .entry store(.param .u64 p, .param .u32 v)\n{\n\t.reg .b64 %rd<3>;\n\t.reg .b32 %r<2>;\n\
\tld.param.u64 %rd1, [p];\n\tld.param.u32 %r1, [v];\n\tcvta.to.global.u64 %rd2, %rd1;\n\
\tst.global.u32 [%rd2], %r1;\n\tret;\n}\n\0";

#[path = "input.rs"]
mod input;
use input::Input;

/// What an input made: live and destroyed objects (a destroyed one is passed again on purpose).
#[derive(Default)]
struct Made {
    streams: Vec<(usize, bool)>,
    events: Vec<(usize, bool)>,
    modules: Vec<(usize, bool)>,
    functions: Vec<(usize, u8)>,
    /// (address, size, live)
    memory: Vec<(usize, usize, bool)>,
}

fn pick(list: &[(usize, bool)], b: u8) -> *mut c_void {
    match b % 6 {
        0 => null_mut(),
        1 => (usize::MAX >> 8) as *mut c_void,
        _ if list.is_empty() => null_mut(),
        _ => list[usize::from(b) % list.len()].0 as *mut c_void,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let mut made = Made::default();
    let mut host = vec![0x11u8; HOST_BYTES];
    // SAFETY (whole block): host pointers are `host` with sizes within it; device pointers are
    // live allocations (sizes within them), freed ones or NULL, which ordo must refuse; a launch
    // that can pass ordo's checks stores into a live allocation through a full argument list.
    unsafe {
        while let Some(op) = input.byte() {
            let Some(arg) = input.byte() else { break };
            match op % 14 {
                0 => {
                    let s = mgpuStreamCreate();
                    if !s.is_null() {
                        made.streams.push((s as usize, true));
                    }
                }
                1 => {
                    let s = pick(&made.streams, arg);
                    match arg % 3 {
                        0 => {
                            mgpuStreamDestroy(s);
                            made.streams.iter_mut().filter(|x| x.0 == s as usize).for_each(|x| x.1 = false);
                        }
                        1 => mgpuStreamSynchronize(s),
                        _ => mgpuStreamWaitEvent(s, pick(&made.events, arg.rotate_left(3))),
                    }
                }
                2 => {
                    let e = mgpuEventCreate();
                    if !e.is_null() {
                        made.events.push((e as usize, true));
                    }
                }
                3 => {
                    let e = pick(&made.events, arg);
                    match arg % 3 {
                        0 => {
                            mgpuEventDestroy(e);
                            made.events.iter_mut().filter(|x| x.0 == e as usize).for_each(|x| x.1 = false);
                        }
                        1 => mgpuEventSynchronize(e),
                        _ => mgpuEventRecord(e, pick(&made.streams, arg.rotate_left(2))),
                    }
                }
                4 => {
                    let Some(b) = input.byte() else { break };
                    let size = match b % 5 {
                        0 => 0,
                        1 => u64::MAX,
                        2 => 1 << 60,
                        _ => u64::from(input.u16().unwrap_or(1)) % 4096 + 1,
                    };
                    let p = mgpuMemAlloc(size, pick(&made.streams, b), arg % 2);
                    if !p.is_null() {
                        assert!(size <= 4096, "an allocation of {size} bytes succeeded");
                        made.memory.push((p as usize, size as usize, true));
                    }
                }
                5 => {
                    // Free a live or an already freed allocation, or NULL.
                    let n = made.memory.len().max(1);
                    if let Some(m) = made.memory.get_mut(usize::from(arg) % n) {
                        mgpuMemFree(m.0 as *mut c_void, null_mut());
                        m.2 = false;
                    } else {
                        mgpuMemFree(null_mut(), null_mut());
                    }
                }
                6 => {
                    // A copy between `host` and an allocation (live or freed) or NULL, either way,
                    // or between two allocations, of a size that may run past the allocations
                    // (never past `host`, except `i64::MAX`): ordo checks every device side, so
                    // through a freed or NULL side, or past a live one's end, nothing is copied.
                    let Some(b) = input.byte() else { break };
                    let m = made.memory.get(usize::from(arg) % made.memory.len().max(1)).copied();
                    let other = made.memory.get(usize::from(b) % made.memory.len().max(1)).copied();
                    let stream = pick(&made.streams, b.rotate_left(2));
                    let (dev, mut len, mut live) = match (b % 5, m) {
                        (0, _) | (_, None) => (0usize, 0, false),
                        (_, Some(m)) => m,
                    };
                    // The driver reuses a freed allocation's addresses: a later live allocation
                    // over the address is what the pointer names now.
                    if let Some(again) = made.memory.iter().find(|x| x.2 && dev != 0 && (x.0..x.0 + x.1).contains(&dev))
                    {
                        (len, live) = (again.0 + again.1 - dev, true);
                    }
                    let size = match input.byte().map(|s| s % 4) {
                        None => break,
                        Some(0) => -1i64,
                        Some(1) => i64::MAX,
                        _ => i64::from(input.u16().unwrap_or(0)) % (len as i64 + 65),
                    };
                    let before = host.clone();
                    let h = host.as_mut_ptr().cast::<c_void>();
                    let to_host = match (arg % 3, other) {
                        (0, _) | (_, None) => {
                            mgpuMemcpy(h, dev as *mut c_void, size, stream);
                            true
                        }
                        (1, _) => {
                            mgpuMemcpy(dev as *mut c_void, h, size, stream);
                            false
                        }
                        (_, Some(o)) => {
                            mgpuMemcpy(dev as *mut c_void, o.0 as *mut c_void, size, stream);
                            false
                        }
                    };
                    mgpuStreamSynchronize(stream);
                    if to_host && (!live || size < 0 || size as usize > len) {
                        assert_eq!(host, before, "a refused copy changed host memory");
                    }
                }
                7 => {
                    // A fill of an allocation (live or freed) or NULL, possibly past its end.
                    let Some(b) = input.byte() else { break };
                    let (dev, len) = made
                        .memory
                        .get(usize::from(arg) % made.memory.len().max(1))
                        .filter(|_| b % 5 != 0)
                        .map_or((0, 0), |m| (m.0, m.1));
                    let count = match b % 4 {
                        0 => -1,
                        1 => i64::MAX,
                        _ => i64::from(input.u16().unwrap_or(0)) % (len as i64 / 2 + 9),
                    };
                    let stream = pick(&made.streams, arg.rotate_left(1));
                    if b % 2 == 0 {
                        mgpuMemset32(dev as *mut c_void, u32::from(arg), count, stream);
                    } else {
                        mgpuMemset16(dev as *mut c_void, u16::from(arg), count, stream);
                    }
                    mgpuStreamSynchronize(stream);
                }
                8 => {
                    // Register part of `host`, or an allocation's device pointer (which must not
                    // free it); unregister either.
                    let Some(b) = input.byte() else { break };
                    let m = made.memory.iter().find(|m| m.2).copied();
                    match (b % 4, m) {
                        (0, Some(m)) => {
                            mgpuMemHostRegister(m.0 as *mut c_void, m.1 as i64);
                            mgpuMemHostUnregister(m.0 as *mut c_void);
                            // Still allocated: a copy into it works, and so does its free.
                            let one = [7u8; 4];
                            mgpuMemcpy(
                                m.0 as *mut c_void,
                                one.as_ptr().cast_mut().cast(),
                                4.min(m.1 as i64),
                                null_mut(),
                            );
                            mgpuStreamSynchronize(null_mut());
                        }
                        _ => {
                            let offset = usize::from(arg % 16) * 512;
                            let size = match b % 3 {
                                0 => -5,
                                1 => 0,
                                _ => i64::from(input.u16().unwrap_or(0)) % ((HOST_BYTES - offset) as i64 + 1),
                            };
                            let p = host.as_mut_ptr().wrapping_add(offset).cast::<c_void>();
                            mgpuMemHostRegister(p, size);
                            if b % 7 != 6 {
                                mgpuMemHostUnregister(p);
                            }
                        }
                    }
                }
                9 => {
                    let module = match arg % 5 {
                        0 => mgpuModuleLoad(PTX.as_ptr().cast(), PTX.len() as i64),
                        1 => mgpuModuleLoadJIT(PTX.as_ptr().cast(), 2),
                        2 => mgpuModuleLoad(b"garbage\0".as_ptr().cast(), 8),
                        3 => mgpuModuleLoad(PTX.as_ptr().cast(), i64::from(arg % 3) - 1),
                        _ => mgpuModuleLoad(std::ptr::null(), 16),
                    };
                    if !module.is_null() {
                        made.modules.push((module as usize, true));
                    }
                }
                10 => {
                    let module = pick(&made.modules, arg);
                    if arg % 4 == 3 {
                        mgpuModuleUnload(module);
                        made.modules.iter_mut().filter(|x| x.0 == module as usize).for_each(|x| x.1 = false);
                        continue;
                    }
                    let names: [&[u8]; 5] = [b"empty\0", b"store\0", b"nope\0", b"\0", b"\xff\0"];
                    let which = (arg >> 2) % 5;
                    let f = mgpuModuleGetFunction(module, names[usize::from(which)].as_ptr().cast());
                    if !f.is_null() {
                        assert!(which < 2, "a function that the module does not have was found");
                        made.functions.push((f as usize, which));
                    }
                }
                11 => {
                    // A launch ordo must refuse: a dimension of 0, negative or beyond `u32`, shared
                    // memory no device has, or no function; the argument list always full and
                    // valid (one live allocation's address), so nothing else could go wrong.
                    let Some(b) = input.byte() else { break };
                    let f = match (b % 4, made.functions.get(usize::from(arg) % made.functions.len().max(1))) {
                        (0, _) | (_, None) => null_mut(),
                        (_, Some(f)) => f.0 as *mut c_void,
                    };
                    let bad = [0i64, -1, 1 << 33, i64::MIN][usize::from(b % 4)];
                    let mut g = [1i64; 3];
                    let mut k = [1i64; 3];
                    match arg % 3 {
                        0 => g[usize::from(b % 3)] = bad,
                        1 => k[usize::from(b % 3)] = bad,
                        _ => {}
                    }
                    let smem = if arg % 3 == 2 { [i32::MIN, -1, i32::MAX, 1 << 20][usize::from(b % 4)] } else { 0 };
                    let Some(target) = made.memory.iter().find(|m| m.2 && m.1 >= 4).map(|m| m.0) else { continue };
                    let value = 5u32;
                    let mut params =
                        [(&raw const target).cast_mut().cast::<c_void>(), (&raw const value).cast_mut().cast()];
                    let stream = pick(&made.streams, b.rotate_left(3));
                    mgpuLaunchKernel(
                        f,
                        g[0],
                        g[1],
                        g[2],
                        k[0],
                        k[1],
                        k[2],
                        smem,
                        stream,
                        params.as_mut_ptr(),
                        null_mut(),
                        2,
                    );
                    mgpuStreamSynchronize(stream);
                }
                12 => {
                    // A well-formed launch of `store` into a live allocation, on any stream.
                    let Some(&(f, 1)) = made.functions.iter().find(|f| f.1 == 1) else { continue };
                    let Some(target) = made.memory.iter().find(|m| m.2 && m.1 >= 4).map(|m| m.0) else { continue };
                    let value = u32::from(arg);
                    let mut params =
                        [(&raw const target).cast_mut().cast::<c_void>(), (&raw const value).cast_mut().cast()];
                    let stream = pick(&made.streams, arg);
                    mgpuLaunchKernel(f as *mut c_void, 1, 1, 1, 1, 1, 1, 0, stream, params.as_mut_ptr(), null_mut(), 2);
                    mgpuStreamSynchronize(stream);
                }
                _ => {
                    mgpuSetDefaultDevice([0, 1, -1, i32::MAX][usize::from(arg % 4)]);
                    let s = mgpuStreamCreate();
                    if !s.is_null() {
                        made.streams.push((s as usize, true));
                    }
                    mgpuSetDefaultDevice(0);
                }
            }
        }
        // Free what this input made, so that inputs do not fill ordo's tables.
        mgpuStreamSynchronize(null_mut());
        for s in made.streams.iter().filter(|s| s.1) {
            mgpuStreamSynchronize(s.0 as *mut c_void);
            mgpuStreamDestroy(s.0 as *mut c_void);
        }
        for e in made.events.iter().filter(|e| e.1) {
            mgpuEventDestroy(e.0 as *mut c_void);
        }
        for m in made.memory.iter().filter(|m| m.2) {
            mgpuMemFree(m.0 as *mut c_void, null_mut());
        }
        for m in made.modules.iter().filter(|m| m.1) {
            mgpuModuleUnload(m.0 as *mut c_void);
        }
    }
    drop(host);
});
