//! Collectives on CUDA devices through NCCL: every operation on one GPU (a communicator of one
//! rank, 1 element to 1 GiB), captured into a graph and replayed, a rank from a unique id, a
//! peer that never arrives (a timeout, not a hang), a communicator left to the final shutdown
//! (released in its step, cleanly), and on two GPUs every operation across both. NCCL must be
//! present where `ORDO_REQUIRE_GPU=1` (the GPU pass).

use std::time::{Duration, Instant};

use ordo::raw::ObjectKind;
use ordo::{CollectiveGroup, Context, Device, DeviceBuffer, ErrorCode, ReduceOp};

use super::{cuda, two_cuda};

/// Whether NCCL is there (printed either way; required by `ORDO_REQUIRE_GPU=1`).
fn nccl(gpu: &Device<'_>) -> bool {
    match gpu.collective_library() {
        Ok(lib) => {
            println!("{} {}", lib.name, lib.version);
            true
        }
        Err(e) => {
            assert!(std::env::var("ORDO_REQUIRE_GPU").as_deref() != Ok("1"), "ORDO_REQUIRE_GPU=1 but {e}");
            println!("skipped: {e}");
            false
        }
    }
}

fn code(e: ordo::Error) -> ErrorCode {
    match e {
        ordo::Error::Runtime(e) => e.code,
        other => panic!("not a runtime error: {other:?}"),
    }
}

#[test]
fn every_collective_on_one_gpu_from_one_element_to_a_gibibyte() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    if !nccl(&gpu) {
        return;
    }
    let comms = ctx.communicators(std::slice::from_ref(&gpu)).unwrap();
    let (comm, queue) = (&comms[0], gpu.queue().unwrap());
    for n in [1usize, 1000, 1 << 20, 1 << 28] {
        let values: Vec<f32> = (0..n).map(|i| (i % 1021) as f32).collect();
        let send = DeviceBuffer::from_slice(&gpu, &values).unwrap();
        let mut recv = DeviceBuffer::<f32>::zeroed(&gpu, n).unwrap();
        comm.all_reduce(&queue, &send, &mut recv, ReduceOp::Sum).unwrap();
        queue.synchronize().unwrap();
        assert!(recv.to_vec().unwrap() == values, "all-reduce of {n} elements");
        if n > 1 << 20 {
            continue;
        }
        // The others, one rank: each is a copy (reduce-scatter and all-gather of one block).
        for step in 0..5 {
            recv.fill(0.0).unwrap();
            let mut g = CollectiveGroup::new();
            match step {
                0 => g.reduce(comm, &queue, &send, &mut recv, ReduceOp::Max, 0),
                1 => g.all_gather(comm, &queue, &send, &mut recv),
                2 => g.reduce_scatter(comm, &queue, &send, &mut recv, ReduceOp::Min),
                3 => g.send(comm, &queue, &send, 0).recv(comm, &queue, &mut recv, 0),
                _ => {
                    recv.copy_from_device(&send).unwrap();
                    g.broadcast(comm, &queue, &mut recv, 0)
                }
            };
            g.submit().unwrap();
            queue.synchronize().unwrap();
            assert!(recv.to_vec().unwrap() == values, "step {step}, {n} elements");
        }
    }
    // The checks come before NCCL: a root that is not a rank, lengths that disagree.
    let a = DeviceBuffer::from_slice(&gpu, &[1i32; 8]).unwrap();
    let mut b = DeviceBuffer::<i32>::zeroed(&gpu, 4).unwrap();
    assert_eq!(code(comm.all_reduce(&queue, &a, &mut b, ReduceOp::Sum).unwrap_err()), ErrorCode::InvalidSize);
    let mut g = CollectiveGroup::new();
    g.broadcast(comm, &queue, &mut b, 1);
    assert_eq!(code(g.submit().unwrap_err()), ErrorCode::InvalidValue);
    // A host buffer on a GPU communicator: memory of another device.
    let host = ctx.devices().unwrap().into_iter().find(|d| d.kind() == ordo::BackendKind::Host).unwrap();
    let h = DeviceBuffer::from_slice(&host, &[1i32; 8]).unwrap();
    let mut c = DeviceBuffer::<i32>::zeroed(&gpu, 8).unwrap();
    assert_eq!(code(comm.all_reduce(&queue, &h, &mut c, ReduceOp::Sum).unwrap_err()), ErrorCode::InvalidArgument);
    // A GPU and the host device cannot share a communicator.
    assert_eq!(code(ctx.communicators(&[gpu.clone(), host]).unwrap_err()), ErrorCode::InvalidArgument);
}

/// A collective captured into a graph runs at each launch, on the buffers' contents then.
#[test]
fn a_collective_captured_into_a_graph_replays() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    if !nccl(&gpu) {
        return;
    }
    let comms = ctx.communicators(std::slice::from_ref(&gpu)).unwrap();
    let queue = gpu.queue().unwrap();
    let mut send = DeviceBuffer::from_slice(&gpu, &[1u64; 1024]).unwrap();
    let mut recv = DeviceBuffer::<u64>::zeroed(&gpu, 1024).unwrap();
    let graph = queue.capture(|q| comms[0].all_reduce(q, &send, &mut recv, ReduceOp::Sum)).unwrap();
    queue.synchronize().unwrap();
    assert_eq!(recv.to_vec().unwrap(), [0; 1024], "nothing ran during the capture");
    for v in [7u64, 9] {
        send.fill(v).unwrap();
        // SAFETY: the graph's collective reads `send` and writes `recv`, both alive and used by
        // nothing else until the queue is synchronised.
        unsafe { graph.launch(&queue).unwrap() };
        queue.synchronize().unwrap();
        assert_eq!(recv.to_vec().unwrap(), [v; 1024]);
    }
}

