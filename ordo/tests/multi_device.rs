//! Copies and dependencies between devices, without a GPU: a runtime with two host platforms
//! (a device each, queues on worker threads) moves real data between them in every direction and
//! size, concurrently both ways, and orders one device's queue after the other's event; the
//! scripted backend with two devices takes the peer path (two devices of one platform), and two
//! scripted platforms the two-GPU-platform path (staged through page-locked memory), and a host
//! platform with a scripted GPU page-locks large host-device allocations. Bad input gets the errors of
//! every other copy.

use ordo::host::{HostBackend, ProvidedArena, QueuedHost, STD_HOST_HEAP, builtin};
use ordo::raw::{Backend, MemKind};
use ordo::{Context, DeviceBuffer, ErrorCode, OwnedRuntime};
use ordo_testing::ScriptedBackend;

/// A host platform whose device allocates from the heap and has asynchronous queues.
fn host_platform() -> &'static dyn Backend {
    let none: &'static ProvidedArena = Box::leak(Box::new(ProvidedArena::new()));
    let host: &'static HostBackend =
        Box::leak(Box::new(HostBackend::new(none, builtin::PROGRAMS, None).with_heap(STD_HOST_HEAP)));
    Box::leak(Box::new(QueuedHost::new(host)))
}

fn pattern(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(seed)).collect()
}

#[test]
fn every_direction_and_size_between_two_devices() {
    let rt = OwnedRuntime::new(&[host_platform(), host_platform()]);
    let ctx = Context::with_runtime(&rt).unwrap();
    let (a, b) = (ctx.device(0).unwrap(), ctx.device(1).unwrap());
    assert_ne!(a, b);
    for n in [1usize, 3, 1023, 1 << 18] {
        for (from, to) in [(&a, &b), (&b, &a)] {
            let src = DeviceBuffer::from_slice(from, &pattern(n, n as u32)).unwrap();
            let mut dst = DeviceBuffer::<u32>::zeroed(to, n).unwrap();
            dst.copy_from_device(&src).unwrap();
            assert_eq!(dst.to_vec().unwrap(), pattern(n, n as u32), "{n} elements");
            // Asynchronously on either device's queue (the other side's is host memory here).
            for queue in [from.queue().unwrap(), to.queue().unwrap()] {
                dst.fill(0).unwrap();
                let (s, mut d) = (src.as_slice(), dst.as_mut_slice());
                queue.scope(|sc| sc.copy_between(&s, &mut d)).unwrap();
                assert_eq!(dst.to_vec().unwrap(), pattern(n, n as u32), "{n} elements on a queue");
            }
            // A part of one into the middle of the other.
            if n > 4 {
                dst.fill(9).unwrap();
                dst.slice_mut(1..3).unwrap().copy_from_device(&src.slice(n - 2..).unwrap()).unwrap();
                let got = dst.to_vec().unwrap();
                assert_eq!((got[0], &got[1..3], got[3]), (9, &pattern(n, n as u32)[n - 2..], 9));
            }
        }
    }
}

#[test]
fn copies_both_ways_at_once() {
    let rt = OwnedRuntime::new(&[host_platform(), host_platform()]);
    let ctx = Context::with_runtime(&rt).unwrap();
    let (a, b) = (ctx.device(0).unwrap(), ctx.device(1).unwrap());
    let n = 1 << 16;
    let (xa, xb) =
        (DeviceBuffer::from_slice(&a, &pattern(n, 1)).unwrap(), DeviceBuffer::from_slice(&b, &pattern(n, 2)).unwrap());
    std::thread::scope(|s| {
        for (src, dst_dev, seed) in [(&xa, &b, 1), (&xb, &a, 2)] {
            s.spawn(move || {
                let mut dst = DeviceBuffer::<u32>::zeroed(dst_dev, n).unwrap();
                for _ in 0..20 {
                    dst.fill(0).unwrap();
                    dst.copy_from_device(src).unwrap();
                    assert_eq!(dst.to_vec().unwrap(), pattern(n, seed));
                }
            });
        }
    });
}

/// One device's event orders another device's queue (another platform's: the wait is on the
/// host, documented), and the work gated by it sees the data the first device wrote.
#[test]
fn an_event_of_one_device_gates_a_copy_on_another() {
    let rt = OwnedRuntime::new(&[host_platform(), host_platform()]);
    let ctx = Context::with_runtime(&rt).unwrap();
    let (a, b) = (ctx.device(0).unwrap(), ctx.device(1).unwrap());
    let n = 1 << 16;
    let mut on_a = DeviceBuffer::<u32>::zeroed(&a, n).unwrap();
    let mut on_b = DeviceBuffer::<u32>::zeroed(&b, n).unwrap();
    let (qa, qb, written) = (a.queue().unwrap(), b.queue().unwrap(), a.event().unwrap());
    let input = pattern(n, 5);
    qa.scope(|s| {
        s.copy_to_device(&input, &mut on_a.as_mut_slice())?;
        qa.record(&written)?;
        qb.wait(&written)?; // b's later work after a's copy
        let (from, mut to) = (on_a.as_slice(), on_b.as_mut_slice());
        qb.scope(|s2| s2.copy_between(&from, &mut to))
    })
    .unwrap();
    assert_eq!(on_b.to_vec().unwrap(), input);
}

