// A host-shared (managed) allocation written by a kernel and read by the host after a wait,
// then a synchronous launch (the five-call sequence: get function, stream create, launch,
// stream synchronize, stream destroy) repeated 100 times on it.
// CHECK: 3
// CHECK-NEXT: 103
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @inc(%buf: memref<32xi32>) kernel {
      %tid = gpu.thread_id x
      %v = memref.load %buf[%tid] : memref<32xi32>
      %one = arith.constant 1 : i32
      %r = arith.addi %v, %one : i32
      memref.store %r, %buf[%tid] : memref<32xi32>
      gpu.return
    }
  }
  func.func @main() -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c31 = arith.constant 31 : index
    %c32 = arith.constant 32 : index
    %c100 = arith.constant 100 : index
    %two = arith.constant 2 : i32
    %buf = gpu.alloc host_shared () : memref<32xi32>
    %t1 = gpu.wait async
    %t2 = gpu.memset async [%t1] %buf, %two : memref<32xi32>, i32
    %t3 = gpu.launch_func async [%t2] @kernels::@inc blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%buf : memref<32xi32>)
    gpu.wait [%t3]
    %a = memref.load %buf[%c0] : memref<32xi32>
    vector.print %a : i32
    scf.for %i = %c0 to %c100 step %c1 {
      gpu.launch_func @kernels::@inc blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%buf : memref<32xi32>)
    }
    %b = memref.load %buf[%c31] : memref<32xi32>
    vector.print %b : i32
    %exit_code = arith.constant 0 : i32
    return %exit_code : i32
  }
}
