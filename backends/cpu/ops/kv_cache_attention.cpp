// kv_cache_attention on the CPU, as its decomposition does it: the offsets checked before
// anything is written, the new keys and values written into the caches, the query heads gathered
// into [B, H, T, D], then the reference attention over the updated caches
// (backends/cpu/attention_reference.h).
#include <cstring>
#include <vector>

#include "backends/cpu/attention_reference.h"
#include "backends/cpu/copy.h"
#include "backends/cpu/cpu_kernel.h"
#include "core/error.h"

namespace kiln {

namespace {

enum : int { KCache = 0, VCache, Qkv, Offset, KvLength, KvRows };

class KvCacheAttentionKernel : public CpuKernel {
 public:
  KvCacheAttentionKernel(const Graph& g, int node, const ConstantLookup&) : attrs_(cpu::attention_attrs(g, node)) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef &qkv = a.inputs[Qkv], &offset = a.inputs[Offset];
    const TensorRef &keys = a.outputs[0], &values = a.outputs[1];
    const int64_t b = keys.shape[0], hkv = keys.shape[1], s = keys.shape[2], d = keys.shape[3], dv = values.shape[3];
    const int64_t t = qkv.shape[1], width = qkv.shape[2], h = (width - hkv * (d + dv)) / d;
    std::vector<int64_t> at(static_cast<size_t>(b));
    for (int64_t r = 0; r < b; ++r) {
      at[r] = index_at(offset, offset.numel() == 1 ? 0 : r);
      KILN_CHECK(at[r] >= 0 && at[r] <= s - t,
                 "[kv_cache_attention] {}: positions [{}, {}) are outside the cache's [0, {})", a.node->name, at[r],
                 at[r] + t, s);
    }
    // The outputs are normally the caches' own memory (the op is in place).
    for (int c : {0, 1})
      if (a.outputs[c].data != a.inputs[c].data)
        cpu::parallel_copy(a.outputs[c].data, a.inputs[c].data, a.inputs[c].bytes());
    const float* src = qkv.as<const float>();
    float *k = keys.as<float>(), *v = values.as<float>();
    std::vector<float> q(static_cast<size_t>(b * h * t * d));
    for (int64_t r = 0; r < b; ++r)
      for (int64_t i = 0; i < t; ++i) {
        const float* row = src + (r * t + i) * width;
        for (int64_t head = 0; head < h; ++head)
          std::memcpy(q.data() + ((r * h + head) * t + i) * d, row + head * d, d * sizeof(float));
        for (int64_t g = 0; g < hkv; ++g) {
          const int64_t pos = (r * hkv + g) * s + at[r] + i;
          std::memcpy(k + pos * d, row + h * d + g * d, d * sizeof(float));
          std::memcpy(v + pos * dv, row + (h + hkv) * d + g * dv, dv * sizeof(float));
        }
      }
    KernelArgs attention;
    attention.node = a.node;
    attention.inputs = {TensorRef{q.data(), DType::F32, {b, h, t, d}}, keys, values, TensorRef{}};
    for (int slot : {KvLength, KvRows})
      attention.inputs.push_back(a.inputs.size() > static_cast<size_t>(slot) ? a.inputs[slot] : TensorRef{});
    cpu::attention_reference(cpu::AttentionRows(attention, attrs_), a.outputs[2].as<float>());
  }

 private:
  cpu::AttentionAttrs attrs_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(kv_cache_attention) {
  registry.add("kv_cache_attention", make_cpu_kernel<KvCacheAttentionKernel>);
}

}  // namespace kiln
