// attention on the GPU: fused kernels with an online softmax (attention.cu picks one: tensor
// cores for fp16 with many query rows, a decoder-step kernel for few rows, CUDA cores otherwise), q, k and v f32
// or f16, a mask of either type, kv_length and kv_rows i32 or i64, grouped-query heads, any head
// dims. A kv_length outside [0, Sk] is clamped, and a kv_rows entry outside [0, Bkv) read as row
// 0, both setting the error word, so that the run fails as it does on the CPU.
#include "backends/cuda/ops/attention_args.h"

namespace kiln {

namespace {

enum : int { Q = 0, K, V, Mask, KvLength, KvRows };

bool supports_attention(const Graph& g, const Node& n) {
  return attention_types_supported(g, n, Q, Mask, {KvLength, KvRows});
}

class AttentionKernel : public Kernel {
 public:
  explicit AttentionKernel(CudaKernelContext& c)
      : scale_(c.node.attrs.get_float("scale")), causal_(c.node.attrs.get_int("causal") != 0), error_(c.error_word) {
    c.checks_inputs = c.node.input(KvLength) >= 0 || c.node.input(KvRows) >= 0;
  }

  void run(const KernelArgs& a, int) override {
    const TensorRef &q = a.inputs[Q], &k = a.inputs[K], &v = a.inputs[V];
    cuda::AttentionArgs p;
    p.q = q.data;
    p.k = k.data;
    p.v = v.data;
    p.y = a.outputs[0].data;
    p.type = q.dtype;
    p.batch = q.shape[0];
    p.kv_batch = k.shape[0];
    p.heads = q.shape[1];
    p.sq = q.shape[2];
    p.d = q.shape[3];
    p.kv_heads = k.shape[1];
    p.sk = k.shape[2];
    p.dv = v.shape[3];
    set_attention_common(p, a, KvLength, scale_, causal_, error_);
    p.settled = all_settled(a, {K, V, KvLength, KvRows});  // the mask is read after the wait
    set_attention_mask(p, a, Mask);
    cuda::launch_attention(p, stream_of(a));
  }

 private:
  double scale_;
  bool causal_;
  uint32_t* error_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(attention) {
  registry.add("attention", {supports_attention, make_cuda_kernel<AttentionKernel>, supports_attention});
}

}  // namespace kiln