#[test]
fn bad_copies_between_devices_get_the_errors_of_every_copy() {
    let rt = OwnedRuntime::new(&[host_platform(), host_platform()]);
    let ctx = Context::with_runtime(&rt).unwrap();
    let (a, b) = (ctx.device(0).unwrap(), ctx.device(1).unwrap());
    let (x, y) =
        (rt.mem_alloc(a.raw(), MemKind::Device, 256).unwrap(), rt.mem_alloc(b.raw(), MemKind::Device, 256).unwrap());
    let code = |r: Result<(), ordo::raw::Error>| r.unwrap_err().code;
    assert!(rt.copy_device(y, x, 0, None).is_ok(), "a zero-byte copy does nothing");
    // As a copy within one device answers the same mistakes.
    let x2 = rt.mem_alloc(a.raw(), MemKind::Device, 256).unwrap();
    let same = |src: u64, size| code(rt.copy_device(x2, ordo::raw::DevicePtr(src), size, None));
    assert_eq!(code(rt.copy_device(y, x, 257, None)), same(x.0, 257), "a range past the allocation");
    let gone = rt.mem_alloc(a.raw(), MemKind::Device, 256).unwrap();
    rt.mem_free(gone).unwrap();
    assert_eq!(code(rt.copy_device(y, gone, 16, None)), same(gone.0, 16), "a freed allocation");
    rt.mem_free(x2).unwrap();
    // A queue of neither device: a third platform's.
    let rt3 = OwnedRuntime::new(&[host_platform(), host_platform(), host_platform()]);
    rt3.init().unwrap();
    let devs: Vec<_> = (0..3).map(|p| rt3.device(rt3.platform(p).unwrap(), 0).unwrap()).collect();
    let (p, q) =
        (rt3.mem_alloc(devs[0], MemKind::Device, 64).unwrap(), rt3.mem_alloc(devs[1], MemKind::Device, 64).unwrap());
    let third = rt3.queue_create(devs[2]).unwrap();
    assert_eq!(code(rt3.copy_device(q, p, 64, Some(third))), ErrorCode::InvalidArgument);
    rt3.shutdown().unwrap();
    rt.mem_free(x).unwrap();
    rt.mem_free(y).unwrap();
}

/// Two devices of one platform take the backend's peer copy (the scripted backend counts it as
/// a copy on the queue it was given); the peer matrix says what the backend tells.
#[test]
fn two_devices_of_one_platform_take_the_peer_path() {
    let scripted: &'static ScriptedBackend = Box::leak(Box::new(ScriptedBackend::new(2)));
    let rt = OwnedRuntime::new(&[scripted]);
    rt.init().unwrap();
    let p = rt.platform(0).unwrap();
    let (d0, d1) = (rt.device(p, 0).unwrap(), rt.device(p, 1).unwrap());
    let (x, y) = (rt.mem_alloc(d0, MemKind::Device, 64).unwrap(), rt.mem_alloc(d1, MemKind::Device, 64).unwrap());
    let q1 = rt.queue_create(d1).unwrap();
    let before = scripted.calls();
    rt.copy_device(y, x, 64, Some(q1)).unwrap();
    rt.copy_device(x, y, 64, None).unwrap();
    assert_eq!(scripted.calls() - before, 2, "one backend call each");
    assert!(rt.peer_access(d0, d1).unwrap().direct);
    assert!(rt.peer_access(d0, d0).unwrap().same_device);
    rt.shutdown().unwrap();
}

/// Two GPU platforms (neither's memory is host memory): the copy is staged through page-locked
/// memory of the source's platform, chunk by chunk (allocated, and per chunk copied to it and on
/// from it, then freed), done before the call returns; a queue of either device orders it.
#[test]
fn two_gpu_platforms_stage_through_page_locked_host_memory() {
    let (s1, s2): (&'static ScriptedBackend, &'static ScriptedBackend) = (
        Box::leak(Box::new(ScriptedBackend::new(1))),
        Box::leak(Box::new(ScriptedBackend::with_address_base(1, 1 << 44))),
    );
    let rt = OwnedRuntime::new(&[s1, s2]);
    rt.init().unwrap();
    let (d0, d1) = (rt.device(rt.platform(0).unwrap(), 0).unwrap(), rt.device(rt.platform(1).unwrap(), 0).unwrap());
    let size = 2 * ordo::raw::STAGE_CHUNK_BYTES + 1;
    let (x, y) = (rt.mem_alloc(d0, MemKind::Device, size).unwrap(), rt.mem_alloc(d1, MemKind::Device, size).unwrap());
    let q1 = rt.queue_create(d1).unwrap();
    let calls = || (s1.calls(), s2.calls());
    let live = (s1.live_total(), s2.live_total());
    let before = calls();
    rt.copy_device(y, x, size, None).unwrap();
    assert_eq!(calls(), (before.0 + 5, before.1 + 3), "three chunks: alloc, 3 copies out, free; 3 copies in");
    let before = calls();
    rt.copy_device(x, y, 64, Some(q1)).unwrap();
    assert_eq!(calls(), (before.0 + 1, before.1 + 4), "the queue synchronised, one chunk staged by platform 1");
    assert_eq!((s1.live_total(), s2.live_total()), live, "the staging memory is gone");
    assert!(!rt.peer_access(d0, d1).unwrap().direct);
    rt.shutdown().unwrap();
    assert_eq!((s1.live_total(), s2.live_total()), (0, 0));
}

