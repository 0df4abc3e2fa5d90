// Convolutions through cuDNN's graph API, offered to the planner as variants beside kiln's own
// GEMM kernels (backends/cuda/ops/conv2d.cpp): conv -> + bias -> activation -> + residual as one
// cuDNN operation graph, so that its fusing engines run the epilogue in the conv's kernel.
// cuDNN is loaded at run time (libcudnn.so.9): where it is missing, or KILN_CUDNN=0 is set, no
// cuDNN variant is offered and kiln's kernels run as before.
//
//   CudnnConvShape s = ...;                       // NHWC fp16 x and y, OHWI fp16 weights, f32 bias
//   for (int i = 0; cudnn_conv::has_plan(s, i); ++i)   // the heuristic's first plans that finalize
//     cudnn_conv::run(s, i, {x, w, bias, residual, y, workspace}, stream);   // workspace_bytes(s, i)
#pragma once

#include <cuda_runtime.h>

#include <compare>
#include <cstddef>
#include <cstdint>

namespace kiln::cuda {

enum class CudnnAct { None, ReLU, SiLU, Sigmoid };

// One conv's problem. Pads are the rows and columns of zeros before and after the input;
// align is the largest power of two (at most 16) dividing every tensor's address.
struct CudnnConvShape {
  int64_t n = 0, h = 0, w = 0, c = 0, o = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  CudnnAct act = CudnnAct::None;
  bool bias = false, residual = false;
  int64_t align = 16;
  auto operator<=>(const CudnnConvShape&) const = default;
};

struct CudnnConvTensors {
  const void* x = nullptr;         // [n, h, w, c] fp16
  const void* w = nullptr;         // [o, kh, kw, c] fp16
  const float* bias = nullptr;     // [o], when shape.bias
  const void* residual = nullptr;  // [n, oh, ow, o] fp16, when shape.residual
  void* y = nullptr;               // [n, oh, ow, o] fp16: act(conv + bias) + residual
  void* workspace = nullptr;
};

namespace cudnn_conv {

// Plans offered per problem: the heuristic's first ones that finalize.
inline constexpr int kMaxPlans = 2;
// Whether cuDNN 9 was found and loaded (once per process).
bool available();
// cudnnGetVersion() of the library loaded (90100 for 9.1.0), or 0 where none is.
size_t version();
// Whether the problem has a plan'th plan on the current device (never when cuDNN is unavailable
// or no engine takes the graph). Plans are made when first asked for and shared by every conv
// of the process; making one is slow host work (cuDNN's fusing engines compile their kernel
// with NVRTC: about 0.2 s each on an H200). Thread-safe, like the other calls.
bool has_plan(const CudnnConvShape& shape, int plan);
size_t workspace_bytes(const CudnnConvShape& shape, int plan);
// Queues the conv on `stream` with the plan'th plan; fails with "[cuda] cuDNN ...".
void run(const CudnnConvShape& shape, int plan, const CudnnConvTensors& t, cudaStream_t stream);

}  // namespace cudnn_conv

}  // namespace kiln::cuda
