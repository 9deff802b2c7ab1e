//! The queue-ordered memory rows of `ordo bench`: the allocate + free pair on the no-op
//! backend with a pool, with the cache off and on.

use super::*;

/// Queue-ordered memory of a device with a pool (`Backend::ordered_concurrent`, as CUDA's): the
/// allocate + free pair runs under shared access, against the backend's two calls made directly;
/// with the cache off (every pair reaches the backend: ordo's own part of the driver-backed
/// pair), and on (the pair served by the queue's cached block, no backend call).
pub(super) fn ordered_pair(rows: &mut Vec<Row>, cached: bool) {
    let rt = &NOOP_RUNTIME;
    rt.set_cache_bytes(if cached { ordo_core::DEFAULT_CACHE_BYTES } else { 0 });
    rt.init().unwrap();
    let device = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let q = rt.queue_create(device).unwrap();
    let raw = rt.queue_native(q).unwrap();
    let backend: &dyn Backend = black_box(&NOOP);
    const N: u64 = 200_000;
    let direct = || {
        ns_per(1, N, || {
            // SAFETY: the no-op backend takes any value.
            unsafe {
                let a = backend.mem_alloc_on(0, raw, 1 << 20).unwrap();
                backend.mem_free_on(0, raw, black_box(a), 1 << 20).unwrap();
            }
        })
    };
    let ours = || {
        ns_per(1, N, || {
            let (_, a) = rt.mem_alloc_on(q, 1 << 20).unwrap();
            rt.mem_free_on(q, black_box(a)).unwrap();
        })
    };
    let (om, bm, q1, q3) = abba_medians(direct, ours);
    let (name, target) = if cached {
        (
            "queue-ordered allocate + free pair served by the queue's cache (no backend call)",
            "(informational: GPU: <= 0.25x the raw cuMemAllocAsync + cuMemFreeAsync pair)",
        )
    } else {
        (
            "queue-ordered allocate + free pair, cache off (a device with a pool: shared calls)",
            "<= 60 ns over the direct calls (ordo's part of the driver-backed pair)",
        )
    };
    rows.push(Row {
        name,
        unit: "ns/pair",
        ordo: om,
        baseline: Some(("direct backend calls (ns/pair)", bm)),
        quartiles: Some((q1, q3)),
        target,
    });
    rt.queue_destroy(q).unwrap();
    rt.shutdown().unwrap();
    rt.set_cache_bytes(ordo_core::DEFAULT_CACHE_BYTES);
}
