// Host memory registered as a ranked memref (gpu.host_register: mgpuMemHostRegisterMemRef), used
// by kernels in place through the mapping, then unregistered (mgpuMemHostUnregisterMemRef).
// CHECK: 11
// CHECK-NEXT: 12
// CHECK-NEXT: 26
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @add_ten(%buf: memref<16xi32>) kernel {
      %tid = gpu.thread_id x
      %v = memref.load %buf[%tid] : memref<16xi32>
      %ten = arith.constant 10 : i32
      %r = arith.addi %v, %ten : i32
      memref.store %r, %buf[%tid] : memref<16xi32>
      gpu.return
    }
  }
  func.func @main() -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c15 = arith.constant 15 : index
    %c16 = arith.constant 16 : index
    %host = memref.alloc() : memref<16xi32>
    scf.for %i = %c0 to %c16 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %one = arith.constant 1 : i32
      %v = arith.addi %ii, %one : i32
      memref.store %v, %host[%i] : memref<16xi32>
    }
    %cast = memref.cast %host : memref<16xi32> to memref<*xi32>
    gpu.host_register %cast : memref<*xi32>
    gpu.launch_func @kernels::@add_ten blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%host : memref<16xi32>)
    gpu.host_unregister %cast : memref<*xi32>
    %a = memref.load %host[%c0] : memref<16xi32>
    vector.print %a : i32
    %b = memref.load %host[%c1] : memref<16xi32>
    vector.print %b : i32
    %c = memref.load %host[%c15] : memref<16xi32>
    vector.print %c : i32
    memref.dealloc %host : memref<16xi32>
    %exit_code = arith.constant 0 : i32
    return %exit_code : i32
  }
}
