// where on CUDA (backends/cuda/movement.cuh): any element type, cond, a and b each read
// through its broadcast view of the output.
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/movement.cuh"
#include "backends/cuda/strided.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class WhereKernel : public Kernel {
 public:
  explicit WhereKernel(CudaKernelContext&) {}
  void run(const KernelArgs& args, int) override {
    const TensorRef &cond = args.inputs[0], &a = args.inputs[1], &b = args.inputs[2], &y = args.outputs[0];
    const auto views = cuda::strided_views<3>(
        y.shape, {cuda::broadcast_strides(cond.shape, y.shape), cuda::broadcast_strides(a.shape, y.shape),
                  cuda::broadcast_strides(b.shape, y.shape)});
    cuda::WhereArgs w;
    w.cond = cond.as<const uint8_t>();
    w.a = a.data;
    w.b = b.data;
    w.y = y.data;
    w.c = views[0];
    w.ia = views[1];
    w.ib = views[2];
    w.n = y.numel();
    w.elem_size = static_cast<int>(dtype_size(y.dtype));
    cuda::launch_where(w, stream_of(args));
  }
};

bool supports_where(const Graph&, const Node&) { return true; }

}  // namespace

KILN_REGISTER_CUDA_KERNELS(where) {
  registry.add("where", {supports_where, make_cuda_kernel<WhereKernel>, supports_where});
}

}  // namespace kiln
