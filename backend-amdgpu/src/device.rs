//! Loading HSA, finding agents and memory pools, device information and launch limits.

use std::ffi::{CStr, c_void};
use std::sync::Mutex;

use ordo_core::{BackendError, BackendResult, DeviceInfo, ErrorCode, InfoValue, LaunchLimits};

use crate::conv::{self, StatusExt};
use crate::sys::{self, *};

/// Where the HSA runtime library comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Library {
    /// `ORDO_HSA_LIBRARY` when set, else `libhsa-runtime64.so.1`.
    Default,
    /// This path (a test's simulated HSA, a ROCm install).
    Path(&'static str),
}

impl Library {
    fn path(self) -> String {
        match self {
            Self::Path(p) => p.to_string(),
            Self::Default => std::env::var("ORDO_HSA_LIBRARY").unwrap_or_else(|_| DEFAULT_LIBRARY.to_string()),
        }
    }
}

/// One GPU agent and what ordo uses of it.
pub(crate) struct Gpu {
    pub(crate) agent: hsa_agent_t,
    /// Coarse-grained global pool: device memory.
    pub(crate) device_pool: hsa_amd_memory_pool_t,
    pub(crate) isa: String,
    pub(crate) product: String,
    pub(crate) compute_units: u32,
    pub(crate) wavefront: u32,
    pub(crate) lds_bytes: u64,
    pub(crate) memory_bytes: u64,
    pub(crate) limits: LaunchLimits,
    /// For each GPU ordinal, whether this GPU's agent may access that GPU's device memory and
    /// over how many link hops (`hsa_amd_agent_memory_pool_get_info`: access not
    /// `NEVER_ALLOWED`); `None` for itself and for GPUs it cannot reach.
    pub(crate) reach: Vec<Option<u32>>,
    /// The agents of the other GPUs that may access this GPU's device memory: its allocations
    /// are granted to them (`hsa_amd_agents_allow_access`), so that copies between GPUs and
    /// kernels given a peer's address work.
    pub(crate) peers: Vec<hsa_agent_t>,
    /// Live queues (`Queue` addresses), which calls without a queue wait for.
    pub(crate) queues: Mutex<Vec<usize>>,
}

/// The initialised runtime: the library, the host agent's pools and the GPUs.
pub(crate) struct State {
    pub(crate) hsa: &'static Hsa,
    pub(crate) cpu: hsa_agent_t,
    /// The host agent's kernarg pool (kernel arguments).
    pub(crate) kernarg_pool: hsa_amd_memory_pool_t,
    /// The host agent's fine-grained pool (host memory, staging).
    pub(crate) system_pool: hsa_amd_memory_pool_t,
    pub(crate) gpus: Vec<Gpu>,
}

impl State {
    pub(crate) fn gpu(&self, device: u32) -> BackendResult<&Gpu> {
        self.gpus.get(device as usize).ok_or(BackendError::new(ErrorCode::InvalidArgument, 0, "no such AMDGPU device"))
    }
}

fn absent(message: &'static str) -> BackendError {
    BackendError::new(ErrorCode::NotPresent, 0, message)
}

/// Reads one agent attribute into a `T` (plain data the runtime fills).
///
/// # Safety
/// `attribute` is one whose value HSA writes as a `T`.
unsafe fn agent_info<T: Copy>(hsa: &Hsa, agent: hsa_agent_t, attribute: u32, init: T) -> BackendResult<T> {
    let mut v = init;
    // SAFETY: `v` is a `T`, the attribute's type (the caller's contract).
    unsafe { (hsa.hsa_agent_get_info)(agent, attribute, (&raw mut v).cast()) }.result_in("hsa_agent_get_info")?;
    Ok(v)
}

/// # Safety
/// As `agent_info`, for pool attributes.
unsafe fn pool_info<T: Copy>(hsa: &Hsa, pool: hsa_amd_memory_pool_t, attribute: u32, init: T) -> BackendResult<T> {
    let mut v = init;
    // SAFETY: `v` is a `T`, the attribute's type.
    unsafe { (hsa.hsa_amd_memory_pool_get_info)(pool, attribute, (&raw mut v).cast()) }
        .result_in("hsa_amd_memory_pool_get_info")?;
    Ok(v)
}

