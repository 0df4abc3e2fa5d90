// qkv_attention on the GPU: attention's kernels (attention.cu: tensor cores for fp16 with 16 rows
// or more, CUDA cores otherwise) reading q, k and v where they lie in the stacked projection and
// writing each output row with its heads merged (AttentionArgs' packed layouts), so that no split
// or transpose runs before or after them.
#include "backends/cuda/ops/attention_args.h"
#include "core/dtype.h"

namespace kiln {

namespace {

enum : int { Qkv = 0, Mask, KvLength };

bool supports_qkv_attention(const Graph& g, const Node& n) {
  return attention_types_supported(g, n, Qkv, Mask, {KvLength});
}

class QkvAttentionKernel : public Kernel {
 public:
  explicit QkvAttentionKernel(CudaKernelContext& c)
      : scale_(c.node.attrs.get_float("scale")),
        causal_(c.node.attrs.get_int("causal") != 0),
        heads_(c.node.attrs.get_int("heads")),
        kv_heads_(c.node.attrs.get_int("kv_heads")),
        error_(c.error_word) {
    c.checks_inputs = c.node.input(KvLength) >= 0;
  }

  void run(const KernelArgs& a, int) override {
    const TensorRef& qkv = a.inputs[Qkv];
    const int64_t b = qkv.shape[0], t = qkv.shape[1], width = qkv.shape[2], d = width / (heads_ + 2 * kv_heads_);
    const size_t element = dtype_size(qkv.dtype);
    cuda::AttentionArgs p;
    p.q = qkv.data;
    p.k = static_cast<const char*>(qkv.data) + heads_ * d * element;
    p.v = static_cast<const char*>(qkv.data) + (heads_ + kv_heads_) * d * element;
    p.y = a.outputs[0].data;
    p.type = qkv.dtype;
    p.batch = p.kv_batch = b;
    p.heads = heads_;
    p.kv_heads = kv_heads_;
    p.sq = p.sk = t;
    p.d = p.dv = d;
    set_attention_common(p, a, KvLength, scale_, causal_, error_);
    p.packed = true;
    p.q_layout = p.k_layout = p.v_layout = {t * width, d, width};
    p.y_layout = {t * heads_ * d, d, heads_ * d};
    set_attention_mask(p, a, Mask);
    cuda::launch_attention(p, stream_of(a));
  }

 private:
  double scale_;
  bool causal_;
  int64_t heads_, kv_heads_;
  uint32_t* error_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(qkv_attention) {
  registry.add("qkv_attention", {supports_qkv_attention, make_cuda_kernel<QkvAttentionKernel>, supports_qkv_attention});
}

}  // namespace kiln
