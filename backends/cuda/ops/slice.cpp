// slice on CUDA: one strided copy (backends/cuda/movement.cuh) of any element type, output dim d
// stepping through x's dim d from its start (graph/ops/slice.h resolves both per shape of x).
#include "graph/ops/slice.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/movement.cuh"
#include "backends/cuda/strided.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(CudaKernelContext&) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const std::vector<SliceDim> dims = slice_dims(*a.node, x.shape);
    const cuda::Strides xs = cuda::row_major_strides(x.shape);
    cuda::Strides src(xs.size());
    int64_t base = 0;
    for (size_t d = 0; d < xs.size(); ++d) {
      base += dims[d].start * xs[d];
      src[d] = dims[d].step * xs[d];
    }
    const auto views = cuda::strided_views<2>(y.shape, {src, cuda::row_major_strides(y.shape)});
    cuda::StridedCopyArgs c;
    c.x = x.data;
    c.x_base = base;
    c.src = views[0];
    c.y = y.data;
    c.dst = views[1];
    c.n = y.numel();
    c.elem_size = static_cast<int>(dtype_size(x.dtype));
    cuda::launch_strided_copy(c, stream_of(a));
  }
};

bool supports_slice(const Graph&, const Node&) { return true; }

}  // namespace

KILN_REGISTER_CUDA_KERNELS(slice) {
  registry.add("slice", {supports_slice, make_cuda_kernel<SliceKernel>, supports_slice});
}

}  // namespace kiln
