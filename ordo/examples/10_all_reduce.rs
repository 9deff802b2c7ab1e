//! Data-parallel gradient averaging: every rank holds its own "gradients", an all-reduce
//! (average) leaves the mean on every rank, and each checks it.
//!
//! Without arguments, one process over every device of the default runtime that can join one
//! communicator: its GPUs when NCCL is there (one rank each), else the host device (the
//! runtime's reference engine). With `--rank R --world N --id FILE`, one rank per process:
//! rank 0 writes the unique id to FILE, the others read it (waiting for it up to a minute), each
//! on GPU `R % GPUs`. Run it as N processes, e.g. on a two-GPU machine:
//! `10_all_reduce --rank 0 --world 2 --id /tmp/id & 10_all_reduce --rank 1 --world 2 --id /tmp/id`.
//! Set `NCCL_NVLS_ENABLE=0` where NVLink multicast must stay off.
use std::time::{Duration, Instant};

use ordo::{BackendKind, CollectiveGroup, Context, DeviceBuffer, ReduceOp, UniqueId};

const N: usize = 1 << 20;

/// Rank r's gradients: r + 1 in every element (their mean over N ranks is (N + 1) / 2).
fn gradients(rank: u32) -> Vec<f32> {
    vec![rank as f32 + 1.0; N]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let ctx = Context::new()?;
    match (flag("--rank"), flag("--world"), flag("--id")) {
        (Some(rank), Some(world), Some(id)) => one_rank(&ctx, rank.parse()?, world.parse()?, &id),
        (None, None, None) => one_process(&ctx),
        _ => Err("use --rank R --world N --id FILE together, or none of them".into()),
    }
}

/// Every joinable device of this process, one rank each.
fn one_process(ctx: &Context<'static>) -> Result<(), Box<dyn std::error::Error>> {
    let all = ctx.devices()?;
    let gpus: Vec<_> = all.iter().filter(|d| d.kind() == BackendKind::Cuda).cloned().collect();
    let devices = match gpus.first().map(|g| g.collective_library()) {
        Some(Ok(lib)) => {
            println!("{} {} over {} GPU(s)", lib.name, lib.version, gpus.len());
            gpus
        }
        other => {
            if let Some(Err(e)) = other {
                println!("GPUs without collectives ({e}): the host device's reference engine instead");
            }
            all.iter().filter(|d| d.kind() == BackendKind::Host).cloned().collect()
        }
    };
    let comms = ctx.communicators(&devices)?;
    let queues = devices.iter().map(|d| d.queue()).collect::<ordo::Result<Vec<_>>>()?;
    let mut grads = devices
        .iter()
        .enumerate()
        .map(|(r, d)| DeviceBuffer::from_slice(d, &gradients(r as u32)))
        .collect::<ordo::Result<Vec<_>>>()?;
    let mut group = CollectiveGroup::new();
    for ((comm, queue), grad) in comms.iter().zip(&queues).zip(grads.iter_mut()) {
        group.all_reduce_in_place(comm, queue, grad, ReduceOp::Avg);
    }
    group.submit()?;
    let mean = (devices.len() as f32 + 1.0) / 2.0;
    for ((queue, grad), dev) in queues.iter().zip(&grads).zip(&devices) {
        queue.synchronize()?;
        assert!(grad.to_vec()?.iter().all(|&v| v == mean), "the mean on every rank");
        println!("{} {}: {N} gradients averaged to {mean}", dev.kind().name(), dev.ordinal());
    }
    Ok(())
}

/// One rank of `world`, one per process, joined through the id in `path`.
fn one_rank(ctx: &Context<'static>, rank: u32, world: u32, path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let gpus: Vec<_> = ctx.devices()?.into_iter().filter(|d| d.kind() == BackendKind::Cuda).collect();
    let Some(gpu) = gpus.get(rank as usize % gpus.len().max(1)).cloned() else {
        return Err("one rank per process needs a GPU with NCCL (the host device's engine joins one process)".into());
    };
    let id = if rank == 0 {
        let id = gpu.comm_unique_id()?;
        let tmp = format!("{path}.tmp{}", std::process::id());
        std::fs::write(&tmp, id.0)?;
        std::fs::rename(&tmp, path)?; // whole or absent for the readers
        id
    } else {
        let t = Instant::now();
        loop {
            match std::fs::read(path) {
                Ok(bytes) if bytes.len() == 128 => break UniqueId(bytes.try_into().unwrap_or([0; 128])),
                _ if t.elapsed() > Duration::from_secs(60) => return Err(format!("no id in {path} after 60 s").into()),
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    };
    let comm = gpu.communicator(&id, rank, world, Duration::from_secs(60))?;
    let queue = gpu.queue()?;
    let mut grad = DeviceBuffer::from_slice(&gpu, &gradients(rank))?;
    let mut group = CollectiveGroup::new();
    group.all_reduce_in_place(&comm, &queue, &mut grad, ReduceOp::Avg);
    group.submit()?;
    queue.synchronize()?;
    let mean = (world as f32 + 1.0) / 2.0;
    assert!(grad.to_vec()?.iter().all(|&v| v == mean), "the mean on every rank");
    println!("rank {rank} of {world} (cuda {}): {N} gradients averaged to {mean}", gpu.ordinal());
    if rank == 0 {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}
