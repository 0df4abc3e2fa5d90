// attention on the CPU: one query row at a time, scores, softmax and the weighted sum of values
// in double; keys a row may not see (past kv_length, or after it under causal) are skipped, so a
// row that sees none, or only -inf mask entries, gives zeros.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/attention_inputs.h"
#include "backends/cpu/cpu_kernel.h"

namespace kiln {

namespace {

class AttentionKernel : public CpuKernel {
 public:
  AttentionKernel(const Graph& g, int node, const ConstantLookup&) {
    const Node& n = g.nodes()[node];
    scale_ = n.attrs.get_float("scale");
    causal_ = n.attrs.get_int("causal") != 0;
  }
  void run(const KernelArgs& a, int) override {
    const TensorRef &q = a.inputs[cpu::AttnQ], &k = a.inputs[cpu::AttnK], &v = a.inputs[cpu::AttnV];
    const int64_t nb = q.shape[0], nh = q.shape[1], sq = q.shape[2], d = q.shape[3];
    const int64_t nkv = k.shape[1], sk = k.shape[2], dv = v.shape[3];
    const double scale = scale_ != 0 ? scale_ : 1.0 / std::sqrt(static_cast<double>(d));
    const std::vector<int64_t> lengths = cpu::attention_kv_lengths(a, nb, sk);
    const cpu::AttentionMask m = cpu::attention_mask(a);
    const float* mask = m.data;
    const int64_t* ms = m.stride;
    const float* pq = q.as<const float>();
    const float* pk = k.as<const float>();
    const float* pv = v.as<const float>();
    float* py = a.outputs[0].as<float>();
    const bool causal = causal_;
#pragma omp parallel
    {
      std::vector<double> p(static_cast<size_t>(sk)), acc(static_cast<size_t>(dv));
#pragma omp for schedule(static)
      for (int64_t row = 0; row < nb * nh * sq; ++row) {
        const int64_t b = row / (nh * sq), h = row / sq % nh, i = row % sq, g = h / (nh / nkv);
        const int64_t len = lengths[b];
        const int64_t seen = causal ? std::clamp<int64_t>(i + len - sq + 1, 0, len) : len;
        const float* qi = pq + row * d;
        const float* kb = pk + (b * nkv + g) * sk * d;
        const float* vb = pv + (b * nkv + g) * sk * dv;
        const float* mi = mask ? mask + b * ms[0] + h * ms[1] + i * ms[2] : nullptr;
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < seen; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(qi[c]) * kb[j * d + c];
          p[j] = scale * dot + (mi ? mi[j * ms[3]] : 0.0);
          max = std::max(max, p[j]);
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        if (max != -std::numeric_limits<double>::infinity()) {
          double sum = 0;
          for (int64_t j = 0; j < seen; ++j) sum += p[j] = std::exp(p[j] - max);
          for (int64_t j = 0; j < seen; ++j)
            for (int64_t c = 0; c < dv; ++c) acc[c] += p[j] * vb[j * dv + c];
          for (double& x : acc) x /= sum;
        }
        for (int64_t c = 0; c < dv; ++c) py[row * dv + c] = static_cast<float>(acc[c]);
      }
    }
  }

 private:
  double scale_ = 0;
  bool causal_ = false;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(attention) { registry.add("attention", make_cpu_kernel<AttentionKernel>); }

}  // namespace kiln
