// PIPELINE: cubin-format=isa cubin-chip=sm_90 cubin-features=+ptx80
// A tensor map over a device memref (nvgpu.tma.create.descriptor ->
// mgpuTensorMapEncodeTiledMemref): encoded by the driver, copied to device memory (an ordo
// allocation the teardown frees). Success is a clean exit: a refused map prints one line.
// CHECK: done
module attributes {gpu.container_module} {
  func.func @main() -> i32 {
    %c8 = arith.constant 8 : index
    %t0 = gpu.wait async
    %buf, %t1 = gpu.alloc async [%t0] () : memref<64x8xf32>
    gpu.wait [%t1]
    %unranked = memref.cast %buf : memref<64x8xf32> to memref<*xf32>
    %map = nvgpu.tma.create.descriptor %unranked box[%c8, %c8] : memref<*xf32> -> !nvgpu.tensormap.descriptor<tensor = memref<8x8xf32, 3>, swizzle = none, l2promo = none, oob = zero, interleave = none>
    vector.print str "done\n"
    %exit_code = arith.constant 0 : i32
    return %exit_code : i32
  }
}
