// write_heads on the GPU: a projection's heads copied into the rows of a state by an index read
// from device memory (indexed_copy.cu), in place on target (indexed_write.h). An index past the
// source's rows writes nothing for its row and sets the error word, so that the run fails as on
// the CPU.
#include "backends/cuda/indexed_copy.cuh"
#include "backends/cuda/ops/indexed_write.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class WriteHeadsKernel : public Kernel {
 public:
  explicit WriteHeadsKernel(CudaKernelContext& c) : column_(c.node.attrs.get_int("column")), error_(c.error_word) {
    c.checks_inputs = true;
  }

  void run(const KernelArgs& a, int) override {
    const TensorRef &target = a.inputs[0], &source = a.inputs[1], &index = a.inputs[2], &y = a.outputs[0];
    const cudaStream_t stream = stream_of(a);
    copy_target_unless_in_place(target, y, stream);
    cuda::WriteHeadsArgs w;
    w.source = source.data;
    w.out = y.data;
    w.index = index.data;
    w.index_type = index.dtype;
    w.rows = target.shape[0];
    w.heads = target.shape[1];
    w.capacity = target.shape[2];
    w.d = target.shape[3];
    w.count = source.shape[0];
    w.positions = source.shape[1];
    w.width = source.shape[2];
    w.column = column_;
    w.elem_bytes = static_cast<int64_t>(dtype_size(target.dtype));
    w.error = error_;
    w.error_bit = kCudaIndexOutOfRange;
    cuda::launch_write_heads(w, stream);
  }

 private:
  int64_t column_;
  uint32_t* error_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(write_heads) {
  registry.add("write_heads", {supports_indexed_write, make_cuda_kernel<WriteHeadsKernel>, supports_indexed_write});
}

}  // namespace kiln
