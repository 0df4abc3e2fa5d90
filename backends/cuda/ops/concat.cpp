// concat on CUDA: per input, a strided copy (backends/cuda/movement.cuh) of any element type into
// its place along the axis: y as [outer, total * inner], the input as [outer, dim * inner]; the
// copies go in one launch where they can.
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/movement.cuh"
#include "backends/cuda/strided.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(CudaKernelContext& c) : axis_(c.node.attrs.get_int("axis")) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef& y = a.outputs[0];
    const int axis = normalize_axis(axis_, y.shape.size(), "[concat] " + a.node->name);
    const cuda::AxisView out = cuda::axis_view(y.shape, axis);
    const int64_t y_row = out.dim * out.inner;
    int64_t offset = 0;  // along the axis, in y
    std::vector<cuda::StridedCopyArgs> copies;
    for (const TensorRef& x : a.inputs) {
      const int64_t row = x.shape[axis] * out.inner;
      const auto views = cuda::strided_views<2>({out.outer, row}, {cuda::Strides{row, 1}, cuda::Strides{y_row, 1}});
      cuda::StridedCopyArgs c;
      c.x = x.data;
      c.src = views[0];
      c.y = y.data;
      c.y_base = offset * out.inner;
      c.dst = views[1];
      c.n = out.outer * row;  // 0 for an empty input, which may have no memory: nothing is launched
      c.elem_size = static_cast<int>(dtype_size(y.dtype));
      copies.push_back(c);
      offset += x.shape[axis];
    }
    cuda::launch_strided_copies(copies, stream_of(a));
  }

 private:
  int64_t axis_;
};

bool supports_concat(const Graph&, const Node&) { return true; }

}  // namespace

KILN_REGISTER_CUDA_KERNELS(concat) {
  registry.add("concat", {supports_concat, make_cuda_kernel<ConcatKernel>, supports_concat});
}

}  // namespace kiln
