//! The timeline's rows of `ordo bench`: what a call costs while a trace is written, against the
//! same call untraced in the same run (ABBA-interleaved rounds; median per-round ratio with its
//! quartiles). A call's span (two clock reads, the event formatted and buffered) is measured on
//! `queue_query` of the no-op runtime; a launch's device-timed span (two backend events recorded,
//! the span resolved when they complete) on 1,000 one-thread host launches and the queue's
//! synchronise. Tracing off costs one relaxed load per call: the "API call overhead" rows.

use super::*;

const LAUNCHES: usize = 1000;
const QUERIES: u64 = 20_000;

fn trace_file() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("ordo-bench-trace-{}.json", std::process::id()))
}

/// Runs `f` with a trace written (started before, stopped after: neither is timed).
fn traced(f: &dyn Fn() -> f64) -> f64 {
    ordo::trace::start(trace_file()).expect("the trace starts");
    let t = f();
    ordo::trace::stop().expect("the trace stops");
    t
}

fn abba(rounds: usize, plain: &dyn Fn() -> f64) -> (f64, f64, f64, f64) {
    let (mut offs, mut ons, mut ratios) = (vec![], vec![], vec![]);
    for round in 0..rounds {
        let (off, on) = if round % 2 == 0 {
            let off = plain();
            (off, traced(plain))
        } else {
            let on = traced(plain);
            (plain(), on)
        };
        offs.push(off);
        ons.push(on);
        ratios.push(on / off);
    }
    let (off, _, _) = quartiles(offs);
    let (on, _, _) = quartiles(ons);
    let (_, q1, q3) = quartiles(ratios);
    (on, off, q1, q3)
}

pub(super) fn tracing_on(rows: &mut Vec<Row>) {
    if ordo::trace::enabled() {
        // ORDO_TRACE traces this run already: there is no untraced side to compare with.
        return;
    }
    let rt = &NOOP_RUNTIME;
    rt.init().expect("noop init");
    let device = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let queue = rt.queue_create(device).unwrap();
    let query = || {
        let t = Instant::now();
        for _ in 0..QUERIES {
            black_box(rt.queue_query(black_box(queue)).unwrap());
        }
        t.elapsed().as_nanos() as f64 / QUERIES as f64
    };
    let (on, off, q1, q3) = abba(10, &query);
    rows.push(Row {
        name: "tracing on: a call's span (queue_query, no-op backend) over the untraced call",
        unit: "ns/call",
        ordo: on,
        baseline: Some(("untraced queue_query (ns/call)", off)),
        quartiles: Some((q1, q3)),
        target: "(informational: the cost of a span)",
    });
    rt.shutdown().unwrap();

    let rt = ordo::runtime();
    rt.init().expect("default runtime init");
    let device = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let queue = rt.queue_create(device).unwrap();
    let image = ordo::builtin_program_image(ordo_core::BackendKind::Host).unwrap();
    let program = rt.program_load(device, image).unwrap();
    let kernel = rt.kernel_get(program, "vector_add_f32").unwrap();
    let cells = rt.mem_alloc(device, MemKind::Device, 3 * 4).unwrap();
    rt.fill(cells, FillValue::U32(0), 3, None).unwrap();
    let (a, c, n) = (cells.0, cells.0 + 8, 1u32);
    let params = [
        (&raw const a).cast_mut().cast(),
        (&raw const a).cast_mut().cast(),
        (&raw const c).cast_mut().cast(),
        (&raw const n).cast_mut().cast(),
    ];
    let args = KernelArgs::new(&params, &[8, 8, 8, 4]).unwrap();
    let dims = LaunchDims::linear(1, 1);
    let launches = || {
        let t = Instant::now();
        for _ in 0..LAUNCHES {
            // SAFETY: vector_add_f32 reads 1 element of `a` and writes 1 of `c`, both in `cells`.
            unsafe { rt.launch(queue, kernel, &dims, &args) }.unwrap();
        }
        rt.queue_synchronize(queue).unwrap();
        t.elapsed().as_nanos() as f64 / LAUNCHES as f64
    };
    let (on, off, q1, q3) = abba(10, &launches);
    rows.push(Row {
        name: "tracing on: a host launch with its device-timed span (launch + synchronise, per launch) over untraced",
        unit: "ns/launch",
        ordo: on,
        baseline: Some(("untraced host launch (ns/launch)", off)),
        quartiles: Some((q1, q3)),
        target: "(informational: the cost of a device span)",
    });
    rt.queue_destroy(queue).unwrap();
    rt.shutdown().unwrap();
    std::fs::remove_file(trace_file()).ok();
}
