#include "backends/cpu/attention_inputs.h"

#include "core/dtype.h"
#include "core/error.h"

namespace kiln::cpu {

std::vector<int64_t> attention_kv_lengths(const KernelArgs& a, int64_t nb, int64_t sk) {
  std::vector<int64_t> out(static_cast<size_t>(nb), sk);
  if (a.inputs.size() <= AttnKvLength || !a.inputs[AttnKvLength].data) return out;
  const TensorRef& t = a.inputs[AttnKvLength];
  for (int64_t b = 0; b < nb; ++b) {
    out[b] = t.dtype == DType::I32 ? t.as<const int32_t>()[b] : t.as<const int64_t>()[b];
    KILN_CHECK(out[b] >= 0 && out[b] <= sk, "[attention] {}: kv_length[{}] = {} is out of range [0, {}]", a.node->name,
               b, out[b], sk);
  }
  return out;
}

AttentionMask attention_mask(const KernelArgs& a) {
  AttentionMask m;
  if (a.inputs.size() <= AttnMask || !a.inputs[AttnMask].data) return m;
  const Shape& shape = a.inputs[AttnMask].shape;
  m.data = a.inputs[AttnMask].as<const float>();
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    m.stride[4 - shape.size() + i] = shape[i] == 1 ? 0 : s;
    s *= shape[i];
  }
  return m;
}

}  // namespace kiln::cpu
