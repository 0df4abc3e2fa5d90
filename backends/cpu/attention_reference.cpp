#include "backends/cpu/attention_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kiln::cpu {

void attention_reference(const AttentionRows& rows, float* y) {
  const int64_t d = rows.d(), dv = rows.dv(), ms = rows.mask_stride();
  const double scale = rows.scale();
#pragma omp parallel
  {
    std::vector<double> p(static_cast<size_t>(rows.sk())), acc(static_cast<size_t>(dv));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows.count(); ++r) {
      const AttentionRows::Row x = rows.row(r);
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < x.seen; ++j) {
        double dot = 0;
        const float* k = x.key(j);
        for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(x.q[c]) * k[c];
        p[j] = scale * dot + (x.mask ? x.mask[j * ms] : 0.0);
        max = std::max(max, p[j]);
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      if (max != -std::numeric_limits<double>::infinity()) {
        double sum = 0;
        for (int64_t j = 0; j < x.seen; ++j) sum += p[j] = std::exp(p[j] - max);
        for (int64_t j = 0; j < x.seen; ++j) {
          const float* v = x.value(j);
          for (int64_t c = 0; c < dv; ++c) acc[c] += p[j] * v[c];
        }
        for (double& a : acc) a /= sum;
      }
      for (int64_t c = 0; c < dv; ++c) y[r * dv + c] = static_cast<float>(acc[c]);
    }
  }
}

}  // namespace kiln::cpu
