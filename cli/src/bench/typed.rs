//! The typed launches' rows of `ordo bench`: `LaunchBuilder` and `Queue::launch` of a
//! `TypedFunction`, each against `Runtime::launch` with the same four arguments, on the no-op
//! backend.

use super::*;

/// The typed launch (`LaunchBuilder`: four arguments checked against the kernel's layout, then
/// `Runtime::launch`) against `Runtime::launch` with the same four arguments built by hand, on
/// the no-op backend. ABBA-interleaved rounds; the row is the median per-round difference.
pub(super) fn typed_launch_overhead(rows: &mut Vec<Row>) {
    let ctx = ordo::Context::with_runtime(&NOOP_RUNTIME).expect("noop init");
    let rt = ctx.runtime();
    let dev = ctx.device(0).expect("noop devices");
    let queue = dev.queue().unwrap();
    let module = ordo::Module::load(&dev, b"noop").unwrap();
    let function = module.function("k").unwrap();
    let (a, b) =
        (ordo::DeviceBuffer::<f32>::zeroed(&dev, 64).unwrap(), ordo::DeviceBuffer::<f32>::zeroed(&dev, 64).unwrap());
    let mut c = ordo::DeviceBuffer::<f32>::zeroed(&dev, 64).unwrap();
    let n = 64u32;
    let dims = LaunchDims::linear(1, 64);
    let (pa, pb, pc) = (a.device_ptr().0, b.device_ptr().0, c.device_ptr().0);
    let (raw_queue, raw_kernel) = (queue.raw(), function.raw());
    const N: u64 = 1_000_000;
    let raw = || {
        ns_per(3, N, || {
            let params = [
                (&pa as *const u64).cast_mut().cast(),
                (&pb as *const u64).cast_mut().cast(),
                (&pc as *const u64).cast_mut().cast(),
                (&n as *const u32).cast_mut().cast(),
            ];
            let args = KernelArgs::new(&params, &NOOP_KERNEL_PARAMS).unwrap();
            // SAFETY: the no-op backend reads no argument.
            unsafe { rt.launch(black_box(raw_queue), black_box(raw_kernel), &dims, &args) }.unwrap();
        })
    };
    let builder = |c: &mut ordo::DeviceBuffer<'_, f32>| {
        ns_per(3, N, || {
            // SAFETY: the no-op backend reads no argument.
            unsafe {
                black_box(&queue)
                    .launch_builder(black_box(&function))
                    .arg(&a)
                    .arg(&b)
                    .arg(&c.as_mut_slice())
                    .arg(&n)
                    .launch(dims)
            }
            .unwrap();
        })
    };
    type VectorAdd = (ordo::In<'static, f32>, ordo::In<'static, f32>, ordo::Out<'static, f32>, u32);
    let typed_function = module.typed_function::<VectorAdd>("k").unwrap();
    let typed = |c: &mut ordo::DeviceBuffer<'_, f32>| {
        ns_per(3, N, || {
            // SAFETY: the no-op backend reads no argument.
            unsafe { black_box(&queue).launch(black_box(&typed_function), dims, (&a, &b, &mut *c, n)) }.unwrap();
        })
    };
    type Side<'a> = &'a dyn Fn(&mut ordo::DeviceBuffer<'_, f32>) -> f64;
    let rows_of: [(&'static str, Side<'_>); 2] = [
        ("typed launch overhead (4 arguments checked) over Runtime::launch", &builder),
        ("typed launch overhead (Queue::launch of a TypedFunction, 4 arguments) over Runtime::launch", &typed),
    ];
    for (name, typed) in rows_of {
        let (mut base, mut diff, mut ratio) = (vec![], vec![], vec![]);
        for round in 0..12 {
            // ABBA: raw first in even rounds, typed first in odd ones.
            let (r, t) = if round % 2 == 0 {
                let r = raw();
                (r, typed(&mut c))
            } else {
                let t = typed(&mut c);
                (raw(), t)
            };
            base.push(r);
            diff.push(t - r);
            ratio.push((t - r) / r);
        }
        let (base_median, _, _) = quartiles(base);
        let (median, _, _) = quartiles(diff);
        let (_, q1, q3) = quartiles(ratio);
        rows.push(Row {
            name,
            unit: "ns/call",
            ordo: median,
            baseline: Some(("Runtime::launch with the same arguments (ns/call)", base_median)),
            quartiles: Some((q1, q3)),
            target: "<= 3 ns over Runtime::launch",
        });
    }
    // Everything is freed on drop, the context last (the runtime's final shutdown).
}
