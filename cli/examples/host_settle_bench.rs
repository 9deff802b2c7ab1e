//! What a call that waits for the host device's queues costs while they drain: 30,000 host
//! launches are queued, then either the queue is synchronised (A: the launches' own time) or an
//! unrelated graph is destroyed (B: `graph_destroy` waits for every host queue first, as a
//! `mem_free` does). Before this round, a host-queue worker waiting for the host device's lock
//! spun, and B took 2.2 ms a launch on two cores against 2.5 µs for A.
//!
//! ABBA-interleaved rounds in one process; prints each side's median [p25, p75] per launch and
//! B / A. `cargo run --release -p ordo-cli --example host_settle_bench -- [LAUNCHES] [ROUNDS]`.

use std::time::Instant;

use ordo::host::HostProgram;
use ordo::{BackendKind, Context, DeviceBuffer, LaunchDims, Module, Out};

ordo::host_kernel! {
    /// y[0] += 1 (one thread).
    pub const BUMP = fn bump(t, y: Out<u32>) {
        if t.global_x() == 0 && let Some(v) = y.get(0) {
            y.set(0, v + 1);
        }
    }
}
static PROGRAM: HostProgram = HostProgram { name: "bench.settle", kernels: &[BUMP.kernel] };

fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.25), at(0.75))
}

fn main() -> ordo::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let launches: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(30_000);
    let rounds: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(6);
    let ctx = Context::new()?;
    let host = ctx.devices()?.into_iter().find(|d| d.kind() == BackendKind::Host).ok_or(ordo::Error::NoDevice)?;
    let bump = Module::load_host(&host, &PROGRAM)?.kernel(&BUMP)?;
    let queue = host.queue()?;
    let mut y = DeviceBuffer::<u32>::zeroed(&host, 1)?;
    let dims = LaunchDims::linear(1, 1);
    // One side: queue `launches` launches, then wait for them by `finish`; ns per launch.
    let mut side = |finish: &mut dyn FnMut() -> ordo::Result<()>| -> ordo::Result<f64> {
        let start = Instant::now();
        for _ in 0..launches {
            // SAFETY: `bump` writes one element of y (one long), alive and unshared until the
            // queue has run it (waited for below).
            unsafe { queue.launch(&bump, dims, (&mut y,)) }?;
        }
        finish()?;
        Ok(start.elapsed().as_nanos() as f64 / launches as f64)
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for first in [round % 2 == 0, round % 2 != 0] {
            if first {
                a.push(side(&mut || queue.synchronize())?);
            } else {
                let other = host.queue()?;
                let graph = other.capture(|_| Ok(()))?;
                b.push(side(&mut || {
                    drop(graph_of(&graph));
                    Ok(())
                })?);
                drop(graph);
                queue.synchronize()?;
            }
        }
    }
    let (am, a1, a3) = quartiles(a.clone());
    let (bm, b1, b3) = quartiles(b.clone());
    let ratios: Vec<f64> = a.iter().zip(&b).map(|(a, b)| b / a).collect();
    let (rm, r1, r3) = quartiles(ratios);
    println!("{launches} pending host launches, {rounds} ABBA rounds, ns per launch: median [p25, p75]");
    println!("A: synchronise the queue:          {am:10.1} [{a1:.1}, {a3:.1}]");
    println!("B: destroy an unrelated graph:     {bm:10.1} [{b1:.1}, {b3:.1}]");
    println!("B / A: {rm:.3} [{r1:.3}, {r3:.3}] (target: at most 2)");
    Ok(())
}

/// The graph's destroy as a call (`Graph` is destroyed on drop; the raw call is made here so the
/// side times exactly `graph_destroy`, which waits for the host queues).
fn graph_of(graph: &ordo::Graph<'_>) -> ordo::Result<()> {
    Ok(ordo::runtime().graph_destroy(graph.raw())?)
}
