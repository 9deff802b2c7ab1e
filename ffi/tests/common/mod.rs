//! What the foreign-ABI tests share.

use ordo_core::BackendKind;

/// Whether the initialised default runtime has a CUDA device, so that `mgpu*` calls may be made
/// (the first `mgpu*` call of a process without one exits). Without one, says so, and fails
/// when `ORDO_REQUIRE_GPU=1`.
pub fn cuda_device_for_mgpu() -> bool {
    let rt = ordo::runtime();
    let cuda = (0..rt.platform_count().unwrap())
        .filter_map(|i| rt.platform(i).ok())
        .any(|p| rt.platform_info(p).is_ok_and(|i| i.kind == BackendKind::Cuda && i.device_count > 0));
    if !cuda {
        assert_ne!(
            std::env::var("ORDO_REQUIRE_GPU").as_deref(),
            Ok("1"),
            "ORDO_REQUIRE_GPU=1 but there is no CUDA device"
        );
        println!("skipped the mgpu* part: no CUDA device");
    }
    cuda
}
