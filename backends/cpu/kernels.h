// The CPU backend's kernels, one file each. Activations are NHWC fp32; this backend is kiln's
// reference for correctness, so kernels are plain loops except where a BLAS GEMM does the work.
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace kiln::cpu {

struct ConvShape {
  int batch, in_h, in_w, in_c, out_h, out_w, out_c, kernel, stride, groups;
  Padding pad;
};

// 1x1, stride 1, groups 1: one GEMM. weight [out, in].
void pointwise_conv(const float* x, const float* weight, const float* bias, float* y, const ConvShape& s,
                    Activation act);
// groups == channels. weight repacked as [k, k, C].
void depthwise_conv(const float* x, const float* weight_kkc, const float* bias, float* y, const ConvShape& s,
                    Activation act);
// Any other conv. weight repacked as [groups][k][k][in/groups][out/groups].
void direct_conv(const float* x, const float* weight_packed, const float* bias, float* y, const ConvShape& s,
                 Activation act);
void global_avg_pool(const float* x, float* y, int batch, int pixels, int channels);
// weight [out, in]; x [batch, in].
void linear(const float* x, const float* weight, const float* bias, float* y, int batch, int in, int out,
            Activation act);
void scale_channels(const float* x, const float* gate, float* y, int batch, int pixels, int channels);
void add(const float* a, const float* b, float* y, int64_t n);

}  // namespace kiln::cpu
