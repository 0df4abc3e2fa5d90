// reduce (sum, mean, max over any axes) on CUDA: the generic group reduction
// (backends/cuda/reduce.cuh); each output walks x's kept dims, its reduction the reduced ones.
// An fp16 global average pool (mean over H and W of NHWC, a classifier's head) has a kernel of
// its own (elementwise.cu): threads over channels read consecutive halves.
#include <set>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/kernels.cuh"
#include "backends/cuda/reduce.cuh"
#include "backends/cuda/strided.h"

namespace kiln {

namespace {

class ReduceKernel : public Kernel {
 public:
  explicit ReduceKernel(CudaKernelContext& c) : axes_(c.node.attrs.get_ints("axes")) {
    const std::string& op = c.node.attrs.get_string("op");
    fn_ = op == "sum" ? cuda::ReduceFn::Sum : op == "mean" ? cuda::ReduceFn::Mean : cuda::ReduceFn::Max;
    global_pool_ = fn_ == cuda::ReduceFn::Mean && input_dtype(c.graph, c.node, 0) == DType::F16 &&
                   (axes_ == std::vector<int64_t>{1, 2} || axes_ == std::vector<int64_t>{-3, -2});
  }
  std::string describe() const override { return global_pool_ ? "global_avg_pool" : ""; }
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    if (global_pool_ && x.shape.size() == 4)
      return cuda::launch_global_avg_pool(x.as<const __half>(), y.as<__half>(), static_cast<int>(x.shape[0]),
                                          static_cast<int>(x.shape[1] * x.shape[2]), static_cast<int>(x.shape[3]),
                                          stream_of(a));
    std::set<int> axes;
    for (int64_t ax : axes_) axes.insert(normalize_axis(ax, x.shape.size(), "[reduce] " + a.node->name));
    const cuda::Strides xs = cuda::row_major_strides(x.shape);
    Shape kept_shape, reduced_shape;
    cuda::Strides kept_strides, reduced_strides;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      const bool reduced = axes.count(static_cast<int>(d)) != 0;
      (reduced ? reduced_shape : kept_shape).push_back(x.shape[d]);
      (reduced ? reduced_strides : kept_strides).push_back(xs[d]);
    }
    cuda::ReduceArgs p;
    p.x = x.data;
    p.y = y.data;
    p.type = x.dtype;
    p.fn = fn_;
    p.outputs = y.numel();
    p.count = numel(reduced_shape);
    p.kept = cuda::strided_views<1>(kept_shape, {kept_strides})[0];
    p.reduced = cuda::strided_views<1>(reduced_shape, {reduced_strides})[0];
    cuda::launch_reduce(p, stream_of(a));
  }

 private:
  std::vector<int64_t> axes_;
  cuda::ReduceFn fn_;
  bool global_pool_ = false;
};

bool supports_reduce(const Graph& g, const Node& n) {
  return io_types_in(g, n, {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64});
}

}  // namespace

KILN_REGISTER_CUDA_KERNELS(reduce) {
  registry.add("reduce", {supports_reduce, make_cuda_kernel<ReduceKernel>, supports_reduce});
}

}  // namespace kiln
