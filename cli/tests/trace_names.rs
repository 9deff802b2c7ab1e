//! The timeline speaks the public names: a typed launch is `launch`, every copy is `memcpy` with
//! its `bytes` (synchronous ones too), and two host devices of one runtime are two processes,
//! `host CPU 0` and `host CPU 1`, as `ordo info` names them; the cache of queue-ordered memory
//! shows as a counter on its device's process. (Its own process: a trace is
//! process-wide.)

use ordo::raw::Backend;
use ordo_core::host::{HostArena, HostBackend, QueuedHost, STD_HOST_HEAP, builtin};
use ordo_core::{DeviceInfo, InfoValue};
use serde_json::Value;

static ARENA_A: HostArena<0> = HostArena::new();
static ARENA_B: HostArena<0> = HostArena::new();
static HOST_A: HostBackend =
    HostBackend::new(&ARENA_A, builtin::PROGRAMS, Some(ordo_core::std_clock_ns)).with_heap(STD_HOST_HEAP);
static HOST_B: HostBackend =
    HostBackend::new(&ARENA_B, builtin::PROGRAMS, Some(ordo_core::std_clock_ns)).with_heap(STD_HOST_HEAP);
static DEVICE_A: QueuedHost = QueuedHost::new(&HOST_A);
static DEVICE_B: QueuedHost = QueuedHost::new(&HOST_B);
static BACKENDS: [&dyn Backend; 2] = [&DEVICE_A, &DEVICE_B];
ordo_core::static_runtime!(static RUNTIME = &BACKENDS);

#[test]
fn spans_and_devices_carry_the_names_users_know() {
    let path = std::env::temp_dir().join(format!("ordo-trace-names-{}.json", std::process::id()));
    ordo::trace::start(&path).expect("the trace starts");
    {
        let ctx = ordo::Context::with_runtime(&RUNTIME).expect("the runtime initialises");
        for ordinal in 0..2 {
            let dev = ctx.device(ordinal).expect("two host devices");
            let queue = dev.queue().expect("a queue");
            let a = ordo::DeviceBuffer::from_slice(&dev, &[1.0f32; 256]).expect("a buffer");
            let mut c = ordo::DeviceBuffer::<f32>::zeroed(&dev, 256).expect("a buffer");
            ordo::builtin::vector_add(&queue, &a, &a, &mut c).expect("a launch");
            assert_eq!(c.to_vec().expect("a copy back")[255], 2.0);
            if ordinal == 0 {
                // Queue-ordered memory kept by the cache and taken again: a counter event.
                drop(ordo::DeviceBuffer::<u8>::zeroed_on(&queue, 512).expect("queue-ordered memory"));
                let again = ordo::DeviceBuffer::<u8>::zeroed_on(&queue, 512).expect("from the cache");
                assert_eq!(dev.cache_stats().expect("the cache's counts").hits, 1);
                drop(again);
            }
        }
        let names: Vec<InfoValue> = (0..2)
            .map(|p| {
                let device = RUNTIME.device(RUNTIME.platform(p).unwrap(), 0).unwrap();
                RUNTIME.device_info(device, DeviceInfo::Name).unwrap()
            })
            .collect();
        assert_eq!(names[0], InfoValue::text("host CPU 0 (a worker thread per queue)"));
        assert_eq!(names[1], InfoValue::text("host CPU 1 (a worker thread per queue)"));
    }
    ordo::trace::stop().expect("the trace stops");
    let text = std::fs::read_to_string(&path).expect("the trace file");
    let _ = std::fs::remove_file(&path);
    let events: Vec<Value> = serde_json::from_str(&text).expect("valid JSON");

    // Two device processes, named as `ordo info` names the devices.
    let processes: Vec<(&str, u64)> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .filter_map(|e| Some((e["args"]["name"].as_str()?, e["pid"].as_u64()?)))
        .collect();
    let pid = |name: &str| processes.iter().find(|p| p.0 == name).map(|p| p.1);
    let (a, b) = (pid("host CPU 0"), pid("host CPU 1"));
    assert!(a.is_some() && b.is_some() && a != b, "{processes:?}");
    for p in [a, b] {
        assert!(
            events.iter().any(|e| e["pid"].as_u64() == p && e["name"] == "vector_add_f32"),
            "each device's process has its kernel"
        );
    }

    // The cache of queue-ordered memory: counter events on the first device's process.
    let cache: Vec<&Value> = events.iter().filter(|e| e["name"] == "queue-ordered cache" && e["ph"] == "C").collect();
    assert!(cache.iter().all(|e| e["pid"].as_u64() == a), "{cache:?}");
    assert!(cache.iter().any(|e| e["args"]["hits"] == 1 && e["args"]["bytes"] == 0), "{cache:?}");
    assert!(cache.iter().any(|e| e["args"]["bytes"] == 512), "{cache:?}");

    // The calls: the typed launch is `launch`; the copies (synchronous here) `memcpy` with bytes.
    let calls: Vec<&Value> = events.iter().filter(|e| e["pid"] == 1 && e["ph"] == "X").collect();
    let named = |n: &str| calls.iter().filter(|e| e["name"] == n).count();
    assert_eq!(named("launch"), 2, "one launch per device");
    let copies: Vec<&&Value> = calls.iter().filter(|e| e["name"] == "memcpy").collect();
    assert_eq!(copies.len(), 4, "one copy in and one back per device");
    assert!(copies.iter().all(|e| e["args"]["bytes"] == 1024), "{copies:?}");
    for internal in [
        "launch_owned",
        "launch_on",
        "launch_packed_on",
        "memcpy_owned",
        "memcpy_between",
        "copy_to_device",
        "copy_from_device",
        "fill_owned",
        "program_load_logged",
    ] {
        assert_eq!(named(internal), 0, "no span is named {internal}");
    }
}
