// kv_cache_attention on the GPU: the decoder-step attention kernel (attention_step.cu) writing
// the new keys and values into the caches as it attends, q, k and v f32 or f16, kv_length,
// kv_rows and the offsets i32 or i64, heads up to 128 wide. An offset, kv_length or kv_rows entry
// out of range sets the error word, so that the run fails as it does on the CPU. The kernel takes
// any number of new positions, but is built for a step's one: a prefill of many positions would
// want the tensor-core kernel (attention_mma.cu), which the fusion does not give it.
#include <algorithm>

#include "backends/cuda/attention_step.cuh"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/attention_args.h"

namespace kiln {

namespace {

enum : int { KCache = 0, VCache, Qkv, Offset, KvLength, KvRows };

// The declared shape of the state a cache value is, or is an in-place update of (a chain of
// in-place ops ends at a state; intermediate values declare no shape).
const ShapeSpec* state_shape(const Graph& g, int value) {
  const auto producers = g.producers();
  while (value >= 0 && g.values()[value].kind != ValueKind::State) {
    const int p = producers[value];
    if (p < 0) return nullptr;
    const Node& n = g.nodes()[p];
    const auto o = std::find(n.outputs.begin(), n.outputs.end(), value) - n.outputs.begin();
    const int slot = n.def().in_place() ? n.def().aliases_input(static_cast<int>(o)) : -1;
    if (slot < 0) return nullptr;
    value = n.inputs[slot];
  }
  return value >= 0 ? &g.values()[value].shape : nullptr;
}

bool supports_kv_cache_attention(const Graph& g, const Node& n) {
  if (!attention_types_supported(g, n, Qkv, -1, {Offset, KvLength, KvRows})) return false;
  // Head widths the step kernel takes, from the caches' states (fixed in their last dim).
  const ShapeSpec* k = state_shape(g, n.inputs[KCache]);
  const ShapeSpec* v = state_shape(g, n.inputs[VCache]);
  return k && v && k->size() == 4 && v->size() == 4 && !(*k)[3].is_symbol() && !(*v)[3].is_symbol() &&
         (*k)[3].value <= 128 && (*v)[3].value <= 128;
}

class KvCacheAttentionKernel : public Kernel {
 public:
  explicit KvCacheAttentionKernel(CudaKernelContext& c)
      : scale_(c.node.attrs.get_float("scale")), causal_(c.node.attrs.get_int("causal") != 0), error_(c.error_word) {
    c.checks_inputs = true;
  }

  void run(const KernelArgs& a, int) override {
    const TensorRef &keys = a.outputs[0], &values = a.outputs[1], &qkv = a.inputs[Qkv], &offset = a.inputs[Offset];
    cuda::AttentionArgs p;
    p.q = qkv.data;
    p.k = p.k_out = keys.data;
    p.v = p.v_out = values.data;
    p.y = a.outputs[2].data;
    p.type = qkv.dtype;
    p.batch = p.kv_batch = keys.shape[0];
    p.kv_heads = keys.shape[1];
    p.sk = keys.shape[2];
    p.d = keys.shape[3];
    p.dv = values.shape[3];
    p.sq = qkv.shape[1];
    p.q_stride = qkv.shape[2];
    p.heads = (p.q_stride - p.kv_heads * (p.d + p.dv)) / p.d;
    set_attention_common(p, a, KvLength, scale_, causal_, error_);
    // The kernel reads the caches as the outputs: settled only where those are the inputs' memory
    // (copied into other outputs below, they are written just before it).
    p.settled = all_settled(a, {KCache, VCache, Offset, KvLength, KvRows}) && keys.data == a.inputs[KCache].data &&
                values.data == a.inputs[VCache].data;
    p.offset = offset.data;
    p.offset_type = offset.dtype;
    p.offsets = offset.numel();
    p.offset_error_bit = kCudaOffsetOutOfRange;
    KILN_CHECK(cuda::attention_step_fits(p), "[kv_cache_attention] {}: a cache of {} positions is too long for the GPU",
               a.node->name, p.sk);
    // The caches are normally the outputs' memory (the op is in place).
    for (int c : {0, 1})
      if (a.outputs[c].data != a.inputs[c].data)
        KILN_CUDA_CHECK(cudaMemcpyAsync(a.outputs[c].data, a.inputs[c].data, a.inputs[c].bytes(),
                                        cudaMemcpyDeviceToDevice, stream_of(a)));
    cuda::launch_attention_step(p, stream_of(a));
  }

 private:
  double scale_;
  bool causal_;
  uint32_t* error_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(kv_cache_attention) {
  registry.add("kv_cache_attention",
               {supports_kv_cache_attention, make_cuda_kernel<KvCacheAttentionKernel>, supports_kv_cache_attention});
}

}  // namespace kiln
