// reorder_beams on the GPU: positions of any element type moved in place within each group of
// beams (indexed_copy.cu). The output is normally target's own memory (the op is in place);
// where the engine gave it memory of its own, target is copied there first. A parent outside
// its row's group leaves the row alone and sets the error word, so that the run fails as on
// the CPU.
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/indexed_copy.cuh"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln {

namespace {

bool supports_reorder_beams(const Graph& g, const Node& n) {
  for (int slot : {1, 2}) {
    const DType t = input_dtype(g, n, slot);
    if (t != DType::I32 && t != DType::I64) return false;
  }
  return true;
}

class ReorderBeamsKernel : public Kernel {
 public:
  explicit ReorderBeamsKernel(CudaKernelContext& c) : error_(c.error_word) { c.checks_inputs = true; }

  void run(const KernelArgs& a, int) override {
    const TensorRef &target = a.inputs[0], &parent = a.inputs[1], &length = a.inputs[2], &y = a.outputs[0];
    const cudaStream_t stream = stream_of(a);
    if (y.data != target.data)
      KILN_CUDA_CHECK(cudaMemcpyAsync(y.data, target.data, target.bytes(), cudaMemcpyDeviceToDevice, stream));
    const Node& n = *a.node;
    const int axis = normalize_axis(n.attrs.get_int("axis"), target.shape.size(), "[reorder_beams] " + n.name);
    cuda::ReorderBeamsArgs r;
    r.data = y.data;
    r.parent = parent.data;
    r.length = length.data;
    r.parent_type = parent.dtype;
    r.length_type = length.dtype;
    r.rows = target.shape[0];
    r.beams = parent.shape[1];
    KILN_CHECK(parent.shape[0] * r.beams == r.rows, "[reorder_beams] {}: parent {} is not [groups, beams] of {} rows",
               n.name, to_string(parent.shape), r.rows);
    KILN_CHECK(r.beams <= cuda::kReorderMaxBeams, "[reorder_beams] {}: groups of {} beams; the GPU takes up to {}",
               n.name, r.beams, cuda::kReorderMaxBeams);
    for (int d = 1; d < axis; ++d) r.outer *= target.shape[d];
    r.extent = target.shape[axis];
    r.inner_bytes = static_cast<int64_t>(dtype_size(target.dtype));
    for (size_t d = axis + 1; d < target.shape.size(); ++d) r.inner_bytes *= target.shape[d];
    r.error = error_;
    r.error_bit = kCudaIndexOutOfRange;
    cuda::launch_reorder_beams(r, stream);
  }

 private:
  uint32_t* error_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(reorder_beams) {
  registry.add("reorder_beams", {supports_reorder_beams, make_cuda_kernel<ReorderBeamsKernel>, supports_reorder_beams});
}

}  // namespace kiln
