//! The host backend's own tests: data races and uninitialised reads under threads (Miri), local
//! memory, and the calls liboffload's API needs.

extern crate std;

use super::*;
use crate::DevicePtr;

static ARENA: HostArena<{ 4 * HOST_ALIGN }> = HostArena::new();
static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
static BACKENDS: [&dyn Backend; 1] = [&HOST];
crate::static_runtime!(static RT = &BACKENDS);

/// Any interleaving of valid calls is free of data races and uninitialised reads (Miri
/// checks this test: `cargo +nightly miri test -p ordo-core --lib host`): threads copy into,
/// out of, fill and launch over one allocation at once, and a fresh allocation reads as zeros.
#[test]
fn concurrent_copies_fills_and_launches_on_one_allocation_are_sound() {
    RT.init().unwrap();
    let d = RT.device(RT.platform(0).unwrap(), 0).unwrap();
    let m = RT.mem_alloc(d, MemKind::Device, 64).unwrap();
    let mut fresh = [0xffu8; 64];
    RT.copy_from_device(&mut fresh, m).unwrap();
    assert_eq!(fresh, [0; 64], "the arena starts zeroed");
    let q = RT.queue_create(d).unwrap();
    let p = RT.program_load(d, builtin::PROGRAM_NAME.as_bytes()).unwrap();
    let add = RT.kernel_get(p, "vector_add_f32").unwrap();
    let threads: std::vec::Vec<_> = (0..3u8)
        .map(|i| {
            std::thread::spawn(move || {
                for _ in 0..3 {
                    match i {
                        0 => RT.copy_to_device(m, &[i; 64]).unwrap(),
                        1 => RT.fill(m, crate::FillValue::U16(0x0101), 32, None).unwrap(),
                        _ => {
                            let mut out = [0u8; 64];
                            RT.copy_from_device(&mut out, m).unwrap();
                            let (a, n) = (m.as_ptr::<f32>(), 16u32);
                            let params = [
                                core::ptr::addr_of!(a) as *mut core::ffi::c_void,
                                core::ptr::addr_of!(a) as *mut _,
                                core::ptr::addr_of!(a) as *mut _,
                                core::ptr::addr_of!(n) as *mut _,
                            ];
                            const PTR: usize = core::mem::size_of::<*mut f32>();
                            let args = KernelArgs::new(&params, &[PTR, PTR, PTR, 4]).unwrap();
                            // SAFETY: (ptr, ptr, ptr, u32) over 16 floats of the allocation.
                            unsafe { RT.launch(q, add, &LaunchDims::linear(1, 16), &args) }.unwrap();
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    RT.fill(m.offset(2), crate::FillValue::U16(7), 3, None).unwrap();
    let mut out = [0u8; 8];
    RT.copy_from_device(&mut out, m).unwrap();
    assert_eq!(&out[2..8], &[7, 0, 7, 0, 7, 0]);
    assert_eq!(RT.mem_free(DevicePtr(m.0)), Ok(()));
    RT.shutdown().unwrap();
}

/// Each thread adds its index + 1 to the block's local counter; the last thread writes the
/// block's sum to `out[block]`.
unsafe fn block_sum(t: &HostThread, args: &KernelArgs<'_>) -> Result<(), Error> {
    // SAFETY: the test passes one pointer to `grid` u32s of device memory.
    let out: *mut u32 = unsafe { args.read(0) }?;
    assert!(!t.local.is_null() && t.local_len >= 4);
    let counter = t.local.cast::<u32>();
    // SAFETY: the block's local memory, at least 4 bytes, used by this thread only now.
    unsafe { counter.write_unaligned(counter.read_unaligned() + t.thread[0] + 1) };
    if t.thread[0] + 1 == t.block_dim[0] {
        // SAFETY: `out` has an entry per block.
        unsafe { out.add(t.block[0] as usize).write_unaligned(counter.read_unaligned()) };
    }
    Ok(())
}

static LOCAL_ARENA: HostArena<{ 4 * HOST_ALIGN }> = HostArena::new();
static LOCAL_PROGRAMS: [HostProgram; 1] = [HostProgram {
    name: "local",
    kernels: &[HostKernel {
        name: "block_sum",
        run: block_sum,
        params: &[core::mem::size_of::<*mut u32>()],
        extents_required: false,
    }],
}];
static LOCAL_HOST: HostBackend = HostBackend::new(&LOCAL_ARENA, &LOCAL_PROGRAMS, None);
static LOCAL_BACKENDS: [&dyn Backend; 1] = [&LOCAL_HOST];
crate::static_runtime!(static LOCAL_RT = &LOCAL_BACKENDS);

/// A launch's local memory: zeroed per block, common to the block's threads, freed after the
/// launch; more than 48 KiB is `InvalidValue`; the device reports the limit.
#[test]
fn blocks_have_local_memory() {
    let rt = &LOCAL_RT;
    rt.init().unwrap();
    let d = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    assert_eq!(rt.device_info(d, DeviceInfo::MaxSharedMemoryPerBlockOptin).unwrap(), InfoValue::Int(48 * 1024));
    let out = rt.mem_alloc(d, MemKind::Device, 12).unwrap();
    let q = rt.queue_create(d).unwrap();
    let p = rt.program_load(d, b"local").unwrap();
    let k = rt.kernel_get(p, "block_sum").unwrap();
    let ptr = out.as_ptr::<u32>();
    let params = [core::ptr::addr_of!(ptr) as *mut core::ffi::c_void];
    let args = KernelArgs::new(&params, &[core::mem::size_of::<*mut u32>()]).unwrap();
    let free = LOCAL_HOST.free_bytes();
    let dims = LaunchDims { grid: [3, 1, 1], block: [4, 1, 1], shared_mem_bytes: 4 };
    // SAFETY: one pointer to 3 u32s of device memory.
    unsafe { rt.launch(q, k, &dims, &args) }.unwrap();
    let mut sums = [0u8; 12];
    rt.copy_from_device(&mut sums, out).unwrap();
    let word = |i: usize| u32::from_ne_bytes(sums[i * 4..i * 4 + 4].try_into().unwrap());
    assert_eq!([word(0), word(1), word(2)], [10, 10, 10], "zeroed for each block");
    assert_eq!(LOCAL_HOST.free_bytes(), free, "the local memory went back");
    let too_much = LaunchDims { shared_mem_bytes: 48 * 1024 + 1, ..dims };
    // SAFETY: as above.
    assert_eq!(unsafe { rt.launch(q, k, &too_much, &args) }.unwrap_err().code, ErrorCode::InvalidValue);
    rt.shutdown().unwrap();
}

unsafe extern "C" fn bump(data: *mut core::ffi::c_void) {
    // SAFETY: the test passes a live `u32`.
    unsafe { *data.cast::<u32>() += 1 };
}

/// The calls liboffload's API needs: fills of any pattern size at any alignment, host
/// functions on a queue, declared parameter layouts, image checks, and no globals.
#[test]
fn patterns_host_functions_layouts_and_checks() {
    RT.init().unwrap();
    let d = RT.device(RT.platform(0).unwrap(), 0).unwrap();
    let m = RT.mem_alloc(d, MemKind::Device, 32).unwrap();
    let q = RT.queue_create(d).unwrap();
    // (The arena is shared with the other test: its memory may hold that test's bytes.)
    RT.copy_to_device(m, &[0; 32]).unwrap();
    RT.fill_pattern(m.offset(1), &[1, 2, 3], 30, Some(q)).unwrap();
    let mut out = [0u8; 32];
    RT.copy_from_device(&mut out, m).unwrap();
    assert_eq!(&out[..7], &[0, 1, 2, 3, 1, 2, 3]);
    assert_eq!(out[29..], [2, 3, 0]);
    let code = |r: crate::Result<()>| r.unwrap_err().code;
    assert_eq!(code(RT.fill_pattern(m, &[1, 2, 3], 31, None)), ErrorCode::InvalidSize);
    assert_eq!(code(RT.fill_pattern(m, &[], 0, None)), ErrorCode::InvalidSize);
    assert_eq!(code(RT.fill_pattern(m, &[1, 2], 34, None)), ErrorCode::InvalidSize);
    assert_eq!(RT.fill_pattern(m, &[1, 2], 0, None), Ok(()));
    let mut calls = 0u32;
    // SAFETY: `bump` takes the live `calls`.
    unsafe { RT.queue_host_function(q, bump, core::ptr::addr_of_mut!(calls).cast()) }.unwrap();
    assert_eq!(calls, 1, "host queues run the function before the call returns");
    let p = RT.program_load(d, builtin::PROGRAM_NAME.as_bytes()).unwrap();
    let add = RT.kernel_get(p, "vector_add_f32").unwrap();
    let layout = RT.kernel_param_layout(add).unwrap();
    let ptr = core::mem::size_of::<usize>() as u32;
    let want = [(0, ptr), (ptr, ptr), (2 * ptr, ptr), (3 * ptr, 4)];
    assert_eq!(layout.iter().map(|s| (s.offset, s.size)).collect::<std::vec::Vec<_>>(), want);
    assert_eq!(RT.kernel_optimal_block_size(add, 0), Ok(1));
    // A packed argument buffer (liboffload's form): split by the layout; bytes after the last
    // parameter are not read; a buffer that ends inside a parameter changes nothing.
    let floats = |v: [f32; 2]| [v[0].to_ne_bytes(), v[1].to_ne_bytes()].concat();
    RT.copy_to_device(m, &floats([1.5, 2.0])).unwrap();
    let mut packed = std::vec::Vec::new();
    for _ in 0..3 {
        packed.extend_from_slice(&(m.0 as usize).to_ne_bytes());
    }
    packed.extend_from_slice(&2u32.to_ne_bytes());
    packed.extend_from_slice(&[0xff; 4]);
    let dims = LaunchDims { grid: [2, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 };
    let short = &packed[..3 * ptr as usize + 3];
    // SAFETY: the buffer holds three pointers to two live floats and their count.
    let launch = |args: &[u8]| unsafe { RT.launch_packed_on(d, q, add, &dims, args) };
    assert_eq!(code(launch(short)), ErrorCode::InvalidSize);
    let mut two = [0u8; 8];
    RT.copy_from_device(&mut two, m).unwrap();
    assert_eq!(two.as_slice(), floats([1.5, 2.0]).as_slice(), "a refused launch ran nothing");
    launch(&packed).unwrap();
    RT.queue_synchronize(q).unwrap();
    RT.copy_from_device(&mut two, m).unwrap();
    assert_eq!(two.as_slice(), floats([3.0, 4.0]).as_slice());
    assert_eq!(RT.program_check(d, b"ordo.builtin"), Ok(true));
    assert_eq!(RT.program_check(d, b"nope"), Ok(false));
    assert_eq!(RT.program_check(d, b"").unwrap_err().code, ErrorCode::InvalidSize);
    assert_eq!(RT.program_global(p, "g").unwrap_err().code, ErrorCode::NotFound);
    assert_eq!(RT.mem_alloc(d, MemKind::Global, 8).unwrap_err().code, ErrorCode::InvalidEnumeration);
    RT.program_unload(p).unwrap();
    assert_eq!(RT.kernel_param_layout(add).unwrap_err().code, ErrorCode::InvalidHandle);
    RT.mem_free(m).unwrap();
    RT.shutdown().unwrap();
}

// ---- DeferredHost: queues that run their work at execution points ----------------------------

mod deferred {
    use super::*;
    use crate::{Event, FillValue};

    static ARENA: HostArena<{ 8 * HOST_ALIGN }> = HostArena::new();
    static KERNELS: &[HostKernel] = &[
        HostKernel {
            name: "add_u32",
            run: add_u32,
            params: &[core::mem::size_of::<usize>(), 4],
            extents_required: false,
        },
        HostKernel { name: "fail", run: fail, params: &[], extents_required: false },
    ];
    static PROGRAMS: &[HostProgram] = &[HostProgram { name: "deferred.test", kernels: KERNELS }];
    static HOST: HostBackend = HostBackend::new(&ARENA, PROGRAMS, None);
    static DEVICE: DeferredHost = DeferredHost::new(&HOST);
    static BACKENDS: [&dyn Backend; 1] = [&DEVICE];
    crate::static_runtime!(static RT = &BACKENDS);

    /// `*(u32 *)p += v` (one thread).
    unsafe fn add_u32(_: &HostThread, args: &KernelArgs<'_>) -> Result<(), Error> {
        // SAFETY: the test passes the address of a live `u32` of the arena and a `u32`.
        unsafe {
            let p = core::ptr::with_exposed_provenance_mut::<u32>(args.read::<usize>(0)?);
            *p += args.read::<u32>(1)?;
        }
        Ok(())
    }

    unsafe fn fail(_: &HostThread, _: &KernelArgs<'_>) -> Result<(), Error> {
        Err(Error::new(ErrorCode::InvalidValue, "this kernel fails"))
    }

    /// The order host functions ran in.
    static LOG: spin::Mutex<heapless::Vec<u8, 64>> = spin::Mutex::new(heapless::Vec::new());

    unsafe extern "C" fn log(data: *mut core::ffi::c_void) {
        LOG.lock().push(data as usize as u8).unwrap();
    }

    fn logged() -> std::vec::Vec<u8> {
        LOG.lock().to_vec()
    }

    fn enqueue_log(q: crate::Queue, n: u8) {
        // SAFETY: `log` may run anywhere, once.
        unsafe { RT.queue_host_function(q, log, n as usize as *mut core::ffi::c_void) }.unwrap();
    }

    /// Reads the `u32` at `p` directly (the arena is host memory), without an execution point.
    fn peek(p: DevicePtr) -> u32 {
        // SAFETY: a live allocation of the arena; the runtime exposed its provenance; no work
        // runs while the test reads (it runs only at the test's own execution points).
        unsafe { core::ptr::with_exposed_provenance::<u32>(p.0 as usize).read() }
    }

    /// Work waits for an execution point (the queue's synchronise or query, an event's, a
    /// queue-less copy, `mem_free`, `queue_destroy`), runs in submission order, keeps its
    /// arguments from submission, and reports its error at the queue's next synchronise.
    #[test]
    fn work_runs_at_execution_points_in_submission_order() {
        RT.init().unwrap();
        let d = RT.device(RT.platform(0).unwrap(), 0).unwrap();
        let (q1, q2) = (RT.queue_create(d).unwrap(), RT.queue_create(d).unwrap());
        enqueue_log(q1, 1);
        assert_eq!(logged(), [], "nothing runs at submission");
        assert_eq!(DEVICE.waiting(), 1);
        assert_eq!(RT.queue_query(q1), Ok(true), "a query is an execution point");
        assert_eq!(logged(), [1]);

        // Across queues: q2 waits for an event recorded on q1, and only through that record.
        let e: Event = RT.event_create(d).unwrap();
        enqueue_log(q1, 2);
        RT.event_record(e, q1).unwrap();
        enqueue_log(q1, 4);
        RT.queue_wait_event(q2, e).unwrap();
        enqueue_log(q2, 3);
        assert_eq!(logged(), [1]);
        RT.queue_synchronize(q2).unwrap();
        assert_eq!(logged(), [1, 2, 3], "q1 ran through the record only");
        assert_eq!(RT.event_query(e), Ok(true));
        RT.queue_synchronize(q1).unwrap();
        assert_eq!(logged(), [1, 2, 3, 4]);

        // Arguments are copied at submission; the kernel runs at the synchronise.
        let m = RT.mem_alloc(d, MemKind::Device, 16).unwrap();
        RT.fill(m, FillValue::U32(10), 4, None).unwrap();
        let p = RT.program_load(d, b"deferred.test").unwrap();
        let add = RT.kernel_get(p, "add_u32").unwrap();
        let one = LaunchDims { grid: [1, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 };
        let (mut at, mut v) = (m.0 as usize, 5u32);
        let sizes = [core::mem::size_of::<usize>(), 4];
        let params = [(&raw mut at).cast::<core::ffi::c_void>(), (&raw mut v).cast()];
        let args = KernelArgs::new(&params, &sizes).unwrap();
        // SAFETY: the address of a live u32 and a u32, as the kernel declares.
        unsafe { RT.launch(q1, add, &one, &args) }.unwrap();
        v = 100;
        let _ = v;
        assert_eq!(peek(m), 10, "the launch waits");
        RT.queue_synchronize(q1).unwrap();
        assert_eq!(peek(m), 15, "it ran with the value given at submission");

        // A queue-less copy runs every queue's waiting work first.
        RT.fill(m, FillValue::U32(7), 1, Some(q2)).unwrap();
        assert_eq!(peek(m), 15);
        let mut out = [0u8; 4];
        RT.copy_from_device(&mut out, m).unwrap();
        assert_eq!(u32::from_ne_bytes(out), 7);

        // A failing launch fails the queue's next synchronise, once.
        let bad = RT.kernel_get(p, "fail").unwrap();
        // SAFETY: the kernel takes no arguments.
        unsafe { RT.launch(q2, bad, &one, &KernelArgs::new(&[], &[]).unwrap()) }.unwrap();
        assert_eq!(RT.queue_synchronize(q2).unwrap_err().code, ErrorCode::InvalidValue);
        assert_eq!(RT.queue_synchronize(q2), Ok(()));

        // With every slot taken, a submission runs its queue's waiting work first.
        for n in 0..DEFERRED_WORK as u8 {
            enqueue_log(q2, 10 + n);
        }
        assert_eq!(logged().len(), 4);
        enqueue_log(q2, 99);
        assert_eq!(logged().len(), 4 + DEFERRED_WORK, "the full queue ran, the new work waits");
        assert_eq!(DEVICE.waiting(), 1);

        // Destroying a queue, and freeing memory, run what waits first.
        RT.queue_destroy(q2).unwrap();
        assert_eq!(logged().last(), Some(&99));
        RT.fill(m, FillValue::U32(1), 1, Some(q1)).unwrap();
        RT.program_unload(p).unwrap();
        assert_eq!(peek(m), 1, "program_unload ran the waiting fill");
        RT.fill(m, FillValue::U32(2), 1, Some(q1)).unwrap();
        RT.mem_free(m).unwrap();
        assert_eq!(DEVICE.waiting(), 0);
        RT.event_destroy(e).unwrap();
        // Work left at shutdown runs in the teardown's synchronise.
        enqueue_log(q1, 50);
        assert!(matches!(RT.shutdown(), Ok(crate::Shutdown::TornDown(_))));
        assert_eq!(logged().last(), Some(&50));
        assert_eq!(DEVICE.waiting(), 0);
    }
}

// ---- packed launches: narrow and wide kernels -------------------------------------------------

mod packed {
    use super::*;

    static ARENA: HostArena<{ 2 * HOST_ALIGN }> = HostArena::new();
    const PTR: usize = core::mem::size_of::<usize>();
    static KERNELS: &[HostKernel] = &[
        HostKernel { name: "sum2", run: sum, params: &[PTR, 4, 4], extents_required: false },
        HostKernel { name: "sum8", run: sum, params: &[PTR, 4, 4, 4, 4, 4, 4, 4, 4], extents_required: false },
    ];
    static PROGRAMS: &[HostProgram] = &[HostProgram { name: "packed.test", kernels: KERNELS }];
    static HOST: HostBackend = HostBackend::new(&ARENA, PROGRAMS, None);
    static BACKENDS: [&dyn Backend; 1] = [&HOST];
    crate::static_runtime!(static RT = &BACKENDS);

    /// `*(u32 *)p = sum of the u32 parameters after it` (one thread).
    unsafe fn sum(_: &HostThread, args: &KernelArgs<'_>) -> Result<(), Error> {
        let mut total = 0u32;
        for i in 1..args.params().len() {
            // SAFETY: every parameter after the first is a `u32`.
            total += unsafe { args.read::<u32>(i) }?;
        }
        // SAFETY: the test passes the address of a live `u32` of the arena.
        unsafe { *core::ptr::with_exposed_provenance_mut::<u32>(args.read::<usize>(0)?) = total };
        Ok(())
    }

    /// Packed argument buffers of a narrow (3 parameters) and a wide (9 parameters) kernel are
    /// split by the kernel's layout into the values each parameter holds, at the first launch
    /// (which learns where the buffer ends) and every one after it.
    #[test]
    fn packed_launches_read_every_parameter_of_narrow_and_wide_kernels() {
        RT.init().unwrap();
        let d = RT.device(RT.platform(0).unwrap(), 0).unwrap();
        let q = RT.queue_create(d).unwrap();
        let m = RT.mem_alloc(d, MemKind::Device, 4).unwrap();
        let p = RT.program_load(d, b"packed.test").unwrap();
        let dims = LaunchDims::linear(1, 1);
        for (name, count) in [("sum2", 2u32), ("sum8", 8)] {
            let k = RT.kernel_get(p, name).unwrap();
            let mut packed = std::vec::Vec::from((m.0 as usize).to_ne_bytes());
            for v in 1..=count {
                packed.extend_from_slice(&(v * 10).to_ne_bytes());
            }
            for round in 0..3 {
                RT.copy_to_device(m, &[0; 4]).unwrap();
                // SAFETY: a pointer to a live u32 of the arena, then `count` u32 values.
                unsafe { RT.launch_packed_on(d, q, k, &dims, &packed) }.unwrap();
                RT.queue_synchronize(q).unwrap();
                let mut out = [0u8; 4];
                RT.copy_from_device(&mut out, m).unwrap();
                assert_eq!(u32::from_ne_bytes(out), 10 * count * (count + 1) / 2, "{name}, launch {round}");
            }
        }
        RT.shutdown().unwrap();
    }
}

// ---- Two host devices in one runtime: told apart by name -------------------------------------

mod two_hosts {
    use super::*;
    use crate::{BackendKind, DeviceInfo, InfoValue};

    static ARENA_A: HostArena<{ 2 * HOST_ALIGN }> = HostArena::new();
    static ARENA_B: HostArena<{ 2 * HOST_ALIGN }> = HostArena::new();
    static HOST_A: HostBackend = HostBackend::new(&ARENA_A, &[], None);
    static HOST_B: HostBackend = HostBackend::new(&ARENA_B, &[], None);
    static BACKENDS: [&dyn Backend; 2] = [&HOST_A, &HOST_B];
    crate::static_runtime!(static RT = &BACKENDS);

    fn name(platform: u32) -> InfoValue {
        let device = RT.device(RT.platform(platform).unwrap(), 0).unwrap();
        RT.device_info(device, DeviceInfo::Name).unwrap()
    }

    #[test]
    fn each_host_device_carries_its_number() {
        let guard = RT.init_guard().unwrap();
        assert_eq!(RT.platform_info(RT.platform(1).unwrap()).unwrap().kind, BackendKind::Host);
        assert_eq!(name(0), InfoValue::text("host CPU 0 (queue work on the calling thread)"));
        assert_eq!(name(1), InfoValue::text("host CPU 1 (queue work on the calling thread)"));
        drop(guard);
    }
}
