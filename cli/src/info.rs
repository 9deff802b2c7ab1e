//! `ordo info`: every platform (present or absent, with the reason), every device's key
//! properties, and which devices reach which others' memory directly (the peer matrix), as text
//! or JSON.

use ordo_core::{DeviceInfo, InfoValue, Runtime};
use serde_json::{Value, json};

fn info_json(value: &InfoValue) -> Value {
    match value {
        InfoValue::Int(v) => json!(v),
        InfoValue::Version(a, b) => json!(format!("{a}.{b}")),
        InfoValue::Text(s) => json!(s.as_str()),
    }
}

fn key_name(key: DeviceInfo) -> &'static str {
    match key {
        DeviceInfo::Name => "name",
        DeviceInfo::ComputeCapability => "compute_capability",
        DeviceInfo::TotalMemory => "total_memory_bytes",
        DeviceInfo::MultiprocessorCount => "multiprocessors",
        DeviceInfo::MaxThreadsPerBlock => "max_threads_per_block",
        DeviceInfo::MaxSharedMemoryPerBlock => "max_shared_memory_per_block",
        DeviceInfo::MaxSharedMemoryPerBlockOptin => "max_shared_memory_per_block_optin",
        DeviceInfo::WarpSize => "warp_size",
        DeviceInfo::MaxBlockDimX => "max_block_dim_x",
        DeviceInfo::MaxBlockDimY => "max_block_dim_y",
        DeviceInfo::MaxBlockDimZ => "max_block_dim_z",
        DeviceInfo::MaxGridDimX => "max_grid_dim_x",
        DeviceInfo::MaxGridDimY => "max_grid_dim_y",
        DeviceInfo::MaxGridDimZ => "max_grid_dim_z",
        DeviceInfo::MaxThreadsPerLaunch => "max_threads_per_launch",
        DeviceInfo::Vendor => "vendor",
        DeviceInfo::DriverVersion => "driver_version",
        DeviceInfo::Uuid => "uuid",
        DeviceInfo::ClockRateMhz => "clock_rate_mhz",
        DeviceInfo::MemoryClockRateMhz => "memory_clock_rate_mhz",
        DeviceInfo::VendorId => "vendor_id",
    }
}

/// Everything `info` shows, as JSON.
fn collect(rt: &Runtime) -> Result<Value, ordo_core::Error> {
    let mut platforms = Vec::new();
    for i in 0..rt.platform_count()? {
        let p = rt.platform(i)?;
        let pi = rt.platform_info(p)?;
        let mut devices = Vec::new();
        for d in 0..pi.device_count {
            let dev = rt.device(p, d)?;
            let mut props = serde_json::Map::new();
            props.insert("index".into(), json!(d));
            for &key in DeviceInfo::ALL {
                let value = match rt.device_info(dev, key) {
                    Ok(v) => info_json(&v),
                    Err(e) => json!(format!("error: {e}")),
                };
                props.insert(key_name(key).into(), value);
            }
            // The cache of queue-ordered memory (ordo's own, not the driver's).
            if let Ok(c) = rt.cache_stats(dev) {
                props.insert(
                    "queue_ordered_cache".into(),
                    json!({ "bytes": c.bytes, "blocks": c.blocks, "hits": c.hits, "misses": c.misses }),
                );
            }
            devices.push(Value::Object(props));
        }
        // Collectives: the backend's library (NCCL and its version), or the reference engine.
        let collectives = match rt.collective_library(p) {
            Ok(lib) => json!({ "library": lib.name, "version": lib.version }),
            Err(e) if e.code == ordo_core::ErrorCode::Unsupported => json!({ "library": "ordo reference engine" }),
            Err(e) => json!({ "library": null, "reason": e.detail().to_string() }),
        };
        platforms.push(json!({
            "name": pi.name,
            "collectives": collectives,
            "present": pi.absent.is_none(),
            "unavailable": pi.is_unavailable(),
            "status": pi.absent.map_or("success", |e| e.code.description()),
            "capabilities": pi.capabilities.iter_names().map(|(name, _)| name.to_ascii_lowercase()).collect::<Vec<_>>(),
            "absent_reason": pi.absent.map(|e| e.detail().to_string()),
            "devices": devices,
        }));
    }
    // The peer matrix over every device of every present platform, in that order.
    let mut all = Vec::new();
    for i in 0..rt.platform_count()? {
        let p = rt.platform(i)?;
        let pi = rt.platform_info(p)?;
        for d in 0..pi.device_count {
            all.push((format!("{} {d}", pi.name), rt.device(p, d)?));
        }
    }
    let mut peers = Vec::new();
    for (from_name, from) in &all {
        for (to_name, to) in &all {
            let a = rt.peer_access(*from, *to)?;
            peers.push(json!({
                "from": from_name, "to": to_name, "same_device": a.same_device, "direct": a.direct,
                "rank": a.rank, "native_atomics": a.native_atomics,
            }));
        }
    }
    Ok(
        json!({ "platforms": platforms, "devices": all.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), "peers": peers }),
    )
}

