//! Operations on platforms and devices, and the lookups every other operation file uses to
//! resolve a device, queue or event handle to its backend.
//!
//! Every operation validates all of its input before it calls a backend, so bad input returns a
//! specific error and changes nothing; that validation is what the backend trait's `unsafe`
//! methods rely on. Calls that only use objects run shared; calls that create or destroy objects
//! run exclusive. Depends on the runtime's tables (`super`), `backend`, `handle` and `error`;
//! `memory`, `queue` and `program` depend on it.

use core::fmt::Write as _;

use crate::backend::{Backend, BackendKind, DeviceInfo, InfoValue};
use crate::error::{BackendError, ErrorCode, Result, fail};
use crate::handle::{Device, Event, Platform, Queue};
use crate::trace::traced;

use super::{Runtime, Tables};

/// What `platform_info` tells about a platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlatformInfo {
    /// The backend's kind.
    pub kind: crate::BackendKind,
    /// The backend's name.
    pub name: &'static str,
    /// Number of devices (0 when absent or unavailable).
    pub device_count: u32,
    /// Why the platform cannot be used, or `None` when it is present: code `NotPresent` when it
    /// is absent (no driver or no device), any other code when its driver is present but failed
    /// to initialise (unavailable; see `is_unavailable`).
    pub absent: Option<BackendError>,
    /// What its devices can do.
    pub capabilities: crate::Capabilities,
}

impl PlatformInfo {
    /// The driver is present but failed to initialise (the error is in `absent`).
    pub fn is_unavailable(&self) -> bool {
        self.absent.is_some_and(|e| e.code != ErrorCode::NotPresent)
    }
}

/// A resolved device: its backend, the backend's ordinal and its slot in the device table.
#[derive(Clone, Copy)]
pub(super) struct Dev {
    pub(super) backend: &'static dyn Backend,
    pub(super) ordinal: u32,
    pub(super) slot: u32,
}

impl Runtime {
    #[inline]
    pub(super) fn dev_at(&self, t: &Tables, slot: u32) -> Dev {
        let d = t.devices.at(slot);
        Dev { backend: d.driver, ordinal: d.ordinal, slot }
    }

    #[inline]
    pub(super) fn dev(&self, t: &Tables, device: Device) -> Result<Dev> {
        let slot = t.devices.resolve(device.0)?;
        Ok(self.dev_at(t, slot))
    }

    #[inline]
    pub(super) fn queue(&self, t: &Tables, queue: Queue) -> Result<(Dev, u64)> {
        let q = t.queues.get(queue.0)?;
        Ok((self.dev_at(t, q.device), q.raw))
    }

    #[inline]
    pub(super) fn event(&self, t: &Tables, event: Event) -> Result<(Dev, u64)> {
        let e = t.events.get(event.0)?;
        Ok((self.dev_at(t, e.device), e.raw))
    }

    // ---- platforms and devices ------------------------------------------------------------

    /// Number of platforms (one per registered backend, present or absent).
    pub fn platform_count(&self) -> Result<u32> {
        traced!("platform_count", [], { self.with_shared(|t| Ok(t.platforms.len() as u32)) })
    }

    /// The platform at `index` in registration order.
    pub fn platform(&self, index: u32) -> Result<Platform> {
        traced!("platform", ["index" = index], {
            self.with_shared(|t| {
                let slot = t.platforms.iter_oldest_first().nth(index as usize);
                match slot {
                    Some(s) => Ok(Platform(t.platforms.handle_at(s))),
                    None => fail(ErrorCode::InvalidValue, "platform index out of range"),
                }
            })
        })
    }

    /// Kind, name, device count and absence reason of a platform.
    pub fn platform_info(&self, platform: Platform) -> Result<PlatformInfo> {
        traced!("platform_info", ["platform" = platform.0.0], {
            self.with_shared(|t| {
                let p = t.platforms.get(platform.0)?;
                let backend = self.backends[usize::from(p.backend)];
                Ok(PlatformInfo {
                    kind: backend.kind(),
                    name: backend.name(),
                    device_count: p.devices.len() as u32,
                    absent: p.absent,
                    capabilities: backend.capabilities(),
                })
            })
        })
    }

