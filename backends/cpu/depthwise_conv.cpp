#include <vector>

#include "backends/cpu/activation.h"
#include "backends/cpu/kernels.h"

namespace kiln::cpu {

void depthwise_conv(const float* x, const float* w, const float* bias, float* y, const ConvShape& s, Activation act) {
  const int C = s.in_c, K = s.kernel;
#pragma omp parallel
  {
    std::vector<float> acc(C);
#pragma omp for collapse(2) schedule(static)
    for (int n = 0; n < s.batch; ++n)
      for (int oy = 0; oy < s.out_h; ++oy)
        for (int ox = 0; ox < s.out_w; ++ox) {
          for (int c = 0; c < C; ++c) acc[c] = bias ? bias[c] : 0.0f;
          for (int ky = 0; ky < K; ++ky) {
            int iy = oy * s.stride - s.pad.top + ky;
            if (iy < 0 || iy >= s.in_h) continue;
            for (int kx = 0; kx < K; ++kx) {
              int ix = ox * s.stride - s.pad.left + kx;
              if (ix < 0 || ix >= s.in_w) continue;
              const float* px = x + ((static_cast<int64_t>(n) * s.in_h + iy) * s.in_w + ix) * C;
              const float* pw = w + (ky * K + kx) * C;
              for (int c = 0; c < C; ++c) acc[c] += px[c] * pw[c];
            }
          }
          float* py = y + ((static_cast<int64_t>(n) * s.out_h + oy) * s.out_w + ox) * C;
          for (int c = 0; c < C; ++c) py[c] = apply_activation(acc[c], act);
        }
  }
}

}  // namespace kiln::cpu
