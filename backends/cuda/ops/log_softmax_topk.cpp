// log_softmax_topk on the GPU, for k <= 32 over the scores themselves: a block a row for rows of
// up to 65536 entries (a decoder's vocabulary; log_softmax_topk_block.cu, one launch), longer
// rows in topk_rows.cu's levels; otherwise log_softmax into the workspace, then topk over it.
// Banned indices past the row set the error word, as log_softmax's.
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/log_softmax.cuh"
#include "backends/cuda/log_softmax_topk_block.cuh"
#include "backends/cuda/strided.h"
#include "backends/cuda/topk_rows.cuh"

namespace kiln {

namespace {

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

bool supports_log_softmax_topk(const Graph& g, const Node& n) {
  const DType t = input_dtype(g, n, 0);
  if (t != DType::F32 && t != DType::F16) return false;
  if (n.input(1) < 0) return true;
  const DType b = input_dtype(g, n, 1);
  return b == DType::I32 || b == DType::I64;
}

class LogSoftmaxTopkKernel : public Kernel {
 public:
  explicit LogSoftmaxTopkKernel(CudaKernelContext& c) : error_(c.error_word) { c.checks_inputs = true; }

  size_t workspace_bytes(const KernelArgs& a, int) const override {
    const cuda::LogSoftmaxTopkArgs f = fused(a, nullptr);
    if (cuda::log_softmax_topk_block_fits(f)) return 0;
    if (cuda::topk_rows_fits(f.topk)) return cuda::log_softmax_topk_rows_workspace_bytes(f);
    const Parts p = parts(a, nullptr);
    return p.topk_at + cuda::topk_workspace_bytes(p.topk);
  }

  void run(const KernelArgs& a, int) override {
    const cuda::LogSoftmaxTopkArgs f = fused(a, a.workspace);
    if (cuda::log_softmax_topk_block_fits(f)) return cuda::launch_log_softmax_topk_block(f, stream_of(a));
    if (cuda::topk_rows_fits(f.topk)) return cuda::launch_log_softmax_topk_rows(f, stream_of(a));
    const Parts p = parts(a, a.workspace);
    cuda::launch_log_softmax(p.log_softmax, stream_of(a));
    cuda::launch_topk(p.topk, stream_of(a));
  }

 private:
  // The op's rows as the block and levelled top-k see them.
  cuda::LogSoftmaxTopkArgs fused(const KernelArgs& a, void* workspace) const {
    const TensorRef& x = a.inputs[0];
    cuda::LogSoftmaxTopkArgs f;
    f.topk.x = x.data;
    f.topk.type = x.dtype;
    f.topk.values = a.outputs[0].data;
    f.topk.indices = a.outputs[1].as<int64_t>();
    f.topk.view = cuda::axis_view(x.shape, static_cast<int>(x.shape.size()) - 1);
    f.topk.k = a.outputs[0].shape.back();
    f.topk.workspace = workspace;
    if (a.inputs.size() > 1 && a.inputs[1].data) {
      f.banned = a.inputs[1].data;
      f.banned_type = a.inputs[1].dtype;
      f.per_row = a.inputs[1].shape.back();
    }
    f.error = error_;
    f.error_bit = kCudaIndexOutOfRange;
    return f;
  }

  // The two-op form: the log-probabilities [rows, dim] f32 first in the workspace, then
  // log_softmax's own workspace, then the top-k's.
  struct Parts {
    cuda::LogSoftmaxArgs log_softmax;
    cuda::TopkArgs topk;
    size_t topk_at = 0;
  };
  Parts parts(const KernelArgs& a, void* workspace) const {
    const cuda::LogSoftmaxTopkArgs f = fused(a, nullptr);
    auto* base = static_cast<uint8_t*>(workspace);
    Parts p;
    cuda::LogSoftmaxArgs& l = p.log_softmax;
    l.x = f.topk.x;
    l.type = f.topk.type;
    l.dim = f.topk.view.dim;
    l.rows = f.topk.view.outer;
    l.banned = f.banned;
    l.banned_type = f.banned_type;
    l.per_row = f.per_row;
    l.error = f.error;
    l.error_bit = f.error_bit;
    const size_t scores = aligned(static_cast<size_t>(l.rows * l.dim) * sizeof(float));
    l.y = reinterpret_cast<float*>(base);
    l.workspace = base ? base + scores : nullptr;
    p.topk_at = scores + aligned(cuda::log_softmax_workspace_bytes(l));
    p.topk = f.topk;
    p.topk.x = l.y;
    p.topk.type = DType::F32;
    p.topk.workspace = base ? base + p.topk_at : nullptr;
    return p;
  }

  uint32_t* error_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(log_softmax_topk) {
  registry.add("log_softmax_topk",
               {supports_log_softmax_topk, make_cuda_kernel<LogSoftmaxTopkKernel>, supports_log_softmax_topk});
}

}  // namespace kiln
