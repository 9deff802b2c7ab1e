//! What the host backend tells about the CPU it runs on (`HostDeviceInfo`), and, with feature
//! `std` on Linux, where those values come from: `/sys` and `/proc`. Bare-metal hosts fill the
//! struct themselves (their clocks are configuration, not discovery). Depends on nothing else in
//! the core.

/// Properties of the CPU under the host backend; 0 means "not known", and the backend then
/// answers `Unsupported` for the property (liboffload's `ol*` layer reads that as 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostDeviceInfo {
    /// Maximum core clock in MHz.
    pub clock_mhz: u32,
    /// Memory clock in MHz (for DDR memory, half its transfer rate in MT/s).
    pub memory_clock_mhz: u32,
    /// The PCI-SIG vendor ID of the CPU's maker (0x8086 Intel, 0x1022 AMD, 0x13b5 Arm, ...).
    pub vendor_id: u32,
    /// The memory the process can have, in bytes: the host device's total memory, and the most
    /// it hands out, when it allocates from a heap (`HostBackend::with_heap`).
    pub memory_bytes: u64,
}

impl HostDeviceInfo {
    /// Nothing known.
    pub const UNKNOWN: Self = Self { clock_mhz: 0, memory_clock_mhz: 0, vendor_id: 0, memory_bytes: 0 };
}

/// The PCI-SIG vendor ID for a CPU maker as Linux's `/proc/cpuinfo` names it: the x86
/// `vendor_id` string, or the Arm `CPU implementer` code. 0 for a maker not in the table.
pub fn cpu_vendor_pci_id(cpuinfo_vendor: &str) -> u32 {
    match cpuinfo_vendor.trim() {
        "GenuineIntel" => 0x8086,
        "AuthenticAMD" => 0x1022,
        "HygonGenuine" => 0x1d94,
        "CentaurHauls" => 0x1106,
        // Arm implementer codes (MIDR_EL1 bits 31:24).
        "0x41" => 0x13b5, // Arm
        "0x4e" => 0x10de, // NVIDIA
        "0x51" => 0x17cb, // Qualcomm
        "0x61" => 0x106b, // Apple
        "0x48" => 0x19e5, // HiSilicon
        "0xc0" => 0x1def, // Ampere
        _ => 0,
    }
}

/// The host's values as Linux reports them (read once, then cached): the clock from cpufreq's
/// `cpuinfo_max_freq`, else the fastest `cpu MHz` of `/proc/cpuinfo`; the vendor from
/// `/proc/cpuinfo`; the memory clock from the SMBIOS memory-device records under
/// `/sys/firmware/dmi/entries/17-*` (configured speed, else speed, in MT/s, halved); the memory
/// size is the smallest of `/proc/meminfo`'s `MemTotal`, the memory limit of the process's
/// cgroup and of each cgroup above it (v2 `memory.max`, v1 `memory.limit_in_bytes`), and its
/// address-space and data-size limits (`/proc/self/limits`): what it can really allocate. A
/// value the system does not give stays 0. On other systems, `UNKNOWN`.
#[cfg(feature = "std")]
pub fn std_host_device_info() -> HostDeviceInfo {
    static INFO: std::sync::OnceLock<HostDeviceInfo> = std::sync::OnceLock::new();
    *INFO.get_or_init(read_host_device_info)
}

#[cfg(all(feature = "std", target_os = "linux"))]
fn read_host_device_info() -> HostDeviceInfo {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim())
    }
    let max_freq_khz = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    let clock_mhz = match max_freq_khz {
        Some(khz) => (khz / 1000) as u32,
        None => cpuinfo.lines().filter_map(|l| field(l, "cpu MHz")?.parse::<f64>().ok()).fold(0.0f64, f64::max).round()
            as u32,
    };
    let vendor_id = cpuinfo
        .lines()
        .find_map(|l| field(l, "vendor_id").or_else(|| field(l, "CPU implementer")))
        .map_or(0, cpu_vendor_pci_id);
    // MemTotal, in kB.
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines().find_map(|l| {
                l.strip_prefix("MemTotal:").map(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })?
        })
        .map_or(0, |kb| kb.saturating_mul(1024));
    let memory_bytes = match process_memory_limit() {
        Some(limit) if memory_bytes == 0 || limit < memory_bytes => limit,
        _ => memory_bytes,
    };
    HostDeviceInfo { clock_mhz, memory_clock_mhz: smbios_memory_clock_mhz(), vendor_id, memory_bytes }
}

