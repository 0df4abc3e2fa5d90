// Launch functions for the CUDA backend's kernels, one .cu file each. Activations are fp16 NHWC;
// accumulation is fp32. Arguments are plain structs so that host code compiled by the C++
// compiler (cuda_engine.cpp) never includes device code.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::cuda {

// The same functions, in the same order, as kiln::Activation (graph/ops/activation.h).
enum class Act : int { None = 0, ReLU, SiLU, Sigmoid, Tanh, Gelu, GeluTanh };

// out[m, n] = act(sum_k a[m, k] * gate[m / rows_per_image, k] * w[n, k] + bias[n]) + residual[m, n]
// K and N must be multiples of 8. gate and residual are optional (nullptr).
// FP8 (fp8 = true): w holds E4M3 bytes; each loaded a[m, k] * gate is multiplied by a_inv_scale
// and rounded to E4M3 (round to nearest even, saturating), the products are summed in fp32 and
// the sum is multiplied by col_scale[n] (input scale x weight scale) before the bias.
// out_e4m3: the output is stored as E4M3 bytes of out * out_inv_scale (for an FP8 consumer).
// Implicit GEMM (a dense k x k conv, groups 1): A is not stored but read from the NHWC input
// x[batch, h, w, c]: row m is the output pixel (image, oy, ox), column k the tap and channel
// ((ky * kw + kx) * c + ci), zero where the tap falls in the padding; w is OHWI, [o, kh * kw * c].
// c must be a multiple of 8 so that each 8-element vector lies within one tap.
struct Im2col {
  int h = 0, w = 0, c = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_top = 0, pad_left = 0;
  bool active() const { return kh > 0; }
};

struct GemmArgs {
  const __half* a = nullptr;
  const void* w = nullptr;  // __half [n, k], or E4M3 bytes [n, k] when fp8
  const float* bias = nullptr;
  const __half* gate = nullptr;
  const __half* residual = nullptr;
  void* out = nullptr;
  bool out_f32 = false;
  int m = 0, n = 0, k = 0, rows_per_image = 1;
  // When nonzero (fp32 or fp16 output, no residual): the output's columns, fewer than n (a
  // vocabulary of 58101 computed as 58104), stored element by element into rows of that length.
  int out_cols = 0;
  Act act = Act::None;
  float* workspace = nullptr;  // split-K partial sums (see gemm_workspace_bytes)
  int splits = 1;              // set by the split-K variants themselves
  bool fp8 = false;
  const float* col_scale = nullptr;
  float a_inv_scale = 1.0f;
  bool out_e4m3 = false;
  float out_inv_scale = 1.0f;
  Im2col im2col;  // active: a is the conv's input and A its im2col view (mma.sync variants only)
};
// Tile variants (block rows x cols); the planner times them and picks one per layer and batch.
// 0-7 are fp16 WMMA kernels, 8-12 mma.sync kernels for fp16 and FP8 (sm_89 and newer for FP8),
// 13 the few-rows kernel (gemv.cu), the default for up to 16 rows, 14-15 mma.sync with K split
// over 4 or 8 blocks (fp16; implicit GEMMs too), 16-17 the short-K streaming kernels
// (gemm_stream.cu: K up to 128, fp16, no gate or residual).
inline constexpr int kGemmVariants = 18;
const char* gemm_variant_name(int variant);
bool gemm_variant_supports(const GemmArgs& args, int variant);
int gemm_default_variant(const GemmArgs& args);
size_t gemm_workspace_bytes(const GemmArgs& args, int variant);  // 0 unless the variant splits K
void launch_gemm(const GemmArgs& args, int variant, cudaStream_t stream);

