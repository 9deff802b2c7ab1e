// Two streams, each filling its own buffer, joined for a kernel that needs both: the lowering
// makes events on each (mgpuEventCreate, mgpuEventRecord), has the joined stream wait for them
// (mgpuStreamWaitEvent) and destroys them (mgpuEventDestroy).
// CHECK: 15
// CHECK-NEXT: 15
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @add(%a: memref<64xi32>, %b: memref<64xi32>) kernel {
      %tid = gpu.thread_id x
      %x = memref.load %a[%tid] : memref<64xi32>
      %y = memref.load %b[%tid] : memref<64xi32>
      %r = arith.addi %x, %y : i32
      memref.store %r, %a[%tid] : memref<64xi32>
      gpu.return
    }
  }
  func.func @main() -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c63 = arith.constant 63 : index
    %c64 = arith.constant 64 : index
    %five = arith.constant 5 : i32
    %ten = arith.constant 10 : i32
    %host = memref.alloc() : memref<64xi32>
    %ta = gpu.wait async
    %bufa, %ta1 = gpu.alloc async [%ta] () : memref<64xi32>
    %ta2 = gpu.memset async [%ta1] %bufa, %five : memref<64xi32>, i32
    %tb = gpu.wait async
    %bufb, %tb1 = gpu.alloc async [%tb] () : memref<64xi32>
    %tb2 = gpu.memset async [%tb1] %bufb, %ten : memref<64xi32>, i32
    %tj = gpu.wait async [%ta2, %tb2]
    %tj1 = gpu.launch_func async [%tj] @kernels::@add blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%bufa : memref<64xi32>, %bufb : memref<64xi32>)
    %tj2 = gpu.memcpy async [%tj1] %host, %bufa : memref<64xi32>, memref<64xi32>
    %tj3 = gpu.dealloc async [%tj2] %bufa : memref<64xi32>
    %tj4 = gpu.dealloc async [%tj3] %bufb : memref<64xi32>
    gpu.wait [%tj4]
    %a = memref.load %host[%c0] : memref<64xi32>
    vector.print %a : i32
    %b = memref.load %host[%c63] : memref<64xi32>
    vector.print %b : i32
    %exit_code = arith.constant 0 : i32
    return %exit_code : i32
  }
}
