// matmul on the GPU through cuBLASLt (cublaslt_gemm.h), f32 and f16 with fp32 sums. The batch
// dims broadcast NumPy-style: the trailing batch dims over which each operand either steps
// through its matrices in order or repeats one make a single strided-batched call; each index
// of the leading rest (where a [2, 1] meets b [1, 3]) makes one call. A b that repeats under a
// batch of a (x @ w) becomes one GEMM with the batch folded into m.
#include <vector>

#include "backends/cuda/cublaslt_gemm.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_kernel.h"
#include "core/dtype.h"

namespace kiln {

namespace {

// Small batched products need little scratch; each matmul node owns its own.
constexpr size_t kWorkspaceBytes = size_t{4} << 20;

bool supports_matmul(const Graph& g, const Node& n) { return io_types_in(g, n, {DType::F32, DType::F16}); }

// An operand's element stride per dim of the output's batch dims (its own batch dims aligned to
// the right; 0 where it broadcasts), `matrix` elements per matrix.
std::vector<int64_t> batch_strides(const Shape& s, size_t rank, int64_t matrix) {
  std::vector<int64_t> st(rank, 0);
  const size_t own = s.size() - 2;
  int64_t step = matrix;
  for (size_t d = own; d-- > 0;) {
    st[d + rank - own] = s[d] == 1 ? 0 : step;
    step *= s[d];
  }
  return st;
}

// Whether the operand's offset over batch dims [from, rank) is index * sigma for sigma one
// matrix or 0; sets sigma.
bool linear_from(const Shape& batch, const std::vector<int64_t>& st, size_t from, int64_t matrix, int64_t* sigma) {
  bool repeats = true;
  for (size_t d = from; d < batch.size(); ++d) repeats = repeats && (batch[d] == 1 || st[d] == 0);
  *sigma = repeats ? 0 : matrix;
  int64_t step = 1;  // batch index step of dim d within [from, rank)
  for (size_t d = batch.size(); d-- > from;) {
    if (batch[d] > 1 && st[d] != *sigma * step) return false;
    step *= batch[d];
  }
  return true;
}

class MatmulKernel : public Kernel {
 public:
  explicit MatmulKernel(CudaKernelContext& c) : gemm_(kWorkspaceBytes) {
    ta_ = c.node.attrs.get_int("transpose_a") != 0;
    tb_ = c.node.attrs.get_int("transpose_b") != 0;
    alpha_ = static_cast<float>(c.node.attrs.get_float("alpha"));
  }

  void run(const KernelArgs& args, int) override {
    const TensorRef &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
    const cudaStream_t stream = stream_of(args);
    if (y.numel() == 0) return;
    const size_t ry = y.shape.size();
    const int64_t m = y.shape[ry - 2], n = y.shape[ry - 1], k = a.shape[a.shape.size() - (ta_ ? 2 : 1)];
    if (k == 0) {  // an empty sum
      KILN_CUDA_CHECK(cudaMemsetAsync(y.data, 0, y.bytes(), stream));
      return;
    }
    const Shape batch(y.shape.begin(), y.shape.end() - 2);
    const size_t rank = batch.size();
    const std::vector<int64_t> sa = batch_strides(a.shape, rank, m * k), sb = batch_strides(b.shape, rank, k * n);
    GemmShape s;
    s.dtype = y.dtype;
    s.m = m;
    s.n = n;
    s.k = k;
    s.trans_a = ta_;
    s.trans_b = tb_;
    s.lda = ta_ ? m : k;
    s.ldb = tb_ ? k : n;
    s.ldc = n;
    s.stride_c = m * n;
    s.alpha = alpha_;
    // The longest run of trailing batch dims one strided-batched call covers.
    size_t split = 0;
    while (!linear_from(batch, sa, split, m * k, &s.stride_a) || !linear_from(batch, sb, split, k * n, &s.stride_b))
      ++split;
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < rank; ++d) (d < split ? outer : inner) *= batch[d];
    s.batch = inner;
    if (s.stride_b == 0 && s.stride_a == m * k && !ta_) {  // consecutive rows of a against one b
      s.m *= inner;
      s.batch = 1;
    }
    const size_t size = dtype_size(y.dtype);
    for (int64_t o = 0; o < outer; ++o) {
      int64_t off_a = 0, off_b = 0;
      for (int64_t d = static_cast<int64_t>(split) - 1, rest = o; d >= 0; --d) {
        off_a += rest % batch[d] * sa[d];
        off_b += rest % batch[d] * sb[d];
        rest /= batch[d];
      }
      const int64_t off_y = o * inner * m * n;
      gemm_.gemm(s, static_cast<const char*>(a.data) + off_a * size, static_cast<const char*>(b.data) + off_b * size,
                 static_cast<char*>(y.data) + off_y * size, stream);
    }
  }

 private:
  CublasLtGemm gemm_;
  bool ta_ = false, tb_ = false;
  float alpha_ = 1.0f;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(matmul) {
  registry.add("matmul", {supports_matmul, make_cuda_kernel<MatmulKernel>, supports_matmul});
}

}  // namespace kiln