pub fn run(as_json: bool) -> Result<(), String> {
    let guard = crate::runtime().init_guard().map_err(|e| format!("init failed: {e}"))?;
    let info = collect(&guard).map_err(|e| format!("query failed: {e}"));
    let shutdown = guard.shutdown().map_err(|e| format!("shutdown failed: {e}"))?;
    let info = info?;
    if let ordo_core::Shutdown::TornDown(summary) = shutdown {
        if !summary.is_clean() {
            let report = crate::runtime().last_teardown_report().unwrap_or_default();
            return Err(format!("teardown failed: {report}"));
        }
    }
    if as_json {
        println!("{}", serde_json::to_string_pretty(&info).expect("JSON values serialise"));
        return Ok(());
    }
    for p in info["platforms"].as_array().into_iter().flatten() {
        let name = p["name"].as_str().unwrap_or("?");
        if !p["present"].as_bool().unwrap_or(false) {
            let what = if p["unavailable"].as_bool().unwrap_or(false) { "unavailable" } else { "absent" };
            let reason = p["absent_reason"].as_str().unwrap_or("unknown reason");
            println!("platform {name}: {what} ({}: {reason})", p["status"].as_str().unwrap_or("?"));
            continue;
        }
        let devices = p["devices"].as_array().map_or(&[][..], Vec::as_slice);
        let caps: Vec<&str> = p["capabilities"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        println!("platform {name}: {} device(s); capabilities: {}", devices.len(), caps.join(", "));
        let c = &p["collectives"];
        match (c["library"].as_str(), c["version"].as_u64()) {
            (Some(lib), Some(v)) => println!("  collectives: {lib} {}.{}.{}", v / 10000, v / 100 % 100, v % 100),
            (Some(lib), None) => println!("  collectives: {lib}"),
            _ => println!("  collectives: not found ({})", c["reason"].as_str().unwrap_or("?")),
        }
        for d in devices {
            println!("  device {}: {}", d["index"], d["name"].as_str().unwrap_or("?"));
            for (k, v) in d.as_object().into_iter().flatten() {
                if k != "index" && k != "name" {
                    println!("    {k}: {v}");
                }
            }
        }
    }
    let names: Vec<&str> = info["devices"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if names.len() > 1 {
        // "self", "direct" (rank r where the driver ranks links), or "-" (through host memory).
        println!("peer access (row: device; column: the memory it reaches):");
        let width = names.iter().map(|n| n.len()).max().unwrap_or(0).max(8);
        print!("  {:width$}", "");
        for n in &names {
            print!(" {n:>width$}");
        }
        println!();
        let peers = info["peers"].as_array().map_or(&[][..], Vec::as_slice);
        for (row, from) in names.iter().enumerate() {
            print!("  {from:width$}");
            for cell in &peers[row * names.len()..(row + 1) * names.len()] {
                let text = if cell["same_device"].as_bool() == Some(true) {
                    "self".to_string()
                } else if cell["direct"].as_bool() == Some(true) {
                    format!("direct r{}", cell["rank"])
                } else {
                    "-".to_string()
                };
                print!(" {text:>width$}");
            }
            println!();
        }
    }
    Ok(())
}
