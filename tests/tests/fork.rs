//! `fork` while other threads are inside ordo calls: the child starts with a consistent
//! lifecycle (`Uninit`, no call in flight, the parent's handles stale) and can init, work and
//! shut down. Before `Runtime::handle_fork`, 8–12 of 20 such children hung in their shutdown.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use ordo_core::host::{HostArena, HostBackend, HostProgram, HostProgramRegistry, builtin};
use ordo_core::{Backend, ErrorCode, MemKind, State};

static ARENA: HostArena<{ 1 << 20 }> = HostArena::new();
static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
static BACKENDS: [&dyn Backend; 1] = [&HOST];
ordo_core::static_runtime!(static RT = &BACKENDS);
static STOP: AtomicBool = AtomicBool::new(false);

/// The forked-children helper ordo-ffi's tests use.
#[path = "../../ffi/tests/common/fork.rs"]
mod forked;

/// What a child checks; its exit status says which check failed (0: all passed).
fn child(old_queue: ordo_core::Queue) -> i32 {
    if RT.state() != State::Uninit {
        return 10;
    }
    if RT.init().is_err() {
        return 11;
    }
    if RT.queue_synchronize(old_queue).map_err(|e| e.code) != Err(ErrorCode::InvalidHandle) {
        return 12; // the parent's handle is stale here
    }
    let Ok(d) = RT.device(RT.platform(0).unwrap(), 0) else { return 13 };
    let Ok(m) = RT.mem_alloc(d, MemKind::Device, 256) else { return 14 };
    if RT.copy_to_device(m, &[1; 256]).is_err() || RT.queue_create(d).is_err() {
        return 15;
    }
    match RT.shutdown() {
        Ok(ordo_core::Shutdown::TornDown(s)) if s.is_clean() => 0,
        _ => 16,
    }
}

#[test]
fn a_child_forked_while_other_threads_are_in_calls_starts_consistent() {
    RT.handle_fork().unwrap();
    RT.init().unwrap();
    let d = RT.device(RT.platform(0).unwrap(), 0).unwrap();
    let q = RT.queue_create(d).unwrap();
    let workers: Vec<_> = (0..3)
        .map(|i| {
            thread::spawn(move || {
                let m = RT.mem_alloc(d, MemKind::Device, 4096).unwrap();
                let mut buf = vec![i as u8; 4096];
                while !STOP.load(Ordering::Relaxed) {
                    // Shared calls (copies, synchronisation) and exclusive ones (create/destroy).
                    RT.copy_to_device(m, &buf).unwrap();
                    RT.copy_from_device(&mut buf, m).unwrap();
                    RT.queue_synchronize(q).unwrap();
                    let e = RT.event_create(d).unwrap();
                    RT.event_destroy(e).unwrap();
                }
                RT.mem_free(m).unwrap();
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(20));
    let failures = forked::fork_rounds(20, || child(q));
    STOP.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // The parent is unaffected.
    RT.queue_synchronize(q).unwrap();
    RT.shutdown().unwrap();
}

/// A child forked while other threads register host programs (here: the same ones again, each
/// time under the registry's writer lock) can register its own, without any fork handler: the
/// lock a parent thread held is taken over in the child (before, a spin lock held at the fork
/// stayed held there for ever).
#[test]
fn a_child_forked_during_host_program_registrations_can_register_one() {
    static REGISTRY: HostProgramRegistry = HostProgramRegistry::new();
    static BUSY: [HostProgram; 2] =
        [HostProgram { name: "fork.busy.0", kernels: &[] }, HostProgram { name: "fork.busy.1", kernels: &[] }];
    static CHILD_PROGRAM: HostProgram = HostProgram { name: "fork.child", kernels: &[] };
    static HALT: AtomicBool = AtomicBool::new(false);
    let workers: Vec<_> = BUSY
        .iter()
        .map(|program| {
            thread::spawn(move || {
                while !HALT.load(Ordering::Relaxed) {
                    REGISTRY.register(program).unwrap();
                }
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(20));
    let failures = forked::fork_rounds(40, || match REGISTRY.register(&CHILD_PROGRAM) {
        Err(_) => 1,
        Ok(()) if REGISTRY.find("fork.child").is_none() => 2,
        Ok(()) if BUSY.iter().any(|p| REGISTRY.find(p.name).is_none()) => 3,
        Ok(()) => 0,
    });
    HALT.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(REGISTRY.find("fork.child").is_none(), "the children's registrations stay in the children");
}

/// A child forked while other threads allocate and free queue-ordered memory of a device with
/// memory pools (the scripted backend's: shared calls that change their own table under its
/// lock, which the fork preparation holds across the fork): the child starts with that table
/// consistent and empty, the parent's handles stale, and can use it and shut down clean.
#[test]
fn a_child_forked_while_threads_allocate_in_queue_order_starts_consistent() {
    static HALT: AtomicBool = AtomicBool::new(false);
    let (_, rt) = ordo_tests::scripted_runtime(1);
    rt.handle_fork().unwrap();
    rt.init().unwrap();
    let d = ordo_tests::device(rt, 0).unwrap();
    let q = rt.queue_create(d).unwrap();
    let (kept, _) = rt.mem_alloc_on(q, 64).unwrap();
    let workers: Vec<_> = (0..3)
        .map(|i| {
            thread::spawn(move || {
                while !HALT.load(Ordering::Relaxed) {
                    let (h, p) = rt.mem_alloc_on(q, 64 + i).unwrap();
                    rt.mem_info(p).unwrap();
                    if i % 2 == 0 { rt.mem_free_on(q, p).unwrap() } else { rt.mem_release_on(q, h).unwrap() }
                }
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(20));
    let failures = forked::fork_rounds(20, || {
        if rt.state() != State::Uninit || rt.init().is_err() {
            return 20;
        }
        if rt.allocation_info(kept).map_err(|e| e.code) != Err(ErrorCode::InvalidHandle) {
            return 21; // the parent's handle is stale here
        }
        if rt.live_objects().map(|l| l.allocations) != Ok(0) {
            return 22;
        }
        let Ok(d) = ordo_tests::device(rt, 0) else { return 23 };
        let Ok(q) = rt.queue_create(d) else { return 24 };
        let Ok((_, p)) = rt.mem_alloc_on(q, 128) else { return 25 };
        if rt.mem_free_on(q, p).is_err() || rt.mem_alloc_on(q, 32).is_err() {
            return 26;
        }
        match rt.shutdown() {
            Ok(ordo_core::Shutdown::TornDown(s)) if s.is_clean() => 0,
            _ => 27,
        }
    });
    HALT.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(rt.allocation_info(kept).unwrap().2, MemKind::Ordered, "the parent is unaffected");
    rt.shutdown().unwrap();
}
