//! Code objects: checking and reading them (ELF via `object`, the `NT_AMDGPU_METADATA` msgpack
//! note via `rmpv`) before any HSA call, executables, kernel symbols, and kernel arguments laid
//! out as the metadata says (explicit arguments from the caller's pointers, hidden arguments of
//! code object v5 from the launch).

use std::ffi::CString;
use std::sync::Mutex;

use object::elf;
use object::read::elf::{FileHeader, SectionHeader};
use ordo_core::{BackendError, BackendResult, ErrorCode, KernelArgs, LaunchDims};
use rmpv::Value;

use crate::conv::{StatusExt, check_release};
use crate::device::{Gpu, State};
use crate::sys::*;

/// `NT_AMDGPU_METADATA`.
const NT_AMDGPU_METADATA: u32 = 32;
/// `ELFOSABI_AMDGPU_HSA`.
const ELFOSABI_AMDGPU_HSA: u8 = 64;

fn invalid(message: &'static str) -> BackendError {
    BackendError::new(ErrorCode::InvalidBinary, 0, message)
}

/// What a kernel argument holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArgKind {
    /// A value copied from the caller's argument (`by_value`, `global_buffer`).
    Explicit,
    /// `__local` memory sized by the launch: the runtime writes its LDS offset; the caller's
    /// argument is a placeholder (its value is not read).
    DynamicShared { align: u32 },
    /// An explicit argument kind ordo does not lay out (image, sampler, pipe, queue).
    Unsupported,
    /// `hidden_block_count_{x,y,z}` (u32).
    BlockCount(usize),
    /// `hidden_group_size_{x,y,z}` (u16).
    GroupSize(usize),
    /// `hidden_remainder_{x,y,z}` (u16): always 0, ordo's grids are whole work-groups.
    Remainder(usize),
    /// `hidden_grid_dims` (u16).
    GridDims,
    /// `hidden_dynamic_lds_size` (u32).
    DynamicLdsSize,
    /// Any other hidden argument (global offsets, host-call buffers, …): zero.
    HiddenZero,
}

impl ArgKind {
    fn is_explicit(self) -> bool {
        matches!(self, Self::Explicit | Self::DynamicShared { .. } | Self::Unsupported)
    }
}

/// One argument of a kernel, from the metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArgMeta {
    pub(crate) offset: u32,
    pub(crate) size: u32,
    pub(crate) kind: ArgKind,
}

/// One kernel of a code object, from the metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KernelMeta {
    pub(crate) name: String,
    pub(crate) symbol: String,
    pub(crate) kernarg_size: u32,
    pub(crate) group_fixed: u32,
    pub(crate) args: Vec<ArgMeta>,
}

impl KernelMeta {
    /// The arguments a caller passes (the explicit ones, in order).
    pub(crate) fn explicit(&self) -> impl Iterator<Item = &ArgMeta> {
        self.args.iter().filter(|a| a.kind.is_explicit())
    }
}

fn field<'a>(map: &'a [(Value, Value)], key: &str) -> Option<&'a Value> {
    map.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
}

fn int(map: &[(Value, Value)], key: &str) -> Result<u32, &'static str> {
    field(map, key)
        .and_then(Value::as_u64)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or("AMDGPU metadata: a kernel or argument lacks a numeric field")
}

fn kind(name: &str, arg: &[(Value, Value)]) -> ArgKind {
    let axis = |s: &str| match s.as_bytes().last() {
        Some(b'x') => Some(0),
        Some(b'y') => Some(1),
        Some(b'z') => Some(2),
        _ => None,
    };
    match name {
        "by_value" | "global_buffer" => ArgKind::Explicit,
        "dynamic_shared_pointer" => ArgKind::DynamicShared {
            align: field(arg, ".pointee_align").and_then(Value::as_u64).map_or(4, |a| a.clamp(1, 256) as u32),
        },
        "hidden_grid_dims" => ArgKind::GridDims,
        "hidden_dynamic_lds_size" => ArgKind::DynamicLdsSize,
        n if n.starts_with("hidden_block_count_") => axis(n).map_or(ArgKind::HiddenZero, ArgKind::BlockCount),
        n if n.starts_with("hidden_group_size_") => axis(n).map_or(ArgKind::HiddenZero, ArgKind::GroupSize),
        n if n.starts_with("hidden_remainder_") => axis(n).map_or(ArgKind::HiddenZero, ArgKind::Remainder),
        n if n.starts_with("hidden_") => ArgKind::HiddenZero,
        _ => ArgKind::Unsupported,
    }
}