/// A rank from a unique id (one of one), and one whose peer never arrives: `Timeout` within
/// the bound, nothing left behind.
#[test]
fn a_rank_from_a_unique_id_and_a_peer_that_never_arrives() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    if !nccl(&gpu) {
        return;
    }
    let id = gpu.comm_unique_id().unwrap();
    let comm = gpu.communicator(&id, 0, 1, Duration::from_secs(30)).unwrap();
    let queue = gpu.queue().unwrap();
    let send = DeviceBuffer::from_slice(&gpu, &[3.5f64; 64]).unwrap();
    let mut recv = DeviceBuffer::<f64>::zeroed(&gpu, 64).unwrap();
    comm.all_reduce(&queue, &send, &mut recv, ReduceOp::Avg).unwrap();
    queue.synchronize().unwrap();
    assert_eq!(recv.to_vec().unwrap(), [3.5; 64]);
    drop(comm);

    let before = ctx.runtime().live_objects().unwrap().communicators;
    let id = gpu.comm_unique_id().unwrap();
    let t = Instant::now();
    let e = gpu.communicator(&id, 0, 2, Duration::from_millis(1500)).unwrap_err();
    let waited = t.elapsed();
    assert_eq!(code(e), ErrorCode::Timeout);
    assert!(waited >= Duration::from_millis(1400) && waited < Duration::from_secs(20), "{waited:?}");
    assert_eq!(ctx.runtime().live_objects().unwrap().communicators, before);
    // Bad input: a rank past the size, a zero timeout.
    assert_eq!(code(gpu.communicator(&id, 2, 2, Duration::from_secs(1)).unwrap_err()), ErrorCode::InvalidValue);
    assert_eq!(code(gpu.communicator(&id, 0, 1, Duration::ZERO).unwrap_err()), ErrorCode::InvalidValue);
}

/// A communicator the program never destroyed is finalized and destroyed by the final
/// shutdown, in its step, cleanly.
#[test]
fn the_final_shutdown_destroys_a_live_communicator() {
    let _one = crate::one_at_a_time();
    let rt = ordo::runtime();
    {
        let ctx = Context::new().unwrap();
        let Some(gpu) = cuda(&ctx) else { return };
        if !nccl(&gpu) {
            return;
        }
        let mut raw = [ordo::raw::Communicator::NULL];
        rt.comm_create_all(&[gpu.raw()], &mut raw).unwrap();
        assert_ne!(rt.comm_native(raw[0]).unwrap(), 0);
    }
    if rt.is_ready() {
        println!("skipped: another test holds the default runtime");
        return;
    }
    let report = rt.last_teardown_report().unwrap();
    assert_eq!(report.released_of(ObjectKind::Communicator), 1, "{report}");
    assert!(report.is_clean(), "{report}");
}

/// Two GPUs of this process: every operation across both, checked.
#[test]
fn every_collective_across_two_gpus() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some((g0, g1)) = two_cuda(&ctx) else { return };
    if !nccl(&g0) {
        return;
    }
    let gpus = [g0, g1];
    let comms = ctx.communicators(&gpus).unwrap();
    let queues: Vec<_> = gpus.iter().map(|g| g.queue().unwrap()).collect();
    for n in [1usize, 4099, 1 << 28] {
        let sends: Vec<_> = gpus
            .iter()
            .enumerate()
            .map(|(r, g)| DeviceBuffer::from_slice(g, &vec![r as f32 + 1.0; n]).unwrap())
            .collect();
        let mut recvs: Vec<_> = gpus.iter().map(|g| DeviceBuffer::<f32>::zeroed(g, n).unwrap()).collect();
        let mut g = CollectiveGroup::new();
        for (((c, q), s), r) in comms.iter().zip(&queues).zip(&sends).zip(recvs.iter_mut()) {
            g.all_reduce(c, q, s, r, ReduceOp::Sum);
        }
        g.submit().unwrap();
        for (q, r) in queues.iter().zip(&recvs) {
            q.synchronize().unwrap();
            assert!(r.to_vec().unwrap().iter().all(|&v| v == 3.0), "all-reduce of {n}");
        }
        let mut gathered: Vec<_> = gpus.iter().map(|g| DeviceBuffer::<f32>::zeroed(g, 2 * n).unwrap()).collect();
        let mut g = CollectiveGroup::new();
        for (((c, q), s), r) in comms.iter().zip(&queues).zip(&sends).zip(gathered.iter_mut()) {
            g.all_gather(c, q, s, r);
        }
        g.submit().unwrap();
        for (q, r) in queues.iter().zip(&gathered) {
            q.synchronize().unwrap();
            let v = r.to_vec().unwrap();
            assert!(v[..n].iter().all(|&x| x == 1.0) && v[n..].iter().all(|&x| x == 2.0), "all-gather of {n}");
        }
    }
}
