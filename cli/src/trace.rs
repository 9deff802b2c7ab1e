//! `ordo trace summary path.json`: what a trace (`ORDO_TRACE`, `ordo demo --trace`) holds, in a
//! terminal: the device work by total time (kernels by name, copies and fills with their
//! bandwidth), the calls by count, and the lifecycle's steps. Reads a file whose writer was
//! killed too (an array without its `]`).

use std::collections::HashMap;

use serde_json::Value;

/// Parses a trace file: a JSON array of events, or the object form (`{"traceEvents": [...]}`);
/// an array cut short (its writer killed) is read up to its last whole event.
pub fn parse(text: &str) -> Result<Vec<Value>, String> {
    let events = match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(a)) => a,
        Ok(Value::Object(mut o)) => match o.remove("traceEvents") {
            Some(Value::Array(a)) => a,
            _ => return Err("a JSON object without a traceEvents array".into()),
        },
        Ok(_) => return Err("neither an array of events nor an object with traceEvents".into()),
        Err(e) => {
            // Cut short: keep what ends at the last complete event.
            let body = text.trim_end();
            let mut end = body.len();
            loop {
                let Some(i) = body[..end].rfind('}') else {
                    return Err(format!("not a trace: {e}"));
                };
                let candidate = format!("{}]", body[..=i].trim_end_matches([',', '\n', ' ']));
                if let Ok(Value::Array(a)) = serde_json::from_str::<Value>(&candidate) {
                    break a;
                }
                end = i;
            }
        }
    };
    Ok(events)
}

#[derive(Default)]
struct Totals {
    count: u64,
    total_us: f64,
    bytes: u64,
    errors: u64,
}