fn kernel_meta(k: &Value) -> Result<KernelMeta, &'static str> {
    let map = k.as_map().ok_or("AMDGPU metadata: a kernel entry is not a map")?;
    let text = |key| field(map, key).and_then(Value::as_str).map(str::to_string);
    let name = text(".name").ok_or("AMDGPU metadata: a kernel has no .name")?;
    let symbol = text(".symbol").ok_or("AMDGPU metadata: a kernel has no .symbol")?;
    let kernarg_size = int(map, ".kernarg_segment_size")?;
    let group_fixed = int(map, ".group_segment_fixed_size")?;
    let mut args = Vec::new();
    if let Some(list) = field(map, ".args") {
        for a in list.as_array().ok_or("AMDGPU metadata: .args is not an array")? {
            let a = a.as_map().ok_or("AMDGPU metadata: an argument is not a map")?;
            let (offset, size) = (int(a, ".offset")?, int(a, ".size")?);
            if u64::from(offset) + u64::from(size) > u64::from(kernarg_size) {
                return Err("AMDGPU metadata: an argument lies beyond the kernarg segment");
            }
            let value_kind = field(a, ".value_kind")
                .and_then(Value::as_str)
                .ok_or("AMDGPU metadata: an argument has no .value_kind")?;
            args.push(ArgMeta { offset, size, kind: kind(value_kind, a) });
        }
    }
    Ok(KernelMeta { name, symbol, kernarg_size, group_fixed, args })
}

/// Checks that `image` is a 64-bit little-endian AMDGPU ELF code object and reads its kernels
/// from the metadata note. Every malformed or truncated image is refused here, before HSA
/// sees it.
pub(crate) fn parse(image: &[u8]) -> Result<Vec<KernelMeta>, &'static str> {
    let header = elf::FileHeader64::<object::LittleEndian>::parse(image).map_err(|_| "not a 64-bit ELF file")?;
    let endian = header.endian().map_err(|_| "not a little-endian ELF file")?;
    if header.e_machine(endian) != elf::EM_AMDGPU {
        return Err("an ELF file for another machine than AMDGPU");
    }
    if header.e_ident().os_abi != ELFOSABI_AMDGPU_HSA {
        return Err("an AMDGPU ELF file that is not an HSA code object");
    }
    let sections = header.sections(endian, image).map_err(|_| "truncated or malformed ELF section table")?;
    let mut metadata = None;
    for section in sections.iter() {
        let Some(mut notes) = section.notes(endian, image).map_err(|_| "truncated or malformed ELF note")? else {
            continue;
        };
        while let Some(note) = notes.next().map_err(|_| "truncated or malformed ELF note")? {
            if note.name() == b"AMDGPU" && note.n_type(endian) == NT_AMDGPU_METADATA {
                metadata = Some(note.desc());
            }
        }
    }
    let mut desc = metadata.ok_or("no AMDGPU metadata note (code object v3 or later is needed)")?;
    let root = rmpv::decode::read_value(&mut desc).map_err(|_| "AMDGPU metadata is not valid msgpack")?;
    let root = root.as_map().ok_or("AMDGPU metadata is not a map")?;
    let kernels = field(root, "amdhsa.kernels").and_then(Value::as_array).ok_or("AMDGPU metadata lists no kernels")?;
    kernels.iter().map(kernel_meta).collect()
}

/// The magic of a clang offload bundle (what HIP fat binaries hold).
const BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";

