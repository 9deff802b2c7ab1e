//! The timeline against hostile callers: a forked child leaves its parent's trace alone, a quiet
//! run's events reach the file within the flush interval, a FIFO or directory is refused at
//! once, and `stop` returns promptly while 16 threads go on tracing. Each case runs in a process
//! of its own (a trace is process-wide); `child` is their workload.

use std::process::Command;
use std::time::{Duration, Instant};

use ordo::{Context, DeviceBuffer, builtin};
use serde_json::Value;

const CHILD: &str = "ORDO_TRACE_HOSTILE_CHILD";

fn work(ctx: &Context<'static>, rounds: usize) -> ordo::Result<()> {
    let dev = ctx.default_device()?;
    let queue = dev.queue()?;
    let x = DeviceBuffer::from_slice(&dev, &[1.0f32; 1024])?;
    let mut y = DeviceBuffer::<f32>::zeroed(&dev, 1024)?;
    for _ in 0..rounds {
        builtin::vector_add(&queue, &x, &x, &mut y)?;
    }
    queue.synchronize()
}

fn events(path: &std::path::Path) -> Vec<Value> {
    match serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("the trace is valid JSON") {
        Value::Array(a) => a,
        other => panic!("not an array: {other}"),
    }
}

#[test]
fn child() {
    let Ok(mode) = std::env::var(CHILD) else { return };
    let path = std::path::PathBuf::from(std::env::var("TRACE_PATH").unwrap());
    match mode.as_str() {
        // Traces some work, then stays quiet (no call, no teardown) until killed.
        "quiet" => {
            let ctx = Context::new().unwrap();
            ordo::trace::start(&path).unwrap();
            work(&ctx, 3).unwrap();
            std::thread::sleep(Duration::from_secs(30));
        }
        // Traces, forks a child that exits through the C library (its exit handlers run) after
        // trying to stop the inherited trace and starting one of its own, then goes on.
        "fork" => {
            let ctx = Context::new().unwrap();
            ordo::trace::start(&path).unwrap();
            work(&ctx, 3).unwrap();
            // SAFETY: the child calls only what is async-signal-tolerant enough for a test
            // (ordo's trace calls, then exit); the parent waits for it.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                let code = match ordo::trace::stop() {
                    Err(e) if e.code() == ordo::ErrorCode::NotFound => {
                        let own = path.with_extension("child.json");
                        match ordo::trace::start(&own).and_then(|()| ordo::trace::stop()) {
                            Ok(_) => 0,
                            Err(_) => 3,
                        }
                    }
                    _ => 2,
                };
                // SAFETY: ends the child through the C library (its atexit handlers run).
                unsafe { libc::exit(code) };
            }
            let mut status = 0;
            // SAFETY: the child just forked.
            assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
            assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child status {status}");
            work(&ctx, 2).unwrap();
            let (_, count) = ordo::trace::stop().unwrap();
            println!("EVENTS {count}");
        }
        // 16 threads trace without pause; `stop` is timed while they go on.
        "busy" => {
            let ctx = Context::new().unwrap();
            ordo::trace::start(&path).unwrap();
            let running = std::sync::atomic::AtomicBool::new(true);
            let took = std::thread::scope(|s| {
                for _ in 0..16 {
                    s.spawn(|| {
                        while running.load(std::sync::atomic::Ordering::Relaxed) {
                            work(&ctx, 4).unwrap();
                        }
                    });
                }
                std::thread::sleep(Duration::from_millis(300));
                let start = Instant::now();
                ordo::trace::stop().unwrap();
                let took = start.elapsed();
                running.store(false, std::sync::atomic::Ordering::Relaxed);
                took
            });
            println!("STOP_MS {}", took.as_millis());
        }
        // A trace started by the program, then ORDO_TRACE at the first init: that trace says it
        // was ignored.
        "env_after_start" => {
            ordo::trace::start(&path).unwrap();
            let ctx = Context::new().unwrap();
            work(&ctx, 1).unwrap();
            ordo::trace::stop().unwrap();
        }
        other => panic!("unknown mode {other}"),
    }
}