/// # Safety
/// `T` is the type of `attribute`'s value.
unsafe fn agent_pool_info<T: Copy>(
    hsa: &Hsa,
    agent: hsa_agent_t,
    pool: hsa_amd_memory_pool_t,
    attribute: u32,
    init: T,
) -> BackendResult<T> {
    let mut v = init;
    // SAFETY: `v` is a `T`, the attribute's type.
    unsafe { (hsa.hsa_amd_agent_memory_pool_get_info)(agent, pool, attribute, (&raw mut v).cast()) }
        .result_in("hsa_amd_agent_memory_pool_get_info")?;
    Ok(v)
}

fn text(bytes: &[u8; 64]) -> String {
    CStr::from_bytes_until_nul(bytes)
        .map_or_else(|_| String::from_utf8_lossy(bytes).into_owned(), |c| c.to_string_lossy().into_owned())
}

unsafe extern "C" fn push_handle(h: hsa_handle_t, data: *mut c_void) -> hsa_status_t {
    // SAFETY: `data` is the `Vec` passed to the iteration below, alive for its duration.
    let list = unsafe { &mut *data.cast::<Vec<hsa_handle_t>>() };
    list.push(h);
    HSA_STATUS_SUCCESS
}

fn agents(hsa: &Hsa) -> BackendResult<Vec<hsa_agent_t>> {
    let mut list: Vec<hsa_agent_t> = Vec::new();
    // SAFETY: the callback only pushes into `list`, which outlives the call.
    unsafe { (hsa.hsa_iterate_agents)(push_handle, (&raw mut list).cast()) }.result_in("hsa_iterate_agents")?;
    Ok(list)
}

fn pools(hsa: &Hsa, agent: hsa_agent_t) -> BackendResult<Vec<hsa_amd_memory_pool_t>> {
    let mut list: Vec<hsa_amd_memory_pool_t> = Vec::new();
    // SAFETY: as in `agents`.
    unsafe { (hsa.hsa_amd_agent_iterate_memory_pools)(agent, push_handle, (&raw mut list).cast()) }
        .result_in("hsa_amd_agent_iterate_memory_pools")?;
    Ok(list)
}

/// A global pool's flags, or `None` for other segments and pools without runtime allocation.
fn global_flags(hsa: &Hsa, pool: hsa_amd_memory_pool_t) -> BackendResult<Option<u32>> {
    // SAFETY: SEGMENT is a u32 enum, GLOBAL_FLAGS a u32, RUNTIME_ALLOC_ALLOWED a bool.
    unsafe {
        if pool_info(hsa, pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, 0u32)? != HSA_AMD_SEGMENT_GLOBAL
            || !pool_info(hsa, pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, false)?
        {
            return Ok(None);
        }
        pool_info(hsa, pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, 0u32).map(Some)
    }
}

/// Loads the library, initialises HSA and finds every GPU agent. On failure after `hsa_init`
/// succeeded, HSA is shut down again before returning.
pub(crate) fn open(library: Library) -> BackendResult<State> {
    let path = library.path();
    // SAFETY: `AmdgpuBackend::with_library`'s contract for a given path; otherwise Debian's
    // HSA runtime, or what `ORDO_HSA_LIBRARY` names, trusted as `LD_LIBRARY_PATH` is.
    let hsa = unsafe { sys::load(&path) }.map_err(|e| {
        log::debug!("amdgpu: {e}");
        absent("the HSA runtime library (libhsa-runtime64.so.1 or ORDO_HSA_LIBRARY) could not be loaded")
    })?;
    // SAFETY: hsa_init has no preconditions.
    let status = unsafe { (hsa.hsa_init)() };
    if status != HSA_STATUS_SUCCESS {
        return Err(
            BackendError::new(ErrorCode::NotPresent, i64::from(status), conv::init_failure(status)).in_call("hsa_init")
        );
    }
    discover(hsa).inspect_err(|_| {
        // SAFETY: hsa_init succeeded above and nothing was created since.
        let _ = unsafe { (hsa.hsa_shut_down)() };
    })
}

