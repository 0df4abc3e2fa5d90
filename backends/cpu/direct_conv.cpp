#include <vector>

#include "backends/cpu/activation.h"
#include "backends/cpu/kernels.h"

namespace kiln::cpu {

void direct_conv(const float* x, const float* w, const float* bias, float* y, const ConvShape& s, Activation act) {
  const int G = s.groups, K = s.kernel, cin = s.in_c / G, cout = s.out_c / G;
#pragma omp parallel
  {
    std::vector<float> acc(s.out_c);
#pragma omp for collapse(2) schedule(static)
    for (int n = 0; n < s.batch; ++n)
      for (int oy = 0; oy < s.out_h; ++oy)
        for (int ox = 0; ox < s.out_w; ++ox) {
          for (int c = 0; c < s.out_c; ++c) acc[c] = bias ? bias[c] : 0.0f;
          for (int g = 0; g < G; ++g)
            for (int ky = 0; ky < K; ++ky) {
              int iy = oy * s.stride - s.pad.top + ky;
              if (iy < 0 || iy >= s.in_h) continue;
              for (int kx = 0; kx < K; ++kx) {
                int ix = ox * s.stride - s.pad.left + kx;
                if (ix < 0 || ix >= s.in_w) continue;
                const float* px = x + ((static_cast<int64_t>(n) * s.in_h + iy) * s.in_w + ix) * s.in_c + g * cin;
                const float* pw = w + (((static_cast<int64_t>(g) * K + ky) * K + kx) * cin) * cout;
                float* pa = acc.data() + g * cout;
                for (int ci = 0; ci < cin; ++ci) {
                  float v = px[ci];
                  for (int co = 0; co < cout; ++co) pa[co] += v * pw[ci * cout + co];
                }
              }
            }
          float* py = y + ((static_cast<int64_t>(n) * s.out_h + oy) * s.out_w + ox) * s.out_c;
          for (int c = 0; c < s.out_c; ++c) py[c] = apply_activation(acc[c], act);
        }
  }
}

}  // namespace kiln::cpu
