//! Code-object checks, metadata reading and kernel-argument layout, without HSA.

use std::ffi::c_void;

use super::*;

#[test]
fn builtin_code_objects_parse() {
    for image in [crate::BUILTIN_GFX90A, crate::BUILTIN_GFX1030] {
        let kernels = parse(image).unwrap();
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        for n in ["vector_add_f32", "reduce_sum_f32", "empty", "mixed_args"] {
            assert!(names.contains(&n), "{n} missing from {names:?}");
        }
        let add = kernels.iter().find(|k| k.name == "vector_add_f32").unwrap();
        assert_eq!(add.symbol, "vector_add_f32.kd");
        let explicit: Vec<(u32, u32)> = add.explicit().map(|a| (a.offset, a.size)).collect();
        assert_eq!(explicit, [(0, 8), (8, 8), (16, 8), (24, 4)]);
        assert!(add.args.iter().any(|a| a.kind == ArgKind::BlockCount(0)));
        let mixed = kernels.iter().find(|k| k.name == "mixed_args").unwrap();
        let kinds: Vec<ArgKind> = mixed.explicit().map(|a| a.kind).collect();
        assert_eq!(kinds.len(), 6);
        assert_eq!(kinds[3], ArgKind::DynamicShared { align: 4 });
        assert_eq!(parse(image).unwrap(), kernels, "parsing is deterministic");
    }
}

#[test]
fn truncated_and_malformed_images_are_refused() {
    let image = crate::BUILTIN_GFX90A;
    for len in (0..image.len()).step_by(61) {
        assert!(parse(&image[..len]).is_err(), "a {len}-byte prefix parsed");
    }
    assert!(parse(b"\x7fELF garbage").is_err());
    assert!(parse(&[0u8; 4096]).is_err());
    // Another machine: flip e_machine.
    let mut other = image.to_vec();
    other[18] = 62; // EM_X86_64
    assert_eq!(parse(&other), Err("an ELF file for another machine than AMDGPU"));
    // A corrupted metadata note: every byte of the msgpack replaced.
    let mut bad = image.to_vec();
    let at = image.windows(14).position(|w| w == b"amdhsa.kernels").unwrap();
    bad[at..at + 14].copy_from_slice(b"amdhsa.kernelz");
    assert_eq!(parse(&bad), Err("AMDGPU metadata lists no kernels"));
}

#[test]
fn lds_sizes_from_a_malformed_code_object_are_an_error_not_an_overflow() {
    let kernels = parse(crate::BUILTIN_GFX90A).unwrap();
    let mut meta = kernels.into_iter().find(|k| k.name == "mixed_args").unwrap();
    meta.group_fixed = u32::MAX - 1;
    let kernel = Kernel { object: 1, kernarg_size: meta.kernarg_size, group_size: 0, private_size: 0, meta };
    let x = 0u64;
    let params = [(&raw const x).cast_mut().cast::<c_void>(); 6];
    let args = KernelArgs::unsized_params(&params).unwrap();
    let dims = LaunchDims { grid: [1, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 };
    assert_eq!(plan(&kernel, &dims, &args).err().map(|e| e.code), Some(ErrorCode::InvalidValue));
    let mut kernel = kernel;
    kernel.meta.group_fixed = 64;
    let big = LaunchDims { shared_mem_bytes: u32::MAX, ..dims };
    assert_eq!(plan(&kernel, &big, &args).err().map(|e| e.code), Some(ErrorCode::InvalidValue));
    assert_eq!(plan(&kernel, &dims, &args).unwrap().group_segment, 64);
}

#[test]
fn bundles_give_the_code_object_of_the_isa() {
    let bundle = crate::BUILTIN_BUNDLE;
    assert_eq!(select(bundle, "gfx90a"), Ok(crate::BUILTIN_GFX90A));
    assert_eq!(select(bundle, "gfx1030"), Ok(crate::BUILTIN_GFX1030));
    assert_eq!(select(bundle, "gfx90a:sramecc+:xnack-"), Ok(crate::BUILTIN_GFX90A));
    assert!(select(bundle, "gfx942").is_err());
    assert_eq!(select(crate::BUILTIN_GFX90A, "gfx1030"), Ok(crate::BUILTIN_GFX90A), "a plain code object passes");
    for len in (BUNDLE_MAGIC.len()..bundle.len()).step_by(97) {
        assert!(select(&bundle[..len], "gfx1030").is_err(), "a {len}-byte prefix selected");
    }
}

#[test]
fn kernel_arguments_follow_the_metadata() {
    let kernels = parse(crate::BUILTIN_GFX90A).unwrap();
    let meta = kernels.into_iter().find(|k| k.name == "mixed_args").unwrap();
    let kernel = Kernel { object: 1, kernarg_size: meta.kernarg_size, group_size: 0, private_size: 0, meta };
    let (scale, out, offset, lds, tag, n) = (2.5f32, 0x1000u64, -7i64, 0u32, 3i8, 64u32);
    let params = [
        (&raw const scale).cast_mut().cast::<c_void>(),
        (&raw const out).cast_mut().cast(),
        (&raw const offset).cast_mut().cast(),
        (&raw const lds).cast_mut().cast(),
        (&raw const tag).cast_mut().cast(),
        (&raw const n).cast_mut().cast(),
    ];
    let dims = LaunchDims { grid: [4, 1, 1], block: [16, 1, 1], shared_mem_bytes: 64 };
    // SAFETY: each pointer is readable for the argument's size.
    let (bytes, group) = unsafe { kernargs(&kernel, &dims, &KernelArgs::unsized_params(&params).unwrap()) }.unwrap();
    let at = |i: usize| kernel.meta.explicit().nth(i).unwrap().offset as usize;
    assert_eq!(bytes[at(0)..at(0) + 4], scale.to_le_bytes());
    assert_eq!(bytes[at(1)..at(1) + 8], out.to_le_bytes());
    assert_eq!(bytes[at(2)..at(2) + 8], offset.to_le_bytes());
    assert_eq!(bytes[at(4)], 3);
    assert_eq!(bytes[at(5)..at(5) + 4], n.to_le_bytes());
    let hidden = |k: ArgKind| kernel.meta.args.iter().find(|a| a.kind == k).unwrap().offset as usize;
    assert_eq!(bytes[hidden(ArgKind::BlockCount(0))..][..4], 4u32.to_le_bytes());
    assert_eq!(bytes[hidden(ArgKind::GroupSize(0))..][..2], 16u16.to_le_bytes());
    assert_eq!(bytes[hidden(ArgKind::GridDims)..][..2], 1u16.to_le_bytes());
    assert_eq!(group, 64);
    // Wrong count and wrong sizes are refused.
    let short = KernelArgs::unsized_params(&params[..5]).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { kernargs(&kernel, &dims, &short) }.unwrap_err().code, ErrorCode::InvalidArgument);
    let sizes = [4, 8, 8, 4, 1, 8];
    // SAFETY: as above (the size check fails before any read of the last argument).
    let e = unsafe { kernargs(&kernel, &dims, &KernelArgs::new(&params, &sizes).unwrap()) }.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidSize);
}
