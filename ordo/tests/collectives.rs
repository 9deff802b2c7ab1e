//! Collectives without a GPU: the runtime's reference engine over host platforms (a device
//! each, queues on worker threads), every operation from 1 element to 8 MiB a rank, every data
//! type and reduction, an all-reduce of 64 MiB, against values computed here; the checks every part gets (handles, devices,
//! lengths, ranks, roots); communicators in the teardown order and stale after it.

use ordo::host::{HostBackend, ProvidedArena, QueuedHost, STD_HOST_HEAP, builtin};
use ordo::raw::{Backend, CollectiveKind, DataType, ObjectKind, ReduceOp as RawOp, TeardownStep};
use ordo::{CollectiveGroup, Context, DeviceBuffer, ErrorCode, OwnedRuntime, ReduceOp};

fn host_platform() -> &'static dyn Backend {
    let none: &'static ProvidedArena = Box::leak(Box::new(ProvidedArena::new()));
    let host: &'static HostBackend =
        Box::leak(Box::new(HostBackend::new(none, builtin::PROGRAMS, None).with_heap(STD_HOST_HEAP)));
    Box::leak(Box::new(QueuedHost::new(host)))
}

fn runtime(n: usize) -> OwnedRuntime<'static> {
    let platforms: Vec<_> = (0..n).map(|_| host_platform()).collect();
    OwnedRuntime::new(Box::leak(platforms.into_boxed_slice()))
}

fn code(e: ordo::Error) -> ErrorCode {
    match e {
        ordo::Error::Runtime(e) => e.code,
        other => panic!("not a runtime error: {other:?}"),
    }
}

fn values(rank: usize, n: usize) -> Vec<i64> {
    (0..n as i64).map(|i| (i * 7 + rank as i64 * 3) % 11 - 5).collect()
}

fn reduce(op: ReduceOp, xs: &[i64]) -> i64 {
    let r = xs.iter().copied().reduce(|a, b| match op {
        ReduceOp::Sum | ReduceOp::Avg => a.wrapping_add(b),
        ReduceOp::Prod => a.wrapping_mul(b),
        ReduceOp::Max => a.max(b),
        ReduceOp::Min => a.min(b),
    });
    let r = r.unwrap();
    if op == ReduceOp::Avg { r / xs.len() as i64 } else { r }
}

#[test]
fn all_reduce_every_op_and_size_over_three_host_devices() {
    let rt = runtime(3);
    let ctx = Context::with_runtime(&rt).unwrap();
    let devices: Vec<_> = ctx.devices().unwrap().into_iter().collect();
    let comms = ctx.communicators(&devices).unwrap();
    assert_eq!((comms[2].rank(), comms[2].size()), (2, 3));
    let queues: Vec<_> = devices.iter().map(|d| d.queue().unwrap()).collect();
    for n in [1usize, 5, 2049, 100_003] {
        for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg] {
            let sends: Vec<_> =
                devices.iter().enumerate().map(|(r, d)| DeviceBuffer::from_slice(d, &values(r, n)).unwrap()).collect();
            let mut recvs: Vec<_> = devices.iter().map(|d| DeviceBuffer::<i64>::zeroed(d, n).unwrap()).collect();
            let mut g = CollectiveGroup::new();
            for (((c, q), s), r) in comms.iter().zip(&queues).zip(&sends).zip(recvs.iter_mut()) {
                g.all_reduce(c, q, s, r, op);
            }
            g.submit().unwrap();
            let inputs: Vec<Vec<i64>> = (0..3).map(|r| values(r, n)).collect();
            let want: Vec<i64> = (0..n).map(|i| reduce(op, &[inputs[0][i], inputs[1][i], inputs[2][i]])).collect();
            for r in &recvs {
                assert_eq!(r.to_vec().unwrap(), want, "{n} elements, {op:?}");
            }
        }
    }
}

