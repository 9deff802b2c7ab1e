//! The timeline end to end: traces written by `ordo::trace` and `ORDO_TRACE` parse, every event
//! is well formed and device work lies after its call without overlap on a queue (`ordo trace
//! check`), nothing is lost with 16 threads calling at once, and a run that panics or is
//! killed leaves a readable trace. One test drives the runs in turn (a trace is process-wide);
//! `child` is the workload of the runs in another process.

use std::process::Command;
use std::time::{Duration, Instant};

use ordo::{Context, DeviceBuffer, builtin};
use serde_json::Value;

const CHILD: &str = "ORDO_TRACE_TEST_CHILD";
const THREADS: usize = 16;
const LAUNCHES: usize = 40;

fn ordo(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ordo")).args(args).output().expect("the ordo command runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ordo {args:?} failed:\n{text}");
    text
}

fn events(path: &std::path::Path) -> Vec<Value> {
    match serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("the trace is valid JSON") {
        Value::Array(a) => a,
        other => panic!("not an array: {other}"),
    }
}

fn spans<'a>(events: &'a [Value], cat: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["cat"] == cat).collect()
}

/// Some work of every kind on the default device: launches, copies and fills on a queue, a
/// host function's worth of ordering (events), and queue-less copies.
fn work(rounds: usize) -> ordo::Result<()> {
    let ctx = Context::new()?;
    let dev = ctx.default_device()?;
    let queue = dev.queue()?;
    let x = DeviceBuffer::from_slice(&dev, &[1.0f32; 4096])?;
    let mut y = DeviceBuffer::<f32>::zeroed_on(&queue, 4096)?;
    let mut sum = DeviceBuffer::<f32>::zeroed(&dev, 1)?;
    for _ in 0..rounds {
        builtin::vector_add(&queue, &x, &x, &mut y)?;
    }
    builtin::reduce_sum(&queue, &y, &mut sum)?;
    queue.synchronize()?;
    assert_eq!(sum.to_vec()?, [8192.0]);
    Ok(())
}

#[test]
fn child() {
    match std::env::var(CHILD).as_deref() {
        Ok("loop") => {
            // One context for the whole run: no teardown closes the array before the kill.
            let _ctx = Context::new().unwrap();
            loop {
                work(20).unwrap();
            }
        }
        Ok("panic") => {
            work(5).unwrap();
            let ctx = Context::new().unwrap();
            let _kept = DeviceBuffer::<u8>::zeroed(&ctx.default_device().unwrap(), 64).unwrap();
            panic!("a run that panics mid-way (on purpose)");
        }
        _ => {}
    }
}

fn spawn_child(mode: &str, trace: &std::path::Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, mode)
        .env("ORDO_TRACE", trace)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn traces_parse_are_well_formed_and_lose_nothing() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ordo-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    // 16 threads calling at once, each on its own queue.
    let path = dir.join("threads.json");
    ordo::trace::start(&path).unwrap();
    assert_eq!(ordo::trace::start(&path).unwrap_err().code(), ordo::ErrorCode::Busy);
    let lost_before = ordo::trace::lost_work();
    // NVTX (`libnvToolsExt.so.1` or `libnvtx3interop.so.1`): every call below is also a range.
    if std::env::var("CI").as_deref() == Ok("true") {
        assert!(ordo::trace::nvtx_loaded(), "CI=true: NVTX must load (nvidia-nvtx-cu12's lib on LD_LIBRARY_PATH)");
    } else if !ordo::trace::nvtx_loaded() {
        eprintln!("NVTX not found: the trace is checked without its ranges");
    }
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| work(LAUNCHES).unwrap());
        }
    });
    let (written, count) = ordo::trace::stop().unwrap();
    assert_eq!(written, path);
    assert_eq!(ordo::trace::stop().unwrap_err().code(), ordo::ErrorCode::NotFound);
    let lost = ordo::trace::lost_work() - lost_before;
    let all = events(&path);
    assert_eq!(all.len() as u64, count);
    let check = ordo(&["trace", "check", path.to_str().unwrap()]);
    assert!(!check.contains("cut short"), "{check}");
    let kernels = spans(&all, "kernel");
    let adds = kernels.iter().filter(|e| e["name"] == "vector_add_f32").count();
    assert_eq!(adds as u64 + lost, (THREADS * LAUNCHES) as u64, "device spans: {adds}, untimed: {lost}");
    assert_eq!(lost, 0, "no work went untimed");
    let queues: std::collections::HashSet<_> = kernels.iter().map(|e| (e["pid"].as_u64(), e["tid"].as_u64())).collect();
    assert_eq!(queues.len(), THREADS, "a track per queue");
    // Every thread's calls on its own track, every call of every thread there.
    let api = spans(&all, "api");
    let mut launches_per_thread = std::collections::HashMap::new();
    for e in &api {
        assert!(e["args"]["status"].is_string());
        if e["name"].as_str().is_some_and(|n| n.starts_with("launch")) {
            *launches_per_thread.entry(e["tid"].as_u64().unwrap()).or_insert(0) += 1;
        }
    }
    assert_eq!(launches_per_thread.len(), THREADS);
    assert!(launches_per_thread.values().all(|&n| n == LAUNCHES + 1), "{launches_per_thread:?}");
    assert!(spans(&all, "fill").len() >= THREADS, "the queue-ordered fills of zeroed_on");
    let summary = ordo(&["trace", "summary", path.to_str().unwrap()]);
    assert!(summary.contains("vector_add_f32") && summary.contains("calls by count"), "{summary}");

    // The demo's trace (`ordo demo --trace`): the lifecycle's steps too.
    let demo = dir.join("demo.json");
    ordo(&["demo", "--trace", demo.to_str().unwrap()]);
    ordo(&["trace", "check", demo.to_str().unwrap()]);
    let demo_events = events(&demo);
    let steps = spans(&demo_events, "lifecycle");
    assert!(steps.iter().any(|e| e["name"] == "init") && steps.iter().any(|e| e["name"] == "teardown"));
    assert!(steps.iter().any(|e| e["name"] == "teardown: free memory"));
    assert!(!spans(&demo_events, "kernel").is_empty());

    // A run that panics: the at-exit close leaves valid JSON.
    let panicked = dir.join("panicked.json");
    let status = spawn_child("panic", &panicked).wait().unwrap();
    assert!(!status.success());
    let p = events(&panicked);
    assert!(spans(&p, "kernel").len() >= 5, "the work before the panic is there");
    ordo(&["trace", "check", panicked.to_str().unwrap()]);

    // A run killed mid-way: readable up to its last flushed event.
    let killed = dir.join("killed.json");
    let mut child = spawn_child("loop", &killed);
    let start = Instant::now();
    while std::fs::metadata(&killed).map_or(0, |m| m.len()) < 64 << 10 && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let check = ordo(&["trace", "check", killed.to_str().unwrap()]);
    assert!(check.contains("cut short"), "{check}");
    let summary = ordo(&["trace", "summary", killed.to_str().unwrap()]);
    assert!(summary.contains("vector_add_f32"), "{summary}");

    std::fs::remove_dir_all(&dir).ok();
}