fn discover(hsa: &'static Hsa) -> BackendResult<State> {
    let mut cpu = None;
    let mut gpus = Vec::new();
    for agent in agents(hsa)? {
        // SAFETY: DEVICE is a u32 enum.
        match unsafe { agent_info(hsa, agent, HSA_AGENT_INFO_DEVICE, u32::MAX)? } {
            HSA_DEVICE_TYPE_CPU if cpu.is_none() => cpu = Some(agent),
            HSA_DEVICE_TYPE_GPU => gpus.push(agent),
            _ => {}
        }
    }
    let cpu = cpu.ok_or(absent("the HSA runtime reports no host (CPU) agent"))?;
    if gpus.is_empty() {
        return Err(absent("the HSA runtime reports no GPU agent"));
    }
    let (mut kernarg_pool, mut system_pool) = (None, None);
    for pool in pools(hsa, cpu)? {
        match global_flags(hsa, pool)? {
            Some(f) if f & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT != 0 => {
                kernarg_pool = kernarg_pool.or(Some(pool))
            }
            Some(f) if f & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED != 0 => {
                system_pool = system_pool.or(Some(pool))
            }
            _ => {}
        }
    }
    let kernarg_pool = kernarg_pool.ok_or(absent("the host agent has no kernarg memory pool"))?;
    let system_pool = system_pool.ok_or(absent("the host agent has no fine-grained memory pool"))?;
    let mut gpus = gpus.into_iter().map(|agent| gpu(hsa, agent)).collect::<BackendResult<Vec<_>>>()?;
    // Which GPU reaches which other's device memory (asked once; a failed question is no access).
    let reach: Vec<Vec<Option<u32>>> = gpus
        .iter()
        .map(|g| {
            gpus.iter()
                .map(|p| {
                    if p.agent.handle == g.agent.handle {
                        return None;
                    }
                    // SAFETY: ACCESS is a u32 enum and NUM_LINK_HOPS a u32, of a live agent and pool.
                    let access = unsafe {
                        agent_pool_info(hsa, g.agent, p.device_pool, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS, 0u32)
                    };
                    match access {
                        Ok(a) if a != HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED => Some(
                            // SAFETY: as above.
                            unsafe {
                                agent_pool_info(
                                    hsa,
                                    g.agent,
                                    p.device_pool,
                                    HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS,
                                    0u32,
                                )
                            }
                            .unwrap_or(0),
                        ),
                        _ => None,
                    }
                })
                .collect()
        })
        .collect();
    for (i, g) in gpus.iter_mut().enumerate() {
        g.reach = reach[i].clone();
    }
    for i in 0..gpus.len() {
        let peers = (0..gpus.len()).filter(|&j| reach[j][i].is_some()).map(|j| gpus[j].agent).collect();
        gpus[i].peers = peers;
    }
    Ok(State { hsa, cpu, kernarg_pool, system_pool, gpus })
}

fn gpu(hsa: &Hsa, agent: hsa_agent_t) -> BackendResult<Gpu> {
    let (mut device_pool, mut memory_bytes, mut lds_bytes) = (None, 0u64, 0u64);
    for pool in pools(hsa, agent)? {
        // SAFETY: SEGMENT is a u32 enum, SIZE a size_t.
        let (segment, size) = unsafe {
            (
                pool_info(hsa, pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, 0u32)?,
                pool_info(hsa, pool, HSA_AMD_MEMORY_POOL_INFO_SIZE, 0usize)? as u64,
            )
        };
        if segment == HSA_AMD_SEGMENT_GROUP {
            lds_bytes = size;
        } else if device_pool.is_none()
            && global_flags(hsa, pool)?.is_some_and(|f| f & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED != 0)
        {
            device_pool = Some(pool);
            memory_bytes = size;
        }
    }
    let device_pool = device_pool.ok_or(absent("a GPU agent has no coarse-grained memory pool"))?;
    // SAFETY: each attribute's documented type: char[64], u32, u16[3], u32[3].
    let (isa, product, compute_units, wavefront, wg_dims, wg_max, grid_dims) = unsafe {
        (
            agent_info(hsa, agent, HSA_AGENT_INFO_NAME, [0u8; 64])?,
            agent_info(hsa, agent, HSA_AMD_AGENT_INFO_PRODUCT_NAME, [0u8; 64])?,
            agent_info(hsa, agent, HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, 0u32)?,
            agent_info(hsa, agent, HSA_AGENT_INFO_WAVEFRONT_SIZE, 0u32)?,
            agent_info(hsa, agent, HSA_AGENT_INFO_WORKGROUP_MAX_DIM, [0u16; 3])?,
            agent_info(hsa, agent, HSA_AGENT_INFO_WORKGROUP_MAX_SIZE, 0u32)?,
            agent_info(hsa, agent, HSA_AGENT_INFO_GRID_MAX_DIM, [0u32; 3])?,
        )
    };
    Ok(Gpu {
        agent,
        device_pool,
        isa: text(&isa),
        product: text(&product),
        compute_units,
        wavefront,
        lds_bytes,
        memory_bytes,
        limits: limits(wg_dims, wg_max, grid_dims),
        reach: Vec::new(),
        peers: Vec::new(),
        queues: Mutex::new(Vec::new()),
    })
}