fn run_child(mode: &str, path: &std::path::Path) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
        .args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, mode)
        .env("TRACE_PATH", path)
        .env_remove("ORDO_TRACE")
        .output()
        .unwrap()
}

/// The number a child printed after `label` (the test harness may print its own text before it
/// on the line).
fn printed<T: std::str::FromStr>(stdout: &str, label: &str) -> T {
    let after = stdout.split(label).nth(1).unwrap_or_else(|| panic!("no {label:?} in {stdout}"));
    after.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{label:?} in {stdout}"))
}

#[test]
fn hostile_callers_leave_traces_whole() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ordo-trace-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    // A FIFO with no reader and a directory: refused at once, nothing started.
    let fifo = dir.join("fifo");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let start = Instant::now();
    let refused = ordo::trace::start(&fifo).unwrap_err();
    assert_eq!(refused.code(), ordo::ErrorCode::InvalidArgument, "{refused}");
    assert!(start.elapsed() < Duration::from_secs(2), "waited on the FIFO");
    assert_eq!(ordo::trace::start(&dir).unwrap_err().code(), ordo::ErrorCode::InvalidArgument);
    let missing = ordo::trace::start(dir.join("no/such/dir.json")).unwrap_err();
    assert!(missing.to_string().contains("directory does not exist"), "{missing}");
    assert!(ordo::trace::path().is_none() && !ordo::trace::enabled(), "a refused start started nothing");

    // Quiet after its work: the events are in the file within the flush interval, with no
    // later call to carry them, and a kill leaves them whole.
    let quiet = dir.join("quiet.json");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "quiet")
        .env("TRACE_PATH", &quiet)
        .env_remove("ORDO_TRACE")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    // The work ends within a few seconds; then, 400 ms of quiet are enough for the flush.
    let mut seen = 0;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(400));
        let text = std::fs::read_to_string(&quiet).unwrap_or_default();
        let now = text.matches("vector_add").count();
        if now > 0 && now == seen {
            break;
        }
        seen = now;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(&quiet).unwrap();
    let body = text.trim_end().trim_end_matches(',');
    let closed = if body.ends_with(']') { body.to_string() } else { format!("{body}\n]") };
    let parsed: Vec<Value> = serde_json::from_str(&closed).expect("every event whole");
    assert!(
        parsed.iter().filter(|e| e["name"].as_str().is_some_and(|n| n.contains("vector_add"))).count() >= 3,
        "the quiet run's events reached the file: {text}"
    );

    // A forked child: the parent's file stays valid JSON with each event once; the child could
    // not stop the parent's trace and wrote its own.
    let forked = dir.join("fork.json");
    let out = run_child("fork", &forked);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let count: usize = printed(&stdout, "EVENTS ");
    let parsed = events(&forked);
    assert_eq!(parsed.len(), count, "each event once (the child wrote none of the parent's)");
    let mut seen = std::collections::HashSet::new();
    for e in &parsed {
        assert!(seen.insert(e.to_string()), "a duplicated event: {e}");
    }
    let _ = events(&forked.with_extension("child.json"));

    // ORDO_TRACE after the program's own trace::start: not silently dropped.
    let started = dir.join("started.json");
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "env_after_start")
        .env("TRACE_PATH", &started)
        .env("ORDO_TRACE", dir.join("from-env.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = events(&started).iter().any(|e| e["name"].as_str().is_some_and(|n| n.starts_with("ORDO_TRACE ignored")));
    assert!(said, "the program's trace says ORDO_TRACE was ignored");
    assert!(!dir.join("from-env.json").exists(), "nothing was written where ORDO_TRACE pointed");

    // stop() with 16 threads tracing: within a second.
    let busy = dir.join("busy.json");
    let out = run_child("busy", &busy);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let ms: u64 = printed(&stdout, "STOP_MS ");
    println!("stop() with 16 threads tracing: {ms} ms");
    assert!(ms < 1000, "stop took {ms} ms");
    let _ = events(&busy);
    let _ = std::fs::remove_dir_all(&dir);
}