/// A GPU and the host device: a large copy page-locks the host device's allocation for the GPU's
/// platform once (later copies reuse it; small copies never page-lock) and runs on the GPU's
/// queue without waiting for it; freeing the host allocation first waits for that platform's
/// queues and unregisters it; the teardown unregisters what is still page-locked, before any
/// memory or device is released.
#[test]
fn large_copies_with_the_host_device_page_lock_its_memory_until_it_is_freed() {
    let gpu: &'static ScriptedBackend = Box::leak(Box::new(ScriptedBackend::with_address_base(1, 1 << 44)));
    let rt = OwnedRuntime::new(&[host_platform(), gpu]);
    rt.init().unwrap();
    let (h, g) = (rt.device(rt.platform(0).unwrap(), 0).unwrap(), rt.device(rt.platform(1).unwrap(), 0).unwrap());
    let big = ordo::raw::PIN_MIN_BYTES;
    let (x, y) = (rt.mem_alloc(h, MemKind::Device, big).unwrap(), rt.mem_alloc(g, MemKind::Device, big).unwrap());
    let q = rt.queue_create(g).unwrap();
    let live = || gpu.live_total();
    let (allocations, calls) = (live(), gpu.calls());
    // Small: no registration; on the queue, the copy and then the queue's synchronisation.
    rt.copy_device(y, x, big - 1, Some(q)).unwrap();
    assert_eq!((live(), gpu.calls()), (allocations, calls + 2));
    // Large: registered once (a live object of the GPU's backend), the copy alone on the queue.
    rt.copy_device(y, x, big, Some(q)).unwrap();
    assert_eq!((live(), gpu.calls()), (allocations + 1, calls + 4));
    rt.copy_device(x, y, big, Some(q)).unwrap();
    rt.copy_device(x, y, big, None).unwrap();
    assert_eq!((live(), gpu.calls()), (allocations + 1, calls + 6), "registered once");
    // Freeing the host allocation: the GPU's queue synchronised, the range unregistered.
    rt.mem_free(x).unwrap();
    assert_eq!((live(), gpu.calls()), (allocations, calls + 8));
    assert_eq!(gpu.release_log().last().unwrap().1, x.0, "the host range was unregistered");
    // Page-locked again by a new allocation, and left for the teardown.
    let x = rt.mem_alloc(h, MemKind::Device, big).unwrap();
    rt.copy_device(y, x, big, Some(q)).unwrap();
    assert_eq!(live(), allocations + 1);
    let ordo::raw::Shutdown::TornDown(summary) = rt.shutdown().unwrap() else { panic!("not the last reference") };
    assert!(summary.is_clean(), "{summary:?}");
    assert_eq!((gpu.live_total(), gpu.double_releases()), (0, 0));
}

/// The final shutdown with copies between devices still queued on both devices' queues: it
/// waits for them and releases everything in the documented order, with nothing left.
#[test]
fn teardown_with_copies_between_devices_in_flight() {
    let rt = OwnedRuntime::new(&[host_platform(), host_platform()]);
    rt.init().unwrap();
    let (d0, d1) = (rt.device(rt.platform(0).unwrap(), 0).unwrap(), rt.device(rt.platform(1).unwrap(), 0).unwrap());
    let size = 4 << 20;
    let (x, y) = (rt.mem_alloc(d0, MemKind::Device, size).unwrap(), rt.mem_alloc(d1, MemKind::Device, size).unwrap());
    let (q0, q1) = (rt.queue_create(d0).unwrap(), rt.queue_create(d1).unwrap());
    for _ in 0..16 {
        rt.copy_device(y, x, size, Some(q0)).unwrap();
        rt.copy_device(x, y, size, Some(q1)).unwrap();
    }
    let ordo::raw::Shutdown::TornDown(summary) = rt.shutdown().unwrap() else { panic!("not the last reference") };
    assert!(summary.is_clean(), "{summary:?}");
    assert_eq!(rt.state(), ordo::State::Uninit);
}