fn f(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

/// Prints the summary of the trace at `path`.
pub fn summary(path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let events = parse(&text).map_err(|e| format!("{path}: {e}"))?;
    let mut work: HashMap<(String, String), Totals> = HashMap::new();
    let mut calls: HashMap<String, Totals> = HashMap::new();
    let mut steps: HashMap<String, Totals> = HashMap::new();
    let (mut first, mut last) = (f64::MAX, 0f64);
    for e in &events {
        if e.get("ph").and_then(Value::as_str) != Some("X") {
            continue;
        }
        let name = e.get("name").and_then(Value::as_str).unwrap_or("?").to_string();
        let cat = e.get("cat").and_then(Value::as_str).unwrap_or("").to_string();
        let (ts, dur) = (f(e, "ts"), f(e, "dur"));
        first = first.min(ts);
        last = last.max(ts + dur);
        let args = e.get("args");
        let failed = args.and_then(|a| a.get("status")).and_then(Value::as_str).is_some_and(|s| s != "ok");
        let t = match cat.as_str() {
            "api" => calls.entry(name).or_default(),
            "lifecycle" => steps.entry(name).or_default(),
            _ => work.entry((cat, name)).or_default(),
        };
        t.count += 1;
        t.total_us += dur;
        t.bytes += args.and_then(|a| a.get("bytes")).and_then(Value::as_u64).unwrap_or(0);
        t.errors += u64::from(failed);
    }
    println!("{path}: {} events over {:.3} ms", events.len(), if last > first { (last - first) / 1e3 } else { 0.0 });

    let mut kernels: Vec<_> = work.iter().filter(|((c, _), _)| c == "kernel").collect();
    kernels.sort_by(|a, b| b.1.total_us.total_cmp(&a.1.total_us));
    println!("\ntop kernels by total device time:");
    if kernels.is_empty() {
        println!("  (none)");
    }
    for ((_, name), t) in kernels.iter().take(10) {
        println!(
            "  {:>12.3} ms  {:>7} launch(es)  {:>10.3} us mean  {name}",
            t.total_us / 1e3,
            t.count,
            t.total_us / t.count as f64
        );
    }
    let mut moves: Vec<_> = work.iter().filter(|((c, _), _)| c != "kernel").collect();
    moves.sort_by(|a, b| b.1.total_us.total_cmp(&a.1.total_us));
    println!("\ncopies, fills, host functions and graphs by total device time:");
    if moves.is_empty() {
        println!("  (none)");
    }
    for ((cat, name), t) in &moves {
        let bw = if t.total_us > 0.0 && t.bytes > 0 {
            format!("{:.3} GB/s", t.bytes as f64 / t.total_us / 1e3)
        } else {
            "-".into()
        };
        println!("  {:>12.3} ms  {:>7} x  {:>14} bytes  {bw:>14}  {name} ({cat})", t.total_us / 1e3, t.count, t.bytes);
    }
    let mut by_count: Vec<_> = calls.iter().collect();
    by_count.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
    println!("\ncalls by count:");
    for (name, t) in &by_count {
        println!(
            "  {:>9} x  {:>12.3} ms total  {:>10.3} us mean  {:>5} failed  {name}",
            t.count,
            t.total_us / 1e3,
            t.total_us / t.count as f64,
            t.errors
        );
    }
    let mut lifecycle: Vec<_> = steps.iter().collect();
    lifecycle.sort_by(|a, b| a.0.cmp(b.0));
    println!("\nlifecycle:");
    for (name, t) in &lifecycle {
        println!("  {:>9} x  {:>12.3} ms total  {:>5} failed  {name}", t.count, t.total_us / 1e3, t.errors);
    }
    Ok(())
}

/// Checks the trace at `path` (`ordo trace check`): every event well formed (`ph`, `pid`, `tid`;
/// spans with `name`, `ts` and `dur`; calls with their status), device work not before the call
/// that submitted it, and spans on one queue never overlapping. Returns what it found.
pub fn check(path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let whole = serde_json::from_str::<Value>(&text).is_ok();
    let events = parse(&text).map_err(|e| format!("{path}: {e}"))?;
    let (mut calls, mut steps, mut work) = (0u64, 0u64, 0u64);
    let mut queues: HashMap<(u64, u64), Vec<(f64, f64)>> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let bad = |why: &str| format!("{path}: event {i} {why}: {e}");
        let ph = e.get("ph").and_then(Value::as_str).ok_or_else(|| bad("has no ph"))?;
        let pid = e.get("pid").and_then(Value::as_u64).ok_or_else(|| bad("has no integer pid"))?;
        let tid = e.get("tid").and_then(Value::as_u64).ok_or_else(|| bad("has no integer tid"))?;
        e.get("name").and_then(Value::as_str).ok_or_else(|| bad("has no name"))?;
        match ph {
            "M" => {
                e.get("args")
                    .and_then(|a| a.get("name"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("names nothing"))?;
            }
            "C" => {}
            "X" => {
                let ts = e.get("ts").and_then(Value::as_f64).ok_or_else(|| bad("has no ts"))?;
                let dur = e.get("dur").and_then(Value::as_f64).ok_or_else(|| bad("has no dur"))?;
                if ts < 0.0 || dur < 0.0 {
                    return Err(bad("has a negative time"));
                }
                let args = e.get("args").ok_or_else(|| bad("has no args"))?;
                match e.get("cat").and_then(Value::as_str) {
                    Some("api") => {
                        args.get("status").and_then(Value::as_str).ok_or_else(|| bad("has no status"))?;
                        calls += 1;
                    }
                    Some("lifecycle") => steps += 1,
                    Some("kernel" | "copy" | "fill" | "host" | "graph") => {
                        let submitted = args
                            .get("submitted")
                            .and_then(Value::as_f64)
                            .ok_or_else(|| bad("has no submitted time"))?;
                        if ts < submitted {
                            return Err(bad("starts before the call that submitted it"));
                        }
                        queues.entry((pid, tid)).or_default().push((ts, ts + dur));
                        work += 1;
                    }
                    _ => return Err(bad("has an unknown category")),
                }
            }
            _ => return Err(bad("has an unknown phase")),
        }
    }
    for ((pid, tid), spans) in &mut queues {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in spans.windows(2) {
            if w[1].0 + 1e-6 < w[0].1 {
                return Err(format!(
                    "{path}: spans on queue track {pid}/{tid} overlap: [{}, {}] and [{}, {}]",
                    w[0].0, w[0].1, w[1].0, w[1].1
                ));
            }
        }
    }
    println!(
        "{path}: ok: {} events ({calls} calls, {work} pieces of device work on {} queues, {steps} lifecycle steps){}",
        events.len(),
        queues.len(),
        if whole { "" } else { "; cut short (no closing ])" }
    );
    Ok(())
}
