// Two dense layers on few rows (squeeze-excite's reduce and expand layers on pooled means). A
// block takes R rows (a variant: 1, 2, 4 or 8) and a chunk of kThreads outputs: the rows in
// shared memory; the hidden layer one warp per unit, lanes over k in 16-byte weight loads, each
// load used for all R rows, shuffle-reduced; the output layer one thread per output, its weight
// row in 16-byte loads, again for all R rows. Each block recomputes the small hidden layer so that
// the output layer spreads over many blocks. These layers are latency-bound (at batch 1 a few
// blocks, a chain of dependent loads): the weight loads are 16 bytes, unrolled so that several
// are in flight, and wide blocks give each warp few hidden units.
#include "backends/cuda/activation.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 512;
constexpr int kMaxSharedFloats = 48 * 1024 / 4;
constexpr int kRows[kMlpVariants] = {1, 2, 4, 8};

__device__ __forceinline__ float load(const void* p, bool f32, int64_t i) {
  return f32 ? static_cast<const float*>(p)[i] : __half2float(static_cast<const __half*>(p)[i]);
}

__device__ __forceinline__ float dot4(float4 a, float4 b, float s) {
  return fmaf(a.w, b.w, fmaf(a.z, b.z, fmaf(a.y, b.y, fmaf(a.x, b.x, s))));
}

template <int R>
__global__ void mlp_kernel(MlpArgs p) {
  wait_for_predecessor();
  extern __shared__ float4 shared[];
  const int k4 = mlp_padded(p.k) / 4, h4 = mlp_padded(p.h) / 4;
  float4* x = shared;           // [R][k4]
  float4* hidden = x + R * k4;  // [R][h4]
  const int row0 = blockIdx.y * R, rows = min(R, p.rows - row0);
  float* xf = reinterpret_cast<float*>(x);
  for (int i = threadIdx.x; i < R * k4 * 4; i += blockDim.x) {
    const int r = i / (k4 * 4), c = i - r * k4 * 4;
    xf[i] = r < rows && c < p.k ? load(p.x, p.x_f32, static_cast<int64_t>(row0 + r) * p.k + c) : 0.0f;
  }
  float* hf = reinterpret_cast<float*>(hidden);
  for (int i = threadIdx.x; i < R * h4 * 4; i += blockDim.x) hf[i] = 0.0f;  // the padding stays zero
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  const float4* w1 = reinterpret_cast<const float4*>(p.w1);
  for (int j = warp; j < p.h; j += warps) {
    float s[R] = {};
#pragma unroll 4
    for (int v = lane; v < k4; v += 32) {
      const float4 w = __ldg(w1 + static_cast<int64_t>(j) * k4 + v);
#pragma unroll
      for (int r = 0; r < R; ++r) s[r] = dot4(w, x[r * k4 + v], s[r]);
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int off = 16; off > 0; off /= 2) s[r] += __shfl_xor_sync(0xffffffffu, s[r], off);
    }
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < R; ++r) hf[r * h4 * 4 + j] = activate(s[r] + (p.b1 ? p.b1[j] : 0.0f), p.act1);
  }
  __syncthreads();

  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= p.n) return;
  float s[R];
#pragma unroll
  for (int r = 0; r < R; ++r) s[r] = p.b2 ? p.b2[o] : 0.0f;
  const float4* w2 = reinterpret_cast<const float4*>(p.w2) + static_cast<int64_t>(o) * h4;
#pragma unroll 4
  for (int v = 0; v < h4; ++v) {
    const float4 w = __ldg(w2 + v);
#pragma unroll
    for (int r = 0; r < R; ++r) s[r] = dot4(w, hidden[r * h4 + v], s[r]);
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
    float v = activate(s[r], p.act2);
    const int64_t at = static_cast<int64_t>(row0 + r) * p.n + o;
    if (p.residual) v += load(p.residual, p.y_f32, at);
    if (p.y_f32)
      static_cast<float*>(p.y)[at] = v;
    else
      static_cast<__half*>(p.y)[at] = __float2half(v);
  }
}

size_t shared_bytes(const MlpArgs& p, int rows) {
  return static_cast<size_t>(rows) * (mlp_padded(p.k) + mlp_padded(p.h)) * sizeof(float);
}

template <int R>
void launch_rows(const MlpArgs& p, cudaStream_t s) {
  const dim3 grid((p.n + kThreads - 1) / kThreads, (p.rows + R - 1) / R);
  launch(mlp_kernel<R>, grid, kThreads, shared_bytes(p, R), s, p);
}

}  // namespace

bool mlp_supported(int k, int h) {
  return k >= 1 && h >= 1 && static_cast<int64_t>(mlp_padded(k)) + mlp_padded(h) <= kMaxSharedFloats;
}

const char* mlp_variant_name(int variant) {
  static const char* names[kMlpVariants] = {"mlp_rows1", "mlp_rows2", "mlp_rows4", "mlp_rows8"};
  return names[variant];
}

bool mlp_variant_supports(const MlpArgs& p, int variant) {
  return variant >= 0 && variant < kMlpVariants && shared_bytes(p, kRows[variant]) <= kMaxSharedFloats * 4 &&
         (variant == 0 || kRows[variant] <= p.rows);
}

void launch_mlp(const MlpArgs& p, int variant, cudaStream_t s) {
  switch (kRows[variant]) {
    case 1:
      return launch_rows<1>(p, s);
    case 2:
      return launch_rows<2>(p, s);
    case 4:
      return launch_rows<4>(p, s);
    default:
      return launch_rows<8>(p, s);
  }
}

}  // namespace kiln::cuda
