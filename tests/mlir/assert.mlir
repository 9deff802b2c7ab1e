// A kernel whose assertion fails in one thread: the driver prints the assertion, ordo one line
// for the first call that fails after it (the device is lost then, and nothing after it is
// printed again); the program still returns 0 from main. Checked on stderr, not stdout.
// CHECK: Assertion `thread 5 must not get here` failed.
// CHECK-NEXT: failed with 'device lost: CUDA_ERROR_ASSERT
// CHECK-NOT: failed with
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @check(%buf: memref<32xi32>) kernel {
      %tid = gpu.thread_id x
      %c5 = arith.constant 5 : index
      %ok = arith.cmpi ne, %tid, %c5 : index
      cf.assert %ok, "thread 5 must not get here"
      %tid32 = arith.index_cast %tid : index to i32
      memref.store %tid32, %buf[%tid] : memref<32xi32>
      gpu.return
    }
  }
  func.func @main() -> i32 {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %t0 = gpu.wait async
    %buf, %t1 = gpu.alloc async [%t0] () : memref<32xi32>
    %t2 = gpu.launch_func async [%t1] @kernels::@check blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%buf : memref<32xi32>)
    %t3 = gpu.dealloc async [%t2] %buf : memref<32xi32>
    gpu.wait [%t3]
    %exit_code = arith.constant 0 : i32
    return %exit_code : i32
  }
}