/// The smallest memory limit on the process other than the machine's size: its cgroup's and
/// every cgroup's above it, v2 and v1, and its `RLIMIT_AS` and `RLIMIT_DATA` soft limits.
/// `None` when nothing limits it.
#[cfg(all(feature = "std", target_os = "linux"))]
fn process_memory_limit() -> Option<u64> {
    let read_number =
        |path: &std::path::Path| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    let mut limits: std::vec::Vec<u64> = std::vec::Vec::new();
    let limits_file = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    for name in ["Max address space", "Max data size"] {
        let soft =
            limits_file.lines().find_map(|l| l.strip_prefix(name)?.split_whitespace().next()?.parse::<u64>().ok());
        limits.extend(soft);
    }
    // (hierarchy root, the cgroup's path in it, the limit's file name)
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    for line in cgroups.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (fields.next(), fields.next(), fields.next()) else { continue };
        let (root, file) = match controllers {
            "" => ("/sys/fs/cgroup", "memory.max"),
            c if c.split(',').any(|c| c == "memory") => ("/sys/fs/cgroup/memory", "memory.limit_in_bytes"),
            _ => continue,
        };
        let root = std::path::Path::new(root);
        // The cgroup and each one above it; where the path is not visible (a container's own
        // cgroup namespace), the hierarchy's root is the process's cgroup.
        let mut dir = root.join(path.trim_start_matches('/'));
        if !dir.exists() {
            dir = root.to_path_buf();
        }
        loop {
            limits.extend(read_number(&dir.join(file)));
            if dir == root || !dir.pop() {
                break;
            }
        }
    }
    limits.into_iter().min()
}

/// The fastest memory device of the SMBIOS tables (type 17), in MHz.
#[cfg(all(feature = "std", target_os = "linux"))]
fn smbios_memory_clock_mhz() -> u32 {
    let Ok(entries) = std::fs::read_dir("/sys/firmware/dmi/entries") else { return 0 };
    let mut best = 0u32;
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with("17-") {
            continue;
        }
        let Ok(raw) = std::fs::read(entry.path().join("raw")) else { continue };
        let word = |at: usize| raw.get(at..at + 2).map_or(0, |b| u32::from(u16::from_le_bytes([b[0], b[1]])));
        // Header length at byte 1; Speed at 0x15, Configured Memory Speed at 0x20 (SMBIOS 2.7+).
        let len = raw.get(1).copied().unwrap_or(0) as usize;
        let configured = if len > 0x21 { word(0x20) } else { 0 };
        let speed = if len > 0x16 { word(0x15) } else { 0 };
        let mts = if configured != 0 && configured != 0xffff { configured } else { speed };
        if mts != 0xffff {
            best = best.max(mts / 2);
        }
    }
    best
}

#[cfg(all(feature = "std", not(target_os = "linux")))]
fn read_host_device_info() -> HostDeviceInfo {
    HostDeviceInfo::UNKNOWN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendors_by_their_cpuinfo_names() {
        assert_eq!(cpu_vendor_pci_id("GenuineIntel"), 0x8086);
        assert_eq!(cpu_vendor_pci_id(" AuthenticAMD"), 0x1022);
        assert_eq!(cpu_vendor_pci_id("0x41"), 0x13b5);
        assert_eq!(cpu_vendor_pci_id("SomethingElse"), 0);
    }

    #[cfg(all(feature = "std", target_os = "linux", not(miri)))]
    #[test]
    fn linux_tells_the_clock_and_the_vendor() {
        let info = std_host_device_info();
        // Every Linux this runs on (x86 with /proc/cpuinfo's MHz, or Arm with cpufreq) gives a
        // clock; the vendor is known for x86 and the Arm makers of the table.
        assert!(info.clock_mhz > 0 && info.memory_bytes > 1 << 20, "{info:?}");
        assert_eq!(info, std_host_device_info(), "cached");
    }
}
