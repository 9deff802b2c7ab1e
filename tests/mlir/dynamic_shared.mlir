// A launch with 96 KiB of dynamic shared memory (above the 48 KiB default, so the function's
// limit is raised first): each thread writes to the far end of shared memory and reads it back.
// CHECK: 42
// CHECK-NEXT: 73
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @far(%out: memref<32xi32>) kernel {
      %tid = gpu.thread_id x
      %shared = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %c0 = arith.constant 0 : index
      %offset = arith.constant 97000 : index
      %view = memref.view %shared[%offset][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32xi32, #gpu.address_space<workgroup>>
      %tid32 = arith.index_cast %tid : index to i32
      %c42 = arith.constant 42 : i32
      %v = arith.addi %tid32, %c42 : i32
      memref.store %v, %view[%tid] : memref<32xi32, #gpu.address_space<workgroup>>
      gpu.barrier
      %r = memref.load %view[%tid] : memref<32xi32, #gpu.address_space<workgroup>>
      memref.store %r, %out[%tid] : memref<32xi32>
      gpu.return
    }
  }
  func.func @main() -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c31 = arith.constant 31 : index
    %c32 = arith.constant 32 : index
    %smem = arith.constant 98304 : i32
    %host = memref.alloc() : memref<32xi32>
    %t0 = gpu.wait async
    %buf, %t1 = gpu.alloc async [%t0] () : memref<32xi32>
    %t2 = gpu.launch_func async [%t1] @kernels::@far blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) dynamic_shared_memory_size %smem args(%buf : memref<32xi32>)
    %t3 = gpu.memcpy async [%t2] %host, %buf : memref<32xi32>, memref<32xi32>
    %t4 = gpu.dealloc async [%t3] %buf : memref<32xi32>
    gpu.wait [%t4]
    %a = memref.load %host[%c0] : memref<32xi32>
    vector.print %a : i32
    %b = memref.load %host[%c31] : memref<32xi32>
    vector.print %b : i32
    %exit_code = arith.constant 0 : i32
    return %exit_code : i32
  }
}
