// memset32 and memset16 on device memory, read back.
// CHECK: 7
// CHECK-NEXT: 7
// CHECK-NEXT: 513
// CHECK-NEXT: 513
module attributes {gpu.container_module} {
  func.func @main() -> i32 {
    %c0 = arith.constant 0 : index
    %c7 = arith.constant 7 : index
    %c31 = arith.constant 31 : index
    %v32 = arith.constant 7 : i32
    %v16 = arith.constant 513 : i16
    %h32 = memref.alloc() : memref<8xi32>
    %h16 = memref.alloc() : memref<32xi16>
    %t0 = gpu.wait async
    %d32, %t1 = gpu.alloc async [%t0] () : memref<8xi32>
    %d16, %t2 = gpu.alloc async [%t1] () : memref<32xi16>
    %t3 = gpu.memset async [%t2] %d32, %v32 : memref<8xi32>, i32
    %t4 = gpu.memset async [%t3] %d16, %v16 : memref<32xi16>, i16
    %t5 = gpu.memcpy async [%t4] %h32, %d32 : memref<8xi32>, memref<8xi32>
    %t6 = gpu.memcpy async [%t5] %h16, %d16 : memref<32xi16>, memref<32xi16>
    %t7 = gpu.dealloc async [%t6] %d32 : memref<8xi32>
    %t8 = gpu.dealloc async [%t7] %d16 : memref<32xi16>
    gpu.wait [%t8]
    %a = memref.load %h32[%c0] : memref<8xi32>
    vector.print %a : i32
    %b = memref.load %h32[%c7] : memref<8xi32>
    vector.print %b : i32
    %c = memref.load %h16[%c0] : memref<32xi16>
    %ce = arith.extui %c : i16 to i32
    vector.print %ce : i32
    %d = memref.load %h16[%c31] : memref<32xi16>
    %de = arith.extui %d : i16 to i32
    vector.print %de : i32
    %exit_code = arith.constant 0 : i32
    return %exit_code : i32
  }
}
