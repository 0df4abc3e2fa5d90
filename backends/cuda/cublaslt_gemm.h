// GEMMs of any shape through cuBLASLt, on row-major matrices as kiln stores them: batched
// products of activations (matmul) and dense layers the hand-written GEMM does not take.
//
//   CublasLtGemm gemm;                       // a handle and a workspace, made once
//   GemmShape s;
//   s.dtype = DType::F16;
//   s.m = rows, s.n = out, s.k = in;
//   s.trans_b = true;                        // w stored [out, in]
//   s.lda = in, s.ldb = in, s.ldc = out;
//   gemm.gemm(s, x, w, y, stream);           // y = x w^T
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>

#include "kiln/tensor.h"

namespace kiln {

// c[i] = alpha * op(a[i]) op(b[i]) + beta * c[i] for i < batch, every matrix row-major:
//   op(a) [m, k] is a stored [m, k] (lda >= k), or with trans_a a stored [k, m] (lda >= m);
//   op(b) [k, n] is b stored [k, n] (ldb >= n), or with trans_b b stored [n, k] (ldb >= k);
//   c [m, n] (ldc >= n). ld* are row strides in elements.
// Matrix i of a starts stride_a elements after matrix i - 1 (likewise b and c); a stride of 0
// for a or b repeats one matrix over the batch.
struct GemmShape {
  DType dtype = DType::F32;  // of a, b and c: F32 or F16; products are summed in fp32 (no TF32)
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  float alpha = 1.0f, beta = 0.0f;  // beta 0: c is only written
  // Dense layers: c of F32 while a and b are F16 (or as dtype: F16), and cuBLASLt's epilogue
  // adding a bias [n] of c's type to every row (GemmExtras::bias), then ReLU.
  bool out_f32 = false;
  bool bias = false, relu = false;
};

// What a call may add to its shape: the bias (with GemmShape::bias); the matrix beta scales when
// it is not c itself (c = alpha op(a) op(b) + beta c_in, same layout as c); workspace memory
// the caller owns, used instead of the instance's; and which of the heuristic's algorithms runs
// (0: its first choice; below CublasLtGemm::algorithms()). An algorithm is named by its rank:
// under another cuBLASLt or on another GPU, rank 2 may be another kernel.
struct GemmExtras {
  const void* bias = nullptr;
  const void* c_in = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  int algorithm = 0;
};

// A cuBLASLt handle, a workspace and, per shape, the descriptors and the algorithms cuBLASLt's
// heuristic ranks first (up to kMaxAlgorithms, for a caller that times them). Calls share the
// workspace, so one instance serves one stream (or calls ordered with each other) and one
// thread at a time.
class CublasLtGemm {
 public:
  explicit CublasLtGemm(size_t workspace_bytes = size_t{32} << 20);
  // Whether the library can be opened here (making an instance fails where it cannot).
  static bool available();
  // cublasLtGetVersion() of the library opened here (130100 for 13.1.0), or 0 where none is.
  static size_t version();
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // Queues the product on `stream`; k >= 1. The first call for a shape and pointer alignment
  // makes its descriptors and runs the heuristic: host-only work, allowed while the stream is
  // being captured into a CUDA graph. Fails ("[cuda] ...") on an invalid shape or a cuBLASLt error.
  void gemm(const GemmShape& shape, const void* a, const void* b, void* c, cudaStream_t stream,
            const GemmExtras& extras = {});
  // How many algorithms the heuristic offers for this call (0 to kMaxAlgorithms; gemm() fails
  // where there are none): host-only work, as a first call.
  int algorithms(const GemmShape& shape, const void* a, const void* b, const void* c, const GemmExtras& extras = {});

  static constexpr int kMaxAlgorithms = 4;

 private:
  struct Plan;
  // What a plan depends on: the shape but alpha and beta, the byte alignments of a, b and c
  // that hold for every matrix of the batch (at most 256), and the workspace the heuristic may
  // use (so that algorithms() and gemm() of one call see one plan).
  struct Key {
    DType dtype;
    int64_t m, n, k;
    bool trans_a, trans_b;
    int64_t lda, ldb, ldc, batch, stride_a, stride_b, stride_c;
    std::array<uint32_t, 3> align;
    bool out_f32, bias, relu;
    size_t workspace_bytes;
    auto operator<=>(const Key&) const = default;
  };
  const Plan& plan_for(const Key& key);
  // The checked shape's key for these pointers and workspace.
  static Key key_of(const GemmShape& s, const void* a, const void* b, const void* c, const void* c_in,
                    size_t workspace_bytes);
  static void check_shape(const GemmShape& s);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace kiln
