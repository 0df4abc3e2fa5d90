// qkv_attention on the CPU, as its decomposition does it: q, k and v gathered out of the stacked
// projection into [B, heads, T, D], the reference attention (backends/cpu/attention_reference.h),
// and its rows put back with the heads merged.
#include <cstring>
#include <vector>

#include "backends/cpu/attention_reference.h"
#include "backends/cpu/cpu_kernel.h"

namespace kiln {

namespace {

enum : int { Qkv = 0, Mask, KvLength };

class QkvAttentionKernel : public CpuKernel {
 public:
  QkvAttentionKernel(const Graph& g, int node, const ConstantLookup&)
      : attrs_(cpu::attention_attrs(g, node)),
        heads_(g.nodes()[node].attrs.get_int("heads")),
        kv_heads_(g.nodes()[node].attrs.get_int("kv_heads")) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef& qkv = a.inputs[Qkv];
    const int64_t b = qkv.shape[0], t = qkv.shape[1], width = qkv.shape[2], d = width / (heads_ + 2 * kv_heads_);
    // Heads first: part p's head h of position i of row r goes to [r, h, i].
    auto heads_first = [&](int64_t first_head, int64_t heads) {
      std::vector<float> out(static_cast<size_t>(b * heads * t * d));
      const float* src = qkv.as<const float>();
      for (int64_t r = 0; r < b; ++r)
        for (int64_t i = 0; i < t; ++i)
          for (int64_t h = 0; h < heads; ++h)
            std::memcpy(out.data() + ((r * heads + h) * t + i) * d, src + (r * t + i) * width + (first_head + h) * d,
                        d * sizeof(float));
      return out;
    };
    std::vector<float> q = heads_first(0, heads_), k = heads_first(heads_, kv_heads_),
                       v = heads_first(heads_ + kv_heads_, kv_heads_);
    KernelArgs attention;
    attention.node = a.node;
    attention.inputs = {TensorRef{q.data(), DType::F32, {b, heads_, t, d}},
                        TensorRef{k.data(), DType::F32, {b, kv_heads_, t, d}},
                        TensorRef{v.data(), DType::F32, {b, kv_heads_, t, d}}};
    for (int slot : {Mask, KvLength})
      attention.inputs.push_back(a.inputs.size() > static_cast<size_t>(slot) ? a.inputs[slot] : TensorRef{});
    std::vector<float> y(q.size());
    cpu::attention_reference(cpu::AttentionRows(attention, attrs_), y.data());
    float* out = a.outputs[0].as<float>();
    for (int64_t r = 0; r < b; ++r)
      for (int64_t h = 0; h < heads_; ++h)
        for (int64_t i = 0; i < t; ++i)
          std::memcpy(out + ((r * t + i) * heads_ + h) * d, y.data() + ((r * heads_ + h) * t + i) * d,
                      d * sizeof(float));
  }

 private:
  cpu::AttentionAttrs attrs_;
  int64_t heads_, kv_heads_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(qkv_attention) { registry.add("qkv_attention", make_cpu_kernel<QkvAttentionKernel>); }

}  // namespace kiln
