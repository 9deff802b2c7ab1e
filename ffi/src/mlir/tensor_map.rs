//! Tensor maps (`mgpuTensorMapEncodeTiled` and the memref form MLIR emits).

use super::*;

/// `mgpuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType, u32 rank, ptr address,
/// const u64 *globalDim, const u64 *globalStrides, const u32 *boxDim, const u32 *elementStrides,
/// interleave, swizzle, l2Promotion, oobFill)`: `cuTensorMapEncodeTiled` into `map` (128 bytes).
///
/// # Safety
/// `map` is writable for 128 bytes; the arrays hold `rank` entries (`globalStrides`: `rank - 1`).
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the ABI's signature
pub unsafe extern "C" fn mgpuTensorMapEncodeTiled(
    map: *mut c_void,
    data_type: u32,
    rank: u32,
    address: *mut c_void,
    global_dim: *const u64,
    global_strides: *const u64,
    box_dim: *const u32,
    element_strides: *const u32,
    interleave: u32,
    swizzle: u32,
    l2_promotion: u32,
    oob_fill: u32,
) {
    contain_or((), || {
        let r = rank as usize;
        if map.is_null()
            || global_dim.is_null()
            || box_dim.is_null()
            || element_strides.is_null()
            || !(1..=5).contains(&r)
            || (r > 1 && global_strides.is_null())
        {
            let e = ordo_core::Error::new(ErrorCode::InvalidValue, "null array or rank outside 1..=5");
            return report("cuTensorMapEncodeTiled", &e);
        }
        // SAFETY: the caller's contract (lengths from the rank, checked non-null above).
        let tensor = unsafe {
            ordo_core::TensorMapTiled {
                data_type,
                global_address: from_ptr(address),
                global_dim: core::slice::from_raw_parts(global_dim, r),
                global_strides: if r > 1 { core::slice::from_raw_parts(global_strides, r - 1) } else { &[] },
                box_dim: core::slice::from_raw_parts(box_dim, r),
                element_strides: core::slice::from_raw_parts(element_strides, r),
                interleave,
                swizzle,
                l2_promotion,
                oob_fill,
            }
        };
        let Some(d) = device() else { return };
        match runtime().tensor_map_encode_tiled(d, &tensor) {
            // SAFETY: the caller's contract (128 writable bytes).
            Ok(encoded) => unsafe { core::ptr::copy_nonoverlapping(encoded.as_ptr(), map.cast::<u64>(), 16) },
            Err(e) => report("cuTensorMapEncodeTiled", &e),
        }
    })
}

/// `mgpuTensorMapEncodeTiledMemref(i64 rank, ptr descriptor, i64 dataType, i64 interleave,
/// i64 swizzle, i64 l2Promotion, i64 oobFill, ptr boxDims) -> ptr`: a tensor map over a ranked
/// memref in device memory (`nvgpu.tma.create.descriptor`), encoded and copied to device memory,
/// whose address is returned for kernels to read. That memory is an ordo allocation: the
/// teardown frees it. Null on failure (one line on stderr).
///
/// # Safety
/// `descriptor` points to a ranked memref descriptor of `rank`; `box_dims` holds `rank` values.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the ABI's signature
pub unsafe extern "C" fn mgpuTensorMapEncodeTiledMemref(
    rank: i64,
    descriptor: *const c_void,
    data_type: i64,
    interleave: i64,
    swizzle: i64,
    l2_promotion: i64,
    oob_fill: i64,
    box_dims: *const i64,
) -> *mut c_void {
    contain_or(core::ptr::null_mut(), || {
        let fail = |why: &'static str| {
            report("cuTensorMapEncodeTiled", &ordo_core::Error::new(ErrorCode::InvalidValue, why));
            core::ptr::null_mut()
        };
        let r = match usize::try_from(rank) {
            Ok(r) if (1..=5).contains(&r) && !descriptor.is_null() && !box_dims.is_null() => r,
            _ => return fail("rank outside 1..=5, or a null descriptor or box"),
        };
        let small = |v: i64| u32::try_from(v).ok();
        let (Some(dt), Some(il), Some(sw), Some(l2), Some(oob)) =
            (small(data_type), small(interleave), small(swizzle), small(l2_promotion), small(oob_fill))
        else {
            return fail("a tensor-map enumeration is out of range");
        };
        let Some(elem) = ordo_core::TensorMapTiled::element_bytes(dt) else {
            return fail("unknown tensor-map data type");
        };
        let words = descriptor.cast::<i64>();
        // SAFETY: the caller's contract: two pointers, the offset, `rank` sizes, `rank` strides;
        // `box_dims` holds `rank` values.
        let (aligned, offset, sizes, strides, boxes) = unsafe {
            (
                *descriptor.cast::<*mut u8>().add(1),
                *words.add(2),
                core::slice::from_raw_parts(words.add(3), r),
                core::slice::from_raw_parts(words.add(3 + r), r),
                core::slice::from_raw_parts(box_dims, r),
            )
        };
        // The driver lists dimensions innermost first; a memref outermost first.
        let (mut dims, mut byte_strides, mut box_dim) = ([0u64; 5], [0u64; 5], [0u32; 5]);
        for i in 0..r {
            let j = r - 1 - i;
            let (Ok(size), Ok(stride), Ok(b)) =
                (u64::try_from(sizes[j]), u64::try_from(strides[j]), u32::try_from(boxes[j]))
            else {
                return fail("a negative size, stride or box dimension");
            };
            dims[i] = size;
            byte_strides[i] = stride.saturating_mul(elem);
            box_dim[i] = b;
        }
        let Some(start) = u64::try_from(offset).ok().and_then(|o| o.checked_mul(elem)) else {
            return fail("a negative offset");
        };
        let tensor = ordo_core::TensorMapTiled {
            data_type: dt,
            global_address: (aligned as u64).wrapping_add(start),
            global_dim: &dims[..r],
            global_strides: &byte_strides[1..r],
            box_dim: &box_dim[..r],
            element_strides: &[1; 5][..r],
            interleave: il,
            swizzle: sw,
            l2_promotion: l2,
            oob_fill: oob,
        };
        let Some(d) = device() else { return core::ptr::null_mut() };
        let rt = runtime();
        let encoded = match rt.tensor_map_encode_tiled(d, &tensor) {
            Ok(m) => m,
            Err(e) => {
                report("cuTensorMapEncodeTiled", &e);
                return core::ptr::null_mut();
            }
        };
        let bytes: [u8; 128] = map_bytes(encoded);
        let placed = rt.mem_alloc(d, MemKind::Device, bytes.len()).and_then(|p| {
            // A copy that fails frees the memory it was for.
            rt.copy_to_device(p, &bytes).map(|()| p.0).inspect_err(|_| {
                let _ = rt.mem_free(p);
            })
        });
        created("cuMemAlloc", placed)
    })
}

/// The map's bytes, in memory order.
pub(super) fn map_bytes(map: [u64; 16]) -> [u8; 128] {
    let mut bytes = [0u8; 128];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(map) {
        chunk.copy_from_slice(&word.to_ne_bytes());
    }
    bytes
}

/// `mgpuSetDefaultDevice(i32 device)`: the CUDA device this thread's later calls use.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuSetDefaultDevice(device: i32) {
    contain_or((), || {
        ensure_init();
        match u32::try_from(device) {
            Ok(d) if d < cuda_device_count() => DEFAULT_DEVICE.with(|c| c.set(d)),
            _ => report(
                "cuDeviceGet",
                &ordo_core::Error::new(ErrorCode::InvalidValue, "no CUDA device with that ordinal"),
            ),
        }
    })
}