// Depthwise conv (groups == channels), NHWC, channels a multiple of 8, kernel 3 or 5 at stride 1
// or 2, or 7 at stride 1. Optionally adds each output channel's per-image sum into pool (fp32 [batch, c]) for a
// following global average pool (squeeze-excite).
// An FP8 input (x_mode) is either fp16 times x_inv_scale rounded to E4M3 as it is loaded, or
// E4M3 bytes its producer stored; the kernel sums E4M3 value x weight and multiplies the sum by
// x_scale before the bias (the per-tensor scale factors out of the sum).
enum class DepthwiseInput : int { F16 = 0, F16ToE4M3 = 1, E4M3 = 2 };
struct DepthwiseArgs {
  const void* x = nullptr;  // __half, or E4M3 bytes when x_mode is E4M3
  DepthwiseInput x_mode = DepthwiseInput::F16;
  float x_scale = 1.0f, x_inv_scale = 1.0f;
  const float* w = nullptr;  // [k * k, c]
  const float* bias = nullptr;
  __half* y = nullptr;
  float* pool = nullptr;    // [batch, c], zeroed: receives the mean of y over oh x ow
  float pool_scale = 1.0f;  // 1 / (oh * ow)
  int batch = 0, h = 0, w_in = 0, c = 0, oh = 0, ow = 0, kernel = 3, stride = 1, pad_top = 0, pad_left = 0;
  Act act = Act::None;
};
bool depthwise_supported(int kernel, int stride, int channels);
// Variants (depthwise_conv.cu says how they differ); the planner times them per layer and batch.
// 0, the strip kernel, runs every supported layer and is the default.
inline constexpr int kDepthwiseVariants = 9;
const char* depthwise_variant_name(int variant);
bool depthwise_variant_supports(const DepthwiseArgs& args, int variant);
void launch_depthwise(const DepthwiseArgs& args, int variant, cudaStream_t stream);

// Two dense layers on few rows (squeeze-excite's, on pooled means): y = act2(w2 act1(w1 x + b1)
// + b2) + residual, per row. x, y and residual are f32 or f16; biases optional. The weights'
// rows are padded with zeros to a multiple of 4 floats (mlp_padded), for 16-byte loads.
struct MlpArgs {
  const void* x = nullptr;  // [rows, k]
  bool x_f32 = true;
  const float* w1 = nullptr;  // [h, mlp_padded(k)]
  const float* b1 = nullptr;
  const float* w2 = nullptr;  // [n, mlp_padded(h)]
  const float* b2 = nullptr;
  const void* residual = nullptr;  // [rows, n], y's type
  void* y = nullptr;               // [rows, n]
  bool y_f32 = false;
  int rows = 0, k = 0, h = 0, n = 0;
  Act act1 = Act::None, act2 = Act::None;
  float* workspace = nullptr;  // mlp_workspace_bytes: the split variant's hidden layer
};
__host__ __device__ constexpr int mlp_padded(int n) { return (n + 3) / 4 * 4; }
bool mlp_supported(int k, int h);
// Variants: rows per block (1, 2, 4, 8), which share each weight load; more rows mean fewer
// blocks. Then mlp_split: the hidden layer in a kernel of its own, spread over the GPU. The
// planner times them per layer and batch.
inline constexpr int kMlpVariants = 5;
const char* mlp_variant_name(int variant);
bool mlp_variant_supports(const MlpArgs& args, int variant);
size_t mlp_workspace_bytes(const MlpArgs& args, int variant);
void launch_mlp(const MlpArgs& args, int variant, cudaStream_t stream);

// Direct conv on the graph's fp32 NCHW input (the stem), writing fp16 NHWC: the layout change and
// the cast are folded into it. c_out a multiple of 8.
struct StemArgs {
  const float* x = nullptr;
  const float* w = nullptr;  // [k, k, c_in, c_out]
  const float* bias = nullptr;
  __half* y = nullptr;
  int batch = 0, c_in = 0, h = 0, w_in = 0, c_out = 0, oh = 0, ow = 0, kernel = 3, stride = 1, pad_top = 0,
      pad_left = 0;
  Act act = Act::None;
};
void launch_stem(const StemArgs& args, cudaStream_t stream);

void launch_global_avg_pool(const __half* x, __half* y, int batch, int pixels, int c, cudaStream_t stream);
void launch_scale_channels(const __half* x, const __half* gate, __half* y, int batch, int pixels, int c,
                           cudaStream_t stream);
void launch_add(const __half* a, const __half* b, __half* y, int64_t n, cudaStream_t stream);
// A dense layer of any shape, one thread per output: y = act(x w^T + bias) + residual. For small
// layers the GEMMs do not take. x, residual and y are f32 or f16; w f32 [out, in].
struct LinearSmallArgs {
  const void* x = nullptr;
  bool x_f32 = false;
  const float* w = nullptr;
  const float* bias = nullptr;
  const void* residual = nullptr;  // y's type
  void* y = nullptr;
  bool y_f32 = false;
  int64_t rows = 0;
  int in = 0, out = 0;
  Act act = Act::None;
};
void launch_linear_small(const LinearSmallArgs& args, cudaStream_t stream);
void launch_half_to_float(const __half* x, float* y, int64_t n, cudaStream_t stream);

}  // namespace kiln::cuda
