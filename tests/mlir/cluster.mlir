// PIPELINE: cubin-format=isa cubin-chip=sm_90 cubin-features=+ptx80
// A cluster launch (mgpuLaunchClusterKernel): 4 blocks in clusters of 2; each block writes its
// cluster's index times 10 plus its index within the cluster. Needs compute capability 9.0.
// CHECK: 0
// CHECK-NEXT: 1
// CHECK-NEXT: 10
// CHECK-NEXT: 11
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @where(%buf: memref<4xi32>) kernel {
      %block = gpu.block_id x
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %cluster = gpu.cluster_id x
        %inner = gpu.cluster_block_id x
        %ten = arith.constant 10 : index
        %scaled = arith.muli %cluster, %ten : index
        %v = arith.addi %scaled, %inner : index
        %v32 = arith.index_cast %v : index to i32
        memref.store %v32, %buf[%block] : memref<4xi32>
      }
      gpu.return
    }
  }
  func.func @main() -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %host = memref.alloc() : memref<4xi32>
    %t0 = gpu.wait async
    %buf, %t1 = gpu.alloc async [%t0] () : memref<4xi32>
    %t2 = gpu.launch_func async [%t1] @kernels::@where clusters in (%c2, %c1, %c1) blocks in (%c4, %c1, %c1) threads in (%c32, %c1, %c1) args(%buf : memref<4xi32>)
    %t3 = gpu.memcpy async [%t2] %host, %buf : memref<4xi32>, memref<4xi32>
    %t4 = gpu.dealloc async [%t3] %buf : memref<4xi32>
    gpu.wait [%t4]
    %a = memref.load %host[%c0] : memref<4xi32>
    vector.print %a : i32
    %b = memref.load %host[%c1] : memref<4xi32>
    vector.print %b : i32
    %c = memref.load %host[%c2] : memref<4xi32>
    vector.print %c : i32
    %d = memref.load %host[%c3] : memref<4xi32>
    vector.print %d : i32
    memref.dealloc %host : memref<4xi32>
    %exit_code = arith.constant 0 : i32
    return %exit_code : i32
  }
}