fn read_u64(image: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(image.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

/// The code object for an agent of ISA `isa` (e.g. `gfx90a`): the image itself, or from a
/// clang offload bundle the entry whose target ends in `--<isa>` (target features after a
/// `:` are ignored on both sides).
pub(crate) fn select<'a>(image: &'a [u8], isa: &str) -> Result<&'a [u8], &'static str> {
    if !image.starts_with(BUNDLE_MAGIC) {
        return Ok(image);
    }
    fn base(s: &str) -> &str {
        s.split(':').next().unwrap_or(s)
    }
    let want = base(isa);
    let entries = read_u64(image, BUNDLE_MAGIC.len()).ok_or("truncated offload bundle")?;
    let mut at = BUNDLE_MAGIC.len() + 8;
    let mut found = None;
    for _ in 0..entries {
        let bad = "truncated or malformed offload bundle";
        let (offset, size, id_len) = (
            read_u64(image, at).ok_or(bad)?,
            read_u64(image, at + 8).ok_or(bad)?,
            read_u64(image, at + 16).ok_or(bad)?,
        );
        let id_start = at + 24;
        let id_end = usize::try_from(id_len).ok().and_then(|n| id_start.checked_add(n)).ok_or(bad)?;
        let id = std::str::from_utf8(image.get(id_start..id_end).ok_or(bad)?).map_err(|_| bad)?;
        let start = usize::try_from(offset).map_err(|_| bad)?;
        let end = usize::try_from(size).ok().and_then(|n| start.checked_add(n)).ok_or(bad)?;
        let body = image.get(start..end).ok_or(bad)?;
        if id.starts_with("hip") || id.starts_with("openmp") {
            if let Some((_, target)) = id.split_once("--") {
                if base(target) == want && found.is_none() {
                    found = Some(body);
                }
            }
        }
        at = id_end;
    }
    found.ok_or("the offload bundle holds no code object for this device's ISA")
}

/// A kernel as the runtime holds it: its symbol's values and its metadata.
pub(crate) struct Kernel {
    pub(crate) object: u64,
    pub(crate) kernarg_size: u32,
    pub(crate) group_size: u32,
    pub(crate) private_size: u32,
    pub(crate) meta: KernelMeta,
}

/// A loaded program: its executable, metadata and the kernels looked up so far (boxed, so a
/// kernel's address, its value, stays put; freed with the program).
pub(crate) struct Program {
    executable: hsa_executable_t,
    metas: Vec<KernelMeta>,
    #[allow(clippy::vec_box)] // each kernel must stay at its address (its value) as the list grows
    kernels: Mutex<Vec<Box<Kernel>>>,
}

/// Creates, loads and freezes an executable for `gpu` from a copy of `image`.
pub(crate) fn load(state: &State, gpu: &Gpu, image: &[u8]) -> BackendResult<u64> {
    let metas = parse(image).map_err(invalid)?;
    let hsa = state.hsa;
    let copy = image.to_vec();
    let mut reader = hsa_code_object_reader_t::default();
    // SAFETY: `copy` outlives the reader (destroyed below, before `copy` is dropped).
    unsafe { (hsa.hsa_code_object_reader_create_from_memory)(copy.as_ptr().cast(), copy.len(), &mut reader) }
        .result_in("hsa_code_object_reader_create_from_memory")?;
    let mut executable = hsa_executable_t::default();
    // SAFETY: plain out-parameters; a null options string is allowed.
    let result = unsafe {
        (hsa.hsa_executable_create_alt)(
            HSA_PROFILE_FULL,
            HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
            std::ptr::null(),
            &mut executable,
        )
    }
    .result_in("hsa_executable_create_alt")
    .and_then(|()| {
        // SAFETY: a live executable, agent and reader; the loaded-object out-pointer may be null.
        let loaded = unsafe {
            (hsa.hsa_executable_load_agent_code_object)(
                executable,
                gpu.agent,
                reader,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        }
        .result_in("hsa_executable_load_agent_code_object")
        .and_then(|()| {
            // SAFETY: a live executable.
            unsafe { (hsa.hsa_executable_freeze)(executable, std::ptr::null()) }.result_in("hsa_executable_freeze")
        });
        if loaded.is_err() {
            // SAFETY: created above, not used again.
            let _ = unsafe { (hsa.hsa_executable_destroy)(executable) };
        }
        loaded
    });
    // SAFETY: the reader is not used again (the executable needs it only while loading).
    let _ = unsafe { (hsa.hsa_code_object_reader_destroy)(reader) };
    drop(copy);
    result?;
    let program = Box::new(Program { executable, metas, kernels: Mutex::new(Vec::new()) });
    Ok(Box::into_raw(program) as u64)
}

/// # Safety
/// `program` is a live value from `load`, not used again.
pub(crate) unsafe fn unload(state: &State, program: u64) -> BackendResult<()> {
    // SAFETY: the caller's contract: the box `load` leaked, reclaimed once.
    let program = unsafe { Box::from_raw(program as usize as *mut Program) };
    // SAFETY: a live executable; no dispatch of it is pending (the runtime synchronises first).
    check_release("hsa_executable_destroy", unsafe { (state.hsa.hsa_executable_destroy)(program.executable) })
}

/// # Safety
/// `program` is a live value from `load` for `gpu`.
pub(crate) unsafe fn kernel(state: &State, gpu: &Gpu, program: u64, name: &str) -> BackendResult<u64> {
    // SAFETY: the caller's contract.
    let program = unsafe { &*(program as usize as *const Program) };
    let mut kernels = program.kernels.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(k) = kernels.iter().find(|k| k.meta.name == name) {
        return Ok(&**k as *const Kernel as u64);
    }
    let meta = program
        .metas
        .iter()
        .find(|m| m.name == name)
        .ok_or(BackendError::new(ErrorCode::NotFound, 0, "no kernel of that name in the code object"))?
        .clone();
    let symbol_name = CString::new(meta.symbol.as_str())
        .map_err(|_| invalid("a kernel symbol name in the metadata holds a NUL byte"))?;
    let hsa = state.hsa;
    let mut symbol = hsa_executable_symbol_t::default();
    // SAFETY: a live frozen executable, a NUL-terminated name, the agent it was loaded for.
    unsafe {
        (hsa.hsa_executable_get_symbol_by_name)(program.executable, symbol_name.as_ptr(), &gpu.agent, &mut symbol)
    }
    .result_in("hsa_executable_get_symbol_by_name")?;
    let read = |attribute: u32| -> BackendResult<u32> {
        let mut v = 0u32;
        // SAFETY: these attributes are u32 values.
        unsafe { (hsa.hsa_executable_symbol_get_info)(symbol, attribute, (&raw mut v).cast()) }
            .result_in("hsa_executable_symbol_get_info")?;
        Ok(v)
    };
    let mut object = 0u64;
    // SAFETY: KERNEL_OBJECT is a u64.
    unsafe {
        (hsa.hsa_executable_symbol_get_info)(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, (&raw mut object).cast())
    }
    .result_in("hsa_executable_symbol_get_info")?;
    let kernel = Box::new(Kernel {
        object,
        kernarg_size: read(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE)?,
        group_size: read(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE)?,
        private_size: read(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE)?,
        meta,
    });
    if kernel.kernarg_size < kernel.meta.kernarg_size {
        return Err(invalid("the kernel symbol's kernarg segment is smaller than its metadata says"));
    }
    let value = &*kernel as *const Kernel as u64;
    kernels.push(kernel);
    Ok(value)
}

/// The number of dimensions a launch uses (1–3): what `hidden_grid_dims` and the dispatch
/// packet's setup word both say.
pub(crate) fn dimensions(dims: &LaunchDims) -> u16 {
    if dims.grid[2] > 1 || dims.block[2] > 1 {
        3
    } else if dims.grid[1] > 1 || dims.block[1] > 1 {
        2
    } else {
        1
    }
}

/// A launch's kernel arguments, checked against the kernel's metadata before anything is
/// allocated: the dispatch's group segment (static + dynamic LDS) and where dynamic LDS
/// starts for each alignment asked.
pub(crate) struct ArgPlan {
    /// Static LDS of the kernel (bytes).
    static_group: u32,
    /// The dispatch packet's group segment size.
    pub(crate) group_segment: u32,
}

fn too_much_lds() -> BackendError {
    BackendError::new(ErrorCode::InvalidValue, 0, "the kernel's static and dynamic LDS sizes overflow")
}

/// Checks `args` against the kernel: their count, their sizes when given, and argument kinds
/// ordo can lay out; and the LDS arithmetic (a malformed code object's sizes are an error, not
/// an overflow).
pub(crate) fn plan(kernel: &Kernel, dims: &LaunchDims, args: &KernelArgs<'_>) -> BackendResult<ArgPlan> {
    let meta = &kernel.meta;
    let explicit: Vec<&ArgMeta> = meta.explicit().collect();
    if args.params().len() != explicit.len() {
        return Err(BackendError::new(
            ErrorCode::InvalidArgument,
            0,
            "the argument count differs from the kernel's (its code object metadata)",
        ));
    }
    if explicit.iter().any(|a| a.kind == ArgKind::Unsupported) {
        return Err(BackendError::new(
            ErrorCode::Unsupported,
            0,
            "the kernel takes an image, sampler, pipe or queue argument",
        ));
    }
    if let Some(sizes) = args.sizes() {
        if explicit.iter().zip(sizes).any(|(a, &size)| a.kind == ArgKind::Explicit && size != a.size as usize) {
            return Err(BackendError::new(
                ErrorCode::InvalidSize,
                0,
                "an argument size differs from the kernel's (its code object metadata)",
            ));
        }
    }
    let static_group = kernel.group_size.max(meta.group_fixed);
    // The dynamic LDS pointer sits after the static LDS, aligned (at most 256): every offset
    // below is within `static_group + 255`.
    let mut dynamic_at = static_group;
    for a in &meta.args {
        if let ArgKind::DynamicShared { align } = a.kind {
            dynamic_at = dynamic_at.max(static_group.checked_next_multiple_of(align).ok_or_else(too_much_lds)?);
        }
    }
    let group_segment = dynamic_at.checked_add(dims.shared_mem_bytes).ok_or_else(too_much_lds)?;
    Ok(ArgPlan { static_group, group_segment })
}

/// Writes one dispatch's kernel arguments into `out` (the kernarg buffer, of the symbol's
/// kernarg size): explicit arguments from the caller's pointers at the metadata's offsets,
/// hidden arguments of code object v5 from the launch, the rest zero.
///
/// # Safety
/// `plan` came from `plan` for these arguments; each explicit argument pointer is readable for
/// the metadata's size of that argument.
pub(crate) unsafe fn write_kernargs(
    kernel: &Kernel,
    dims: &LaunchDims,
    args: &KernelArgs<'_>,
    plan: &ArgPlan,
    out: &mut [u8],
) {
    out.fill(0);
    // A hidden or LDS value, little-endian, in the argument's bytes (at most 8). The metadata's
    // offsets and sizes lie within the segment (checked when parsed) and `out` is the symbol's
    // segment, at least as large (checked at lookup).
    fn put(out: &mut [u8], offset: u32, size: u32, value: u64) {
        let n = (size as usize).min(8);
        out[offset as usize..offset as usize + n].copy_from_slice(&value.to_le_bytes()[..n]);
    }
    let mut params = args.params().iter();
    for a in &kernel.meta.args {
        match a.kind {
            ArgKind::Explicit => {
                let Some(&src) = params.next() else { return };
                let dst = &mut out[a.offset as usize..(a.offset + a.size) as usize];
                // SAFETY: the caller's contract: the argument is readable for `a.size` bytes;
                // `dst` is exactly that long.
                unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>().cast_const(), dst.as_mut_ptr(), dst.len()) };
            }
            ArgKind::DynamicShared { align } => {
                params.next(); // a placeholder: its value is not read
                // No overflow: `plan` checked the same rounding.
                put(out, a.offset, a.size, u64::from(plan.static_group.next_multiple_of(align)));
            }
            ArgKind::Unsupported => {
                params.next(); // refused by `plan`
            }
            ArgKind::BlockCount(d) => put(out, a.offset, a.size, u64::from(dims.grid[d])),
            ArgKind::GroupSize(d) => put(out, a.offset, a.size, u64::from(dims.block[d])),
            ArgKind::Remainder(_) | ArgKind::HiddenZero => {}
            ArgKind::GridDims => put(out, a.offset, a.size, u64::from(dimensions(dims))),
            ArgKind::DynamicLdsSize => put(out, a.offset, a.size, u64::from(dims.shared_mem_bytes)),
        }
    }
}

/// `plan` and `write_kernargs` into a fresh buffer, for the tests.
///
/// # Safety
/// As `write_kernargs`.
#[cfg(test)]
unsafe fn kernargs(kernel: &Kernel, dims: &LaunchDims, args: &KernelArgs<'_>) -> BackendResult<(Vec<u8>, u32)> {
    let plan = plan(kernel, dims, args)?;
    let mut bytes = vec![0xa5u8; kernel.kernarg_size as usize];
    // SAFETY: the caller's contract.
    unsafe { write_kernargs(kernel, dims, args, &plan, &mut bytes) };
    Ok((bytes, plan.group_segment))
}

/// A kernel value as a reference.
///
/// # Safety
/// `kernel` is a live value from `kernel` (its program is loaded).
pub(crate) unsafe fn from_value<'a>(kernel: u64) -> &'a Kernel {
    debug_assert!(
        kernel != 0 && kernel % core::mem::align_of::<Kernel>() as u64 == 0,
        "from_value: not a kernel this backend made"
    );
    // SAFETY: the caller's contract.
    unsafe { &*(kernel as usize as *const Kernel) }
}

#[cfg(test)]
mod tests;
