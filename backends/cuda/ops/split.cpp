// split on CUDA: per output, a strided copy (backends/cuda/movement.cuh) of any element type from
// its place along the axis: x as [outer, total * inner], the output as [outer, size * inner]; the
// copies go in one launch where they can.
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/movement.cuh"
#include "backends/cuda/strided.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class SplitKernel : public Kernel {
 public:
  explicit SplitKernel(CudaKernelContext& c) : axis_(c.node.attrs.get_int("axis")) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[0];
    const int axis = normalize_axis(axis_, x.shape.size(), "[split] " + a.node->name);
    const cuda::AxisView in = cuda::axis_view(x.shape, axis);
    const int64_t x_row = in.dim * in.inner;
    int64_t offset = 0;  // along the axis, in x
    std::vector<cuda::StridedCopyArgs> copies;
    for (const TensorRef& y : a.outputs) {
      const int64_t row = y.shape[axis] * in.inner;
      const auto views = cuda::strided_views<2>({in.outer, row}, {cuda::Strides{x_row, 1}, cuda::Strides{row, 1}});
      cuda::StridedCopyArgs c;
      c.x = x.data;
      c.x_base = offset * in.inner;
      c.src = views[0];
      c.y = y.data;
      c.dst = views[1];
      c.n = in.outer * row;  // 0 for an empty output, which may have no memory: nothing is launched
      c.elem_size = static_cast<int>(dtype_size(x.dtype));
      copies.push_back(c);
      offset += y.shape[axis];
    }
    cuda::launch_strided_copies(copies, stream_of(a));
  }

 private:
  int64_t axis_;
};

bool supports_split(const Graph&, const Node&) { return true; }

}  // namespace

KILN_REGISTER_CUDA_KERNELS(split) {
  registry.add("split", {supports_split, make_cuda_kernel<SplitKernel>, supports_split});
}

}  // namespace kiln
