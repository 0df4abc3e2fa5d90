// log_softmax on the GPU: a block per row, or per chunk of a long row (log_softmax.cu), x f32 or f16, y f32, optional
// banned indices; an index past the row sets the error word so that the run fails as on the CPU.
#include "backends/cuda/log_softmax.cuh"
#include "backends/cuda/cuda_kernel.h"
#include "core/dtype.h"

namespace kiln {

namespace {

bool supports_log_softmax(const Graph& g, const Node& n) {
  const DType t = input_dtype(g, n, 0);
  if (t != DType::F32 && t != DType::F16) return false;
  if (n.input(1) < 0) return true;
  const DType b = input_dtype(g, n, 1);
  return b == DType::I32 || b == DType::I64;
}

class LogSoftmaxKernel : public Kernel {
 public:
  explicit LogSoftmaxKernel(CudaKernelContext& c) : error_(c.error_word) { c.checks_inputs = true; }

  size_t workspace_bytes(const KernelArgs& a, int) const override { return cuda::log_softmax_workspace_bytes(args(a)); }
  void run(const KernelArgs& a, int) override { cuda::launch_log_softmax(args(a), stream_of(a)); }

 private:
  cuda::LogSoftmaxArgs args(const KernelArgs& a) const {
    const TensorRef& x = a.inputs[0];
    cuda::LogSoftmaxArgs p;
    p.x = x.data;
    p.type = x.dtype;
    p.y = a.outputs[0].as<float>();
    p.dim = x.shape.back();
    p.rows = x.numel() / p.dim;
    if (a.inputs.size() > 1 && a.inputs[1].data) {
      p.banned = a.inputs[1].data;
      p.banned_type = a.inputs[1].dtype;
      p.per_row = a.inputs[1].shape.back();
    }
    p.error = error_;
    p.error_bit = kCudaIndexOutOfRange;
    p.workspace = a.workspace;
    return p;
  }

  uint32_t* error_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(log_softmax) {
  registry.add("log_softmax", {supports_log_softmax, make_cuda_kernel<LogSoftmaxKernel>, supports_log_softmax});
}

}  // namespace kiln
