// Inline PTX that CUDA C++ has no intrinsic for: the fp16 tensor-core mma.sync, ldmatrix and
// cp.async. One place for them, so that every kernel spells the same instruction the same way.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace kiln::cuda::ptx {

// c += a b for a 16 x 16 fp16 A (row-major fragment, 4 registers of 2 halves), a 16 x 8 fp16 B
// (column fragment, 2 registers) and a 16 x 8 fp32 C. Lane l holds, with g = l / 4, t = l % 4:
// a[0] A(g, 2t..2t+1), a[1] A(g+8, 2t..), a[2] A(g, 8+2t..), a[3] A(g+8, 8+2t..); b[0] B(2t..2t+1, g),
// b[1] B(8+2t.., g); c[0..1] C(g, 2t..2t+1), c[2..3] C(g+8, 2t..2t+1).
__device__ __forceinline__ void mma_m16n8k16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The same with K = 8: a[0] A(g, 2t..2t+1), a[1] A(g+8, 2t..); b[0] B(2t..2t+1, g); C as above.
__device__ __forceinline__ void mma_m16n8k8(float (&c)[4], const uint32_t (&a)[2], uint32_t b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(b));
}

// Four 8 x 8 fp16 matrices from shared memory: lanes 8i .. 8i + 7 give the addresses of matrix
// i's rows (16 bytes each); lane l receives in r[i] row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1
// of matrix i (with _trans: of its transpose).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}
// Two of them: lanes 0 .. 15 give the row addresses.
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* row) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(s));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

// 16 bytes global -> shared without passing through registers; bytes = 0 stores zeros.
__device__ __forceinline__ void copy_async16(void* shared, const void* global, int bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(global), "r"(bytes) : "memory");
}
// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most `pending` committed groups are still in flight (this thread's copies only:
// a barrier makes the others' visible).
template <int pending>
__device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}
__device__ __forceinline__ void copy_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// Two floats as the halves of one register (the first in the low half, as mma fragments hold them).
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

}  // namespace kiln::cuda::ptx