    /// The device at `index` of a platform.
    pub fn device(&self, platform: Platform, index: u32) -> Result<Device> {
        traced!("device", ["platform" = platform.0.0, "index" = index], {
            self.with_shared(|t| {
                let p = t.platforms.get(platform.0)?;
                match p.devices.get(index as usize) {
                    Some(&slot) => Ok(Device(t.devices.handle_at(slot))),
                    None => fail(ErrorCode::InvalidValue, "device index out of range"),
                }
            })
        })
    }

    /// The platform a device belongs to.
    pub fn device_platform(&self, device: Device) -> Result<Platform> {
        traced!("device_platform", ["device" = device.0.0], {
            self.with_shared(|t| {
                let d = t.devices.get(device.0)?;
                Ok(Platform(t.platforms.handle_at(d.platform)))
            })
        })
    }

    /// A device property. The launch limits (`MaxThreadsPerBlock`, `MaxBlockDim*`,
    /// `MaxGridDim*`, `MaxThreadsPerLaunch`) are the ones launches are checked against. A host
    /// device's name carries its number among the runtime's host devices, in registration
    /// order, so that two tell apart: `host CPU 0 (a worker thread per queue)`, `host CPU 1 …`.
    pub fn device_info(&self, device: Device, key: DeviceInfo) -> Result<InfoValue> {
        traced!("device_info", ["device" = device.0.0], {
            self.with_shared(|t| {
                let d = self.dev(t, device)?;
                if let Some(v) = t.devices.at(d.slot).limits().info(key) {
                    return Ok(v);
                }
                let value = d.backend.device_info(d.ordinal, key)?;
                if key == DeviceInfo::Name && d.backend.kind() == BackendKind::Host {
                    return Ok(Self::numbered_host_name(t, d.slot, value));
                }
                Ok(value)
            })
        })
    }

    /// The number of the device in slot `slot` among the runtime's host devices: how many host
    /// devices come before it in registration order (its name's `host CPU N`, its timeline's
    /// process).
    pub(super) fn host_number(t: &Tables, slot: u32) -> u32 {
        let before = t
            .devices
            .iter_oldest_first()
            .take_while(|&i| i != slot)
            .filter(|&i| t.devices.at(i).driver.kind() == BackendKind::Host)
            .count();
        before as u32
    }

    /// The cache's statistics for a device (`cache.rs`): bytes and blocks it holds now, and the
    /// queue-ordered allocations it served (hits) and could not serve (misses) since the init.
    pub fn cache_stats(&self, device: Device) -> Result<super::CacheStats> {
        traced!("cache_stats", ["device" = device.0.0], {
            self.with_shared(|t| Ok(t.cache.stats(t.devices.resolve(device.0)?)))
        })
    }

    /// `name` (a host backend's `host CPU …`) with the device's number among the host devices
    /// before it inserted after `host CPU`; other names as they are.
    fn numbered_host_name(t: &Tables, slot: u32, name: InfoValue) -> InfoValue {
        const PREFIX: &str = "host CPU";
        let InfoValue::Text(text) = &name else { return name };
        let Some(rest) = text.strip_prefix(PREFIX) else { return name };
        let number = Self::host_number(t, slot);
        let mut numbered = heapless::String::<64>::new();
        // A name that would not fit stays as the backend gave it.
        if write!(numbered, "{PREFIX} {number}{rest}").is_err() {
            return name;
        }
        InfoValue::Text(numbered)
    }
}

/// Live objects per kind, as the runtime's tables hold them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveObjects {
    /// Platforms (present or absent).
    pub platforms: usize,
    /// Devices.
    pub devices: usize,
    /// Queues.
    pub queues: usize,
    /// Events.
    pub events: usize,
    /// Programs.
    pub programs: usize,
    /// Kernels.
    pub kernels: usize,
    /// Allocations.
    pub allocations: usize,
    /// Graphs.
    pub graphs: usize,
    /// Communicators.
    pub communicators: usize,
}

impl Runtime {
    /// Live objects per kind (requires `Ready`).
    pub fn live_objects(&self) -> Result<LiveObjects> {
        traced!("live_objects", [], {
            self.with_shared(|t| {
                Ok(LiveObjects {
                    platforms: t.platforms.len(),
                    devices: t.devices.len(),
                    queues: t.queues.len(),
                    events: t.events.len(),
                    programs: t.programs.len(),
                    kernels: t.kernels.len(),
                    allocations: t.allocations.slots.len() + t.ordered.lock().slots.len(),
                    graphs: t.graphs.len(),
                    communicators: t.comms.len(),
                })
            })
        })
    }
}
