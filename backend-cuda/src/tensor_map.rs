//! Tensor maps for the Hopper tensor memory accelerator (`cuTensorMapEncodeTiled`): a host-side
//! encoding with no runtime object of its own, reached through `Backend::tensor_map_encode_tiled`
//! (`Runtime::tensor_map_encode_tiled`; the MLIR ABI's `mgpuTensorMapEncodeTiled*` use it).

use cudarc::driver::sys::{
    self, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
    CUtensorMapSwizzle,
};
use ordo_core::{BackendError, ErrorCode};

use crate::conv::check;

/// The tensor map's description and its encoding (the types of `ordo_core`, named as before).
pub use ordo_core::{TensorMap, TensorMapTiled as TiledTensor};

fn unknown(what: &'static str) -> BackendError {
    BackendError::new(ErrorCode::InvalidEnumeration, 0, what)
}

fn data_type(v: u32) -> Result<CUtensorMapDataType, BackendError> {
    use CUtensorMapDataType::*;
    Ok(match v {
        0 => CU_TENSOR_MAP_DATA_TYPE_UINT8,
        1 => CU_TENSOR_MAP_DATA_TYPE_UINT16,
        2 => CU_TENSOR_MAP_DATA_TYPE_UINT32,
        3 => CU_TENSOR_MAP_DATA_TYPE_INT32,
        4 => CU_TENSOR_MAP_DATA_TYPE_UINT64,
        5 => CU_TENSOR_MAP_DATA_TYPE_INT64,
        6 => CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        7 => CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        8 => CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        9 => CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        10 => CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
        11 => CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
        12 => CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
        _ => return Err(unknown("unknown tensor-map data type")),
    })
}

/// Encodes a tiled tensor map. `InvalidEnumeration` for an unknown data type, interleave,
/// swizzle, L2 promotion or fill; `InvalidValue` for a rank outside 1..=5 or slices of the
/// wrong lengths; `Unsupported` when the driver is missing or too old; the driver's own error
/// for a map it refuses (misaligned address or strides, a box too large).
pub fn encode_tiled(t: &TiledTensor<'_>) -> Result<TensorMap, BackendError> {
    let rank = t.global_dim.len();
    if !t.shape_is_valid() {
        return Err(BackendError::new(ErrorCode::InvalidValue, 0, "tensor-map rank or dimension lists are wrong"));
    }
    let dtype = data_type(t.data_type)?;
    let interleave = match t.interleave {
        0 => CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
        1 => CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_16B,
        2 => CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_32B,
        _ => return Err(unknown("unknown tensor-map interleave")),
    };
    let swizzle = match t.swizzle {
        0 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        1 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        2 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        3 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        _ => return Err(unknown("unknown tensor-map swizzle")),
    };
    let l2 = match t.l2_promotion {
        0 => CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
        1 => CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
        2 => CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        3 => CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        _ => return Err(unknown("unknown tensor-map L2 promotion")),
    };
    let oob = match t.oob_fill {
        0 => CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        1 => CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
        _ => return Err(unknown("unknown tensor-map out-of-bounds fill")),
    };
    // SAFETY: `is_culib_present` only tries to open candidate library names.
    if !unsafe { sys::is_culib_present() } {
        return Err(BackendError::new(ErrorCode::Unsupported, 0, "the CUDA driver library was not found"));
    }
    // SAFETY: the library is present, so `culib` loads it; only the symbol's presence is checked.
    if unsafe { sys::culib().get::<*const ()>(b"cuTensorMapEncodeTiled") }.is_err() {
        return Err(BackendError::new(ErrorCode::Unsupported, 0, "the CUDA driver is too old for tensor maps"));
    }
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: every array holds as many entries as the rank asks for (checked above); the map is
    // a valid out-parameter; the driver only encodes (it does not touch the tensor's memory).
    check("cuTensorMapEncodeTiled", unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            dtype,
            rank as u32,
            t.global_address as *mut core::ffi::c_void,
            t.global_dim.as_ptr(),
            t.global_strides.as_ptr(),
            t.box_dim.as_ptr(),
            t.element_strides.as_ptr(),
            interleave,
            swizzle,
            l2,
            oob,
        )
    })?;
    Ok(map.opaque)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor<'a>(dims: &'a [u64], strides: &'a [u64], boxes: &'a [u32], steps: &'a [u32]) -> TiledTensor<'a> {
        TiledTensor {
            data_type: 7,
            global_address: 0x1000,
            global_dim: dims,
            global_strides: strides,
            box_dim: boxes,
            element_strides: steps,
            interleave: 0,
            swizzle: 0,
            l2_promotion: 0,
            oob_fill: 0,
        }
    }

    /// Ranks, list lengths and enumeration values are checked before the driver is looked for.
    #[test]
    fn bad_descriptions_are_refused_before_the_driver() {
        let code = |t: &TiledTensor<'_>| encode_tiled(t).unwrap_err().code;
        assert_eq!(code(&tensor(&[], &[], &[], &[])), ErrorCode::InvalidValue);
        assert_eq!(code(&tensor(&[8, 8], &[], &[8, 8], &[1, 1])), ErrorCode::InvalidValue);
        assert_eq!(code(&tensor(&[1; 6], &[32; 5], &[1; 6], &[1; 6])), ErrorCode::InvalidValue);
        let good = tensor(&[8, 8], &[32], &[8, 8], &[1, 1]);
        assert_eq!(code(&TiledTensor { data_type: 99, ..good }), ErrorCode::InvalidEnumeration);
        assert_eq!(code(&TiledTensor { interleave: 3, ..good }), ErrorCode::InvalidEnumeration);
        assert_eq!(code(&TiledTensor { swizzle: 9, ..good }), ErrorCode::InvalidEnumeration);
        assert_eq!(code(&TiledTensor { l2_promotion: 4, ..good }), ErrorCode::InvalidEnumeration);
        assert_eq!(code(&TiledTensor { oob_fill: 2, ..good }), ErrorCode::InvalidEnumeration);
        assert_eq!(TiledTensor::element_bytes(7), Some(4));
        assert_eq!(TiledTensor::element_bytes(13), None);
    }
}
