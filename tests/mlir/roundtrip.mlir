// A memory round trip: host -> device copy, a kernel adding 1, device -> host copy, printed;
// two launches on one stream; the module is unloaded by MLIR's global destructor at exit.
// CHECK: 1.5
// CHECK-NEXT: 2.5
// CHECK-NEXT: 16.5
// CHECK-NEXT: 3.5
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @add_one(%buf: memref<16xf32>) kernel {
      %tid = gpu.thread_id x
      %v = memref.load %buf[%tid] : memref<16xf32>
      %one = arith.constant 1.0 : f32
      %r = arith.addf %v, %one : f32
      memref.store %r, %buf[%tid] : memref<16xf32>
      gpu.return
    }
  }
  func.func @main() -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c15 = arith.constant 15 : index
    %c16 = arith.constant 16 : index
    %half = arith.constant -0.5 : f32
    %host = memref.alloc() : memref<16xf32>
    scf.for %i = %c0 to %c16 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      %v = arith.addf %f, %half : f32
      memref.store %v, %host[%i] : memref<16xf32>
    }
    %t0 = gpu.wait async
    %buf, %t1 = gpu.alloc async [%t0] () : memref<16xf32>
    %t2 = gpu.memcpy async [%t1] %buf, %host : memref<16xf32>, memref<16xf32>
    %t3 = gpu.launch_func async [%t2] @kernels::@add_one blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%buf : memref<16xf32>)
    %t4 = gpu.launch_func async [%t3] @kernels::@add_one blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%buf : memref<16xf32>)
    %t5 = gpu.memcpy async [%t4] %host, %buf : memref<16xf32>, memref<16xf32>
    %t6 = gpu.dealloc async [%t5] %buf : memref<16xf32>
    gpu.wait [%t6]
    %a = memref.load %host[%c0] : memref<16xf32>
    vector.print %a : f32
    %b = memref.load %host[%c1] : memref<16xf32>
    vector.print %b : f32
    %c = memref.load %host[%c15] : memref<16xf32>
    vector.print %c : f32
    %c2 = arith.constant 2 : index
    %d = memref.load %host[%c2] : memref<16xf32>
    vector.print %d : f32
    memref.dealloc %host : memref<16xf32>
    %exit_code = arith.constant 0 : i32
    return %exit_code : i32
  }
}
