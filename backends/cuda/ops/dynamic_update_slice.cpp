// dynamic_update_slice on the GPU: update's rows written into target's memory at an offset the
// kernel reads from device memory (indexed_copy.cu), elements of any type. The output is
// normally target's own memory (the op is in place); where the engine gave it memory of its
// own, target is copied there first. An offset that would put the slice outside target writes
// nothing (for its rows) and sets the error word, so that the run fails as it does on the CPU.
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/indexed_copy.cuh"
#include "core/dtype.h"

namespace kiln {

namespace {

bool supports_dynamic_update_slice(const Graph& g, const Node& n) {
  const DType t = input_dtype(g, n, 2);
  return t == DType::I32 || t == DType::I64;
}

class DynamicUpdateSliceKernel : public Kernel {
 public:
  explicit DynamicUpdateSliceKernel(CudaKernelContext& c) : axis_(c.node.attrs.get_int("axis")), error_(c.error_word) {
    c.checks_inputs = true;
  }

  void run(const KernelArgs& a, int) override {
    const TensorRef &target = a.inputs[0], &update = a.inputs[1], &offset = a.inputs[2], &y = a.outputs[0];
    const cudaStream_t stream = stream_of(a);
    const int axis = normalize_axis(axis_, target.shape.size(), "[dynamic_update_slice] " + a.node->name);
    if (y.data != target.data)
      KILN_CUDA_CHECK(cudaMemcpyAsync(y.data, target.data, target.bytes(), cudaMemcpyDeviceToDevice, stream));
    cuda::UpdateSliceArgs u;
    u.update = update.data;
    u.out = y.data;
    u.offset = offset.data;
    u.offset_type = offset.dtype;
    u.offsets = offset.numel();
    u.outer = 1;
    u.row_bytes = static_cast<int64_t>(dtype_size(target.dtype));
    for (int d = 0; d < axis; ++d) u.outer *= target.shape[d];
    for (size_t d = axis + 1; d < target.shape.size(); ++d) u.row_bytes *= target.shape[d];
    u.dim = target.shape[axis];
    u.n = update.shape[axis];
    u.error = error_;
    u.error_bit = kCudaOffsetOutOfRange;
    cuda::launch_update_slice(u, stream);
  }

 private:
  int64_t axis_;
  uint32_t* error_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(dynamic_update_slice) {
  registry.add("dynamic_update_slice", {supports_dynamic_update_slice, make_cuda_kernel<DynamicUpdateSliceKernel>,
                                        supports_dynamic_update_slice});
}

}  // namespace kiln
