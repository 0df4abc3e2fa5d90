// max_pool on the CPU (float types arrive as f32): per output pixel, a max over the window's
// cells inside x, channels innermost.
#include <cmath>
#include <limits>

#include "backends/cpu/cpu_kernel.h"
#include "graph/ops/max_pool.h"

namespace kiln {

namespace {

class MaxPoolKernel : public CpuKernel {
 public:
  MaxPoolKernel(const Graph&, int, const ConstantLookup&) {}
  void run(const KernelArgs& a, int) override {
    const PoolGeometry g = max_pool_geometry(*a.node, a.inputs[0].shape);
    const float* x = a.inputs[0].as<const float>();
    float* y = a.outputs[0].as<float>();
    const int64_t C = g.c;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          float* py = y + ((n * g.oh + oy) * g.ow + ox) * C;
          for (int64_t c = 0; c < C; ++c) py[c] = -std::numeric_limits<float>::infinity();
          for (int ky = 0; ky < g.kh; ++ky) {
            const int64_t iy = oy * g.stride_h - g.pad_top + ky;
            if (iy < 0 || iy >= g.h) continue;
            for (int kx = 0; kx < g.kw; ++kx) {
              const int64_t ix = ox * g.stride_w - g.pad_left + kx;
              if (ix < 0 || ix >= g.w) continue;
              const float* px = x + ((n * g.h + iy) * g.w + ix) * C;
              for (int64_t c = 0; c < C; ++c)
                if (px[c] > py[c] || std::isnan(px[c])) py[c] = px[c];  // NaN, once in, stays
            }
          }
        }
  }
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(max_pool) { registry.add("max_pool", make_cpu_kernel<MaxPoolKernel>); }

}  // namespace kiln