/// Every data type through the raw API (f16 and bf16 included), 64 MiB for one of them.
#[test]
fn every_data_type_and_64_mib() {
    let rt = runtime(2);
    let r: &ordo::raw::Runtime = &rt;
    r.init().unwrap();
    let p = [r.platform(0).unwrap(), r.platform(1).unwrap()];
    let devs = [r.device(p[0], 0).unwrap(), r.device(p[1], 0).unwrap()];
    let mut comms = [ordo::raw::Communicator::NULL; 2];
    r.comm_create_all(&devs, &mut comms).unwrap();
    let queues = [r.queue_create(devs[0]).unwrap(), r.queue_create(devs[1]).unwrap()];
    for &dtype in DataType::ALL {
        let n = if dtype == DataType::F32 { 16 << 20 } else { 1000 };
        let bytes = n * dtype.size();
        let mut bufs = Vec::new();
        for (i, &d) in devs.iter().enumerate() {
            let ptr = r.mem_alloc(d, ordo::raw::MemKind::Device, bytes).unwrap();
            // Element value 2 (i + 1) in each type's encoding.
            let one: Vec<u8> = match dtype {
                DataType::I8 | DataType::U8 => vec![(i + 1) as u8 * 2],
                DataType::I32 | DataType::U32 => ((i as u32 + 1) * 2).to_ne_bytes().to_vec(),
                DataType::I64 | DataType::U64 => ((i as u64 + 1) * 2).to_ne_bytes().to_vec(),
                DataType::F32 => ((i as f32 + 1.0) * 2.0).to_ne_bytes().to_vec(),
                DataType::F64 => ((i as f64 + 1.0) * 2.0).to_ne_bytes().to_vec(),
                DataType::F16 => [0x4000u16, 0x4400][i].to_ne_bytes().to_vec(),
                DataType::Bf16 => [0x4000u16, 0x4080][i].to_ne_bytes().to_vec(),
            };
            let host: Vec<u8> = one.iter().copied().cycle().take(bytes).collect();
            r.copy_to_device(ptr, &host).unwrap();
            bufs.push(ptr);
        }
        let parts: Vec<_> = (0..2)
            .map(|i| ordo::raw::Collective {
                comm: comms[i],
                queue: queues[i],
                kind: CollectiveKind::AllReduce,
                dtype,
                op: RawOp::Sum,
                count: n,
                peer: 0,
                send: bufs[i],
                recv: bufs[i],
            })
            .collect();
        r.collective(&parts).unwrap();
        // 2 + 4 = 6 in every type.
        let six: Vec<u8> = match dtype {
            DataType::I8 | DataType::U8 => vec![6],
            DataType::I32 | DataType::U32 => 6u32.to_ne_bytes().to_vec(),
            DataType::I64 | DataType::U64 => 6u64.to_ne_bytes().to_vec(),
            DataType::F32 => 6f32.to_ne_bytes().to_vec(),
            DataType::F64 => 6f64.to_ne_bytes().to_vec(),
            DataType::F16 => 0x4600u16.to_ne_bytes().to_vec(),
            DataType::Bf16 => 0x40c0u16.to_ne_bytes().to_vec(),
        };
        for &ptr in &bufs {
            let mut back = vec![0u8; bytes];
            r.copy_from_device(&mut back, ptr).unwrap();
            assert!(back.chunks(six.len()).all(|c| c == six), "{dtype:?}");
            r.mem_free(ptr).unwrap();
        }
    }
    r.shutdown().unwrap();
}

#[test]
fn broadcast_reduce_gather_scatter_and_send_receive() {
    let rt = runtime(3);
    let ctx = Context::with_runtime(&rt).unwrap();
    let devices: Vec<_> = ctx.devices().unwrap().into_iter().collect();
    let comms = ctx.communicators(&devices).unwrap();
    let queues: Vec<_> = devices.iter().map(|d| d.queue().unwrap()).collect();
    // 1 element to 8 MiB per rank (24 MiB gathered).
    for n in [1usize, 3001, 1 << 20] {
        let mk = |r: usize| DeviceBuffer::from_slice(&devices[r], &values(r, n)).unwrap();

        // Broadcast from rank 1, in place.
        let mut bufs: Vec<_> = (0..3).map(mk).collect();
        let mut g = CollectiveGroup::new();
        for ((c, q), b) in comms.iter().zip(&queues).zip(bufs.iter_mut()) {
            g.broadcast(c, q, b, 1);
        }
        g.submit().unwrap();
        for b in &bufs {
            assert_eq!(b.to_vec().unwrap(), values(1, n));
        }

        // Reduce (max) to rank 2: the others' recv untouched.
        let sends: Vec<_> = (0..3).map(mk).collect();
        let mut recvs: Vec<_> =
            devices.iter().map(|d| DeviceBuffer::<i64>::from_slice(d, &vec![99; n]).unwrap()).collect();
        let mut g = CollectiveGroup::new();
        for (((c, q), s), r) in comms.iter().zip(&queues).zip(&sends).zip(recvs.iter_mut()) {
            g.reduce(c, q, s, r, ReduceOp::Max, 2);
        }
        g.submit().unwrap();
        let inputs: Vec<Vec<i64>> = (0..3).map(|r| values(r, n)).collect();
        let max: Vec<i64> = (0..n).map(|i| (0..3).map(|r| inputs[r][i]).max().unwrap()).collect();
        assert_eq!(recvs[2].to_vec().unwrap(), max);
        assert_eq!(recvs[0].to_vec().unwrap(), vec![99; n]);

        // All-gather: rank order.
        let mut gathered: Vec<_> = devices.iter().map(|d| DeviceBuffer::<i64>::zeroed(d, 3 * n).unwrap()).collect();
        let mut g = CollectiveGroup::new();
        for (((c, q), s), r) in comms.iter().zip(&queues).zip(&sends).zip(gathered.iter_mut()) {
            g.all_gather(c, q, s, r);
        }
        g.submit().unwrap();
        let all: Vec<i64> = (0..3).flat_map(|r| values(r, n)).collect();
        for b in &gathered {
            assert_eq!(b.to_vec().unwrap(), all);
        }

        // Reduce-scatter (sum) of the gathered blocks: rank r gets 3 × block r.
        let mut parts: Vec<_> = devices.iter().map(|d| DeviceBuffer::<i64>::zeroed(d, n).unwrap()).collect();
        let mut g = CollectiveGroup::new();
        for (((c, q), s), r) in comms.iter().zip(&queues).zip(&gathered).zip(parts.iter_mut()) {
            g.reduce_scatter(c, q, s, r, ReduceOp::Sum);
        }
        g.submit().unwrap();
        for (r, b) in parts.iter().enumerate() {
            assert_eq!(b.to_vec().unwrap(), values(r, n).iter().map(|v| v * 3).collect::<Vec<_>>());
        }

        // A ring of sends and receives: rank r sends to r + 1.
        let mut got: Vec<_> = devices.iter().map(|d| DeviceBuffer::<i64>::zeroed(d, n).unwrap()).collect();
        let mut g = CollectiveGroup::new();
        for r in 0..3 {
            g.send(&comms[r], &queues[r], &sends[r], ((r + 1) % 3) as u32);
        }
        for (r, b) in got.iter_mut().enumerate() {
            g.recv(&comms[r], &queues[r], b, ((r + 2) % 3) as u32);
        }
        g.submit().unwrap();
        for (r, b) in got.iter().enumerate() {
            assert_eq!(b.to_vec().unwrap(), values((r + 2) % 3, n));
        }
    }
}