/// ordo's grid counts work-groups, HSA's counts work-items: a grid dimension is limited so that
/// grid × the largest block dimension fits HSA's (a u32).
fn limits(wg_dims: [u16; 3], wg_max: u32, grid_dims: [u32; 3]) -> LaunchLimits {
    let block = wg_dims.map(|d| u32::from(d).max(1));
    let mut grid = [0u32; 3];
    for i in 0..3 {
        grid[i] = (grid_dims[i] / block[i]).max(1);
    }
    LaunchLimits { grid, block, threads_per_block: wg_max.max(1), threads_per_launch: u64::MAX }
}

/// `gfx90a` → (9, 0x0a), `gfx1030` → (10, 0x30): the major version, then the last two hex digits
/// (minor and stepping) as one number.
pub(crate) fn isa_version(isa: &str) -> Option<(u32, u32)> {
    let digits = isa.strip_prefix("gfx")?;
    let digits = digits.split(':').next()?; // "gfx90a:sramecc+:xnack-"
    if digits.len() < 3 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let (major, rest) = digits.split_at(digits.len() - 2);
    Some((major.parse().ok()?, u32::from_str_radix(rest, 16).ok()?))
}

pub(crate) fn info(gpu: &Gpu, key: DeviceInfo) -> BackendResult<InfoValue> {
    if let Some(v) = gpu.limits.info(key) {
        return Ok(v);
    }
    Ok(match key {
        DeviceInfo::Name => InfoValue::text(if gpu.product.is_empty() { &gpu.isa } else { &gpu.product }),
        DeviceInfo::ComputeCapability => {
            let (a, b) = isa_version(&gpu.isa).ok_or(BackendError::new(
                ErrorCode::Unsupported,
                0,
                "the agent's ISA name is not gfxNNN",
            ))?;
            InfoValue::Version(a, b)
        }
        DeviceInfo::TotalMemory => InfoValue::Int(gpu.memory_bytes),
        DeviceInfo::MultiprocessorCount => InfoValue::Int(u64::from(gpu.compute_units)),
        DeviceInfo::MaxSharedMemoryPerBlock | DeviceInfo::MaxSharedMemoryPerBlockOptin => InfoValue::Int(gpu.lds_bytes),
        DeviceInfo::WarpSize => InfoValue::Int(u64::from(gpu.wavefront)),
        DeviceInfo::Vendor => InfoValue::text("AMD"),
        DeviceInfo::VendorId => InfoValue::Int(0x1002),
        _ => return Err(BackendError::new(ErrorCode::Unsupported, 0, "device property not available from HSA")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isa_versions() {
        assert_eq!(isa_version("gfx90a"), Some((9, 0x0a)));
        assert_eq!(isa_version("gfx1030"), Some((10, 0x30)));
        assert_eq!(isa_version("gfx942:sramecc+:xnack-"), Some((9, 0x42)));
        assert_eq!(isa_version("gfx9"), None);
        assert_eq!(isa_version("sm_90"), None);
        assert_eq!(isa_version("gfxzz0"), None);
    }

    #[test]
    fn limits_keep_work_items_in_u32() {
        let l = limits([1024, 1024, 1024], 1024, [u32::MAX; 3]);
        assert_eq!(l.block, [1024; 3]);
        assert!(u64::from(l.grid[0]) * 1024 <= u64::from(u32::MAX));
        assert_eq!(limits([0; 3], 0, [0; 3]).grid, [1; 3]);
    }
}