#[test]
fn bad_parts_are_refused_and_change_nothing() {
    let rt = runtime(2);
    let ctx = Context::with_runtime(&rt).unwrap();
    let devices: Vec<_> = ctx.devices().unwrap().into_iter().collect();
    let comms = ctx.communicators(&devices).unwrap();
    let queues: Vec<_> = devices.iter().map(|d| d.queue().unwrap()).collect();
    let a = DeviceBuffer::from_slice(&devices[0], &[1i32; 8]).unwrap();
    let mut b = DeviceBuffer::from_slice(&devices[1], &[2i32; 8]).unwrap();
    let mut short = DeviceBuffer::from_slice(&devices[1], &[5i32; 4]).unwrap();

    // One rank of two named: refused, nothing written.
    let mut g = CollectiveGroup::new();
    g.all_reduce_in_place(&comms[1], &queues[1], &mut b, ReduceOp::Sum);
    assert_eq!(code(g.submit().unwrap_err()), ErrorCode::InvalidArgument);
    // Lengths that disagree.
    let mut g = CollectiveGroup::new();
    g.all_reduce(&comms[1], &queues[1], &b, &mut short, ReduceOp::Sum);
    assert_eq!(code(g.submit().unwrap_err()), ErrorCode::InvalidSize);
    // A queue of the other device.
    let mut a2 = DeviceBuffer::from_slice(&devices[0], &[1i32; 8]).unwrap();
    let mut g = CollectiveGroup::new();
    g.all_reduce_in_place(&comms[0], &queues[1], &mut a2, ReduceOp::Sum);
    g.all_reduce_in_place(&comms[1], &queues[1], &mut b, ReduceOp::Sum);
    assert_eq!(code(g.submit().unwrap_err()), ErrorCode::InvalidArgument);
    // A buffer of the other device.
    let mut g = CollectiveGroup::new();
    g.all_reduce(&comms[0], &queues[0], &a, &mut short, ReduceOp::Sum);
    assert_eq!(code(g.submit().unwrap_err()), ErrorCode::InvalidSize, "lengths first");
    // A root that is not a rank.
    let mut g = CollectiveGroup::new();
    g.broadcast(&comms[0], &queues[0], &mut a2, 2);
    g.broadcast(&comms[1], &queues[1], &mut b, 2);
    assert_eq!(code(g.submit().unwrap_err()), ErrorCode::InvalidValue);
    // Ranks that disagree on the operation.
    let mut g = CollectiveGroup::new();
    g.all_reduce_in_place(&comms[0], &queues[0], &mut a2, ReduceOp::Sum);
    g.all_reduce_in_place(&comms[1], &queues[1], &mut b, ReduceOp::Max);
    assert_eq!(code(g.submit().unwrap_err()), ErrorCode::InvalidArgument);
    // A send without its receive.
    let mut g = CollectiveGroup::new();
    g.send(&comms[0], &queues[0], &a, 1);
    assert_eq!(code(g.submit().unwrap_err()), ErrorCode::InvalidArgument);
    assert_eq!(b.to_vec().unwrap(), [2; 8], "nothing was written");
    assert_eq!(short.to_vec().unwrap(), [5; 4]);

    // Raw API: a null buffer, a stale communicator, unknown enumerations, an empty call.
    let r: &ordo::raw::Runtime = &rt;
    let part = ordo::raw::Collective {
        comm: comms[0].raw(),
        queue: queues[0].raw(),
        kind: CollectiveKind::AllReduce,
        dtype: DataType::I32,
        op: RawOp::Sum,
        count: 8,
        peer: 0,
        send: ordo::raw::DevicePtr::NULL,
        recv: a.device_ptr(),
    };
    let solo = [
        part,
        ordo::raw::Collective {
            comm: comms[1].raw(),
            queue: queues[1].raw(),
            send: b.device_ptr(),
            recv: b.device_ptr(),
            ..part
        },
    ];
    assert_eq!(r.collective(&solo).unwrap_err().code, ErrorCode::NullPointer);
    assert_eq!(r.collective(&[]).unwrap_err().code, ErrorCode::InvalidArgument);
    let huge = [ordo::raw::Collective { count: usize::MAX / 2, send: a.device_ptr(), ..part }];
    assert_eq!(r.collective(&huge).unwrap_err().code, ErrorCode::InvalidSize);
    assert_eq!(DataType::try_from(99).unwrap_err().code, ErrorCode::InvalidEnumeration);
    assert_eq!(CollectiveKind::try_from(7).unwrap_err().code, ErrorCode::InvalidEnumeration);
    assert_eq!(RawOp::try_from(5).unwrap_err().code, ErrorCode::InvalidEnumeration);
    // Count 0: nothing happens, handles still checked.
    let zero = [ordo::raw::Collective { count: 0, ..part }];
    assert_eq!(r.collective(&zero).unwrap_err().code, ErrorCode::InvalidArgument, "rank 1 missing");
    let both_zero = [ordo::raw::Collective { count: 0, ..solo[0] }, ordo::raw::Collective { count: 0, ..solo[1] }];
    r.collective(&both_zero).unwrap();
    // Across processes: the host device has no library.
    assert_eq!(code(devices[0].comm_unique_id().unwrap_err()), ErrorCode::Unsupported);
    assert_eq!(code(devices[0].collective_library().unwrap_err()), ErrorCode::Unsupported);
    // A device twice.
    assert_eq!(
        code(ctx.communicators(&[devices[0].clone(), devices[0].clone()]).unwrap_err()),
        ErrorCode::InvalidArgument
    );
    assert_eq!(code(ctx.communicators(&[]).unwrap_err()), ErrorCode::InvalidArgument);

    // Destroyed: stale.
    let raw = comms[0].raw();
    drop(comms);
    assert_eq!(r.comm_info(raw).unwrap_err().code, ErrorCode::InvalidHandle);
    assert_eq!(r.comm_destroy(raw).unwrap_err().code, ErrorCode::InvalidHandle, "double destroy");
}

#[test]
fn communicators_are_released_after_graphs_and_before_queues() {
    let rt = runtime(2);
    let r: &ordo::raw::Runtime = &rt;
    r.init().unwrap();
    let devs = [r.device(r.platform(0).unwrap(), 0).unwrap(), r.device(r.platform(1).unwrap(), 0).unwrap()];
    let mut comms = [ordo::raw::Communicator::NULL; 2];
    r.comm_create_all(&devs, &mut comms).unwrap();
    let _q = r.queue_create(devs[0]).unwrap();
    assert_eq!(r.live_objects().unwrap().communicators, 2);
    let mut steps = Vec::new();
    r.shutdown_observed(&mut |e| steps.push(e.step)).unwrap();
    let report = r.last_teardown_report().unwrap();
    assert_eq!(report.released_of(ObjectKind::Communicator), 2);
    assert!(report.is_clean());
    let first_comm = steps.iter().position(|&s| s == TeardownStep::DestroyCommunicator).unwrap();
    let first_queue = steps.iter().position(|&s| s == TeardownStep::DestroyQueue).unwrap();
    assert!(first_comm < first_queue, "{steps:?}");
    // After the shutdown, and after a re-init: stale.
    assert_eq!(r.comm_info(comms[0]).unwrap_err().code, ErrorCode::Uninitialized);
    r.init().unwrap();
    assert_eq!(r.comm_info(comms[0]).unwrap_err().code, ErrorCode::InvalidHandle);
    r.shutdown().unwrap();
}
