// Two dense layers on few rows (squeeze-excite's reduce and expand layers on pooled means). A
// block takes R rows (a variant: 1, 2, 4 or 8) and a chunk of kThreads outputs: the rows in
// shared memory; the hidden layer one warp per unit, lanes over k in 16-byte weight loads, each
// load used for all R rows, shuffle-reduced; the output layer one thread per output, its weight
// row in 16-byte loads, again for all R rows. Each block recomputes the small hidden layer so that
// the output layer spreads over many blocks. These layers are latency-bound (at batch 1 a few
// blocks, a chain of dependent loads): the weight loads are 16 bytes, unrolled so that several
// are in flight, and wide blocks give each warp few hidden units.
// mlp_split runs the hidden layer as a kernel of its own instead (one warp per unit and
// kSplitRows rows, into the workspace), then the output layer as above. Recomputing the hidden
// layer in every block stops paying for wide layers at batch > 1: a 2688 -> 112 -> 2688
// squeeze-excite at batch 32 gives each block of 8 rows 2.4 M multiply-adds before its first
// output.
#include "backends/cuda/activation.cuh"
#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 512;
constexpr int kMaxSharedFloats = 48 * 1024 / 4;
constexpr int kRows[] = {1, 2, 4, 8};  // rows per block of the single-kernel variants
constexpr int kSplit = 4;              // mlp_split's variant number
constexpr int kSplitRows = 4;          // rows per block of both its kernels
constexpr int kHiddenWarps = 8;        // hidden units per block of its first
static_assert(sizeof(kRows) / sizeof(kRows[0]) == kSplit && kSplit + 1 == kMlpVariants);

__device__ __forceinline__ float load(const void* p, bool f32, int64_t i) {
  return f32 ? static_cast<const float*>(p)[i] : __half2float(static_cast<const __half*>(p)[i]);
}

__device__ __forceinline__ float dot4(float4 a, float4 b, float s) {
  return fmaf(a.w, b.w, fmaf(a.z, b.z, fmaf(a.y, b.y, fmaf(a.x, b.x, s))));
}

// The output layer for `rows` rows from row0 on, their hidden units in shared memory ([R][h4]),
// one thread per output.
template <int R>
__device__ __forceinline__ void output_layer(const MlpArgs& p, const float4* hidden, int row0, int rows) {
  const int h4 = mlp_padded(p.h) / 4;
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
    for (int r = 0; r < R; ++r) s[r] = block_reduce::warp_sum(s[r]);
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < R; ++r) hf[r * h4 * 4 + j] = activate(s[r] + (p.b1 ? p.b1[j] : 0.0f), p.act1);
  }
  __syncthreads();

  output_layer<R>(p, hidden, row0, rows);
}

// mlp_split's first kernel: hidden unit j of kSplitRows rows per warp, into the workspace
// ([rows][mlp_padded(h)], the padding zero). x is read from global memory (a few KB, cached).
__global__ void mlp_hidden_kernel(MlpArgs p) {
  wait_for_predecessor();
  const int k4 = mlp_padded(p.k) / 4, stride = mlp_padded(p.h);
  const int j = blockIdx.x * kHiddenWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row0 = blockIdx.y * kSplitRows, rows = min(kSplitRows, p.rows - row0);
  if (j >= stride) return;
  float s[kSplitRows] = {};
  if (j < p.h) {
    const float4* w1 = reinterpret_cast<const float4*>(p.w1) + static_cast<int64_t>(j) * k4;
#pragma unroll 4
    for (int v = lane; v < k4; v += 32) {
      const float4 w = __ldg(w1 + v);
#pragma unroll
      for (int r = 0; r < kSplitRows; ++r) {
        if (r >= rows) break;
        const int64_t at = static_cast<int64_t>(row0 + r) * p.k + 4 * v;
        float e[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) e[i] = 4 * v + i < p.k ? load(p.x, p.x_f32, at + i) : 0.0f;
        s[r] = dot4(w, make_float4(e[0], e[1], e[2], e[3]), s[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kSplitRows; ++r) s[r] = block_reduce::warp_sum(s[r]);
  }
  if (lane != 0) return;
  for (int r = 0; r < rows; ++r)
    p.workspace[static_cast<int64_t>(row0 + r) * stride + j] =
        j < p.h ? activate(s[r] + (p.b1 ? p.b1[j] : 0.0f), p.act1) : 0.0f;
}

// mlp_split's second kernel: the output layer from the workspace.
__global__ void mlp_output_kernel(MlpArgs p) {
  wait_for_predecessor();
  extern __shared__ float4 shared[];  // [kSplitRows][h4]
  const int h4 = mlp_padded(p.h) / 4;
  const int row0 = blockIdx.y * kSplitRows, rows = min(kSplitRows, p.rows - row0);
  const float4* hidden = reinterpret_cast<const float4*>(p.workspace) + static_cast<int64_t>(row0) * h4;
  for (int i = threadIdx.x; i < kSplitRows * h4; i += blockDim.x)
    shared[i] = i < rows * h4 ? hidden[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  __syncthreads();
  output_layer<kSplitRows>(p, shared, row0, rows);
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
  static const char* names[kMlpVariants] = {"mlp_rows1", "mlp_rows2", "mlp_rows4", "mlp_rows8", "mlp_split"};
  return names[variant];
}

bool mlp_variant_supports(const MlpArgs& p, int variant) {
  if (variant == kSplit) return static_cast<int64_t>(kSplitRows) * mlp_padded(p.h) <= kMaxSharedFloats;
  return variant >= 0 && variant < kSplit && shared_bytes(p, kRows[variant]) <= kMaxSharedFloats * 4 &&
         (variant == 0 || kRows[variant] <= p.rows);
}

size_t mlp_workspace_bytes(const MlpArgs& p, int variant) {
  return variant == kSplit ? static_cast<size_t>(p.rows) * mlp_padded(p.h) * sizeof(float) : 0;
}

void launch_mlp(const MlpArgs& p, int variant, cudaStream_t s) {
  if (variant == kSplit) {
    const int row_blocks = (p.rows + kSplitRows - 1) / kSplitRows;
    launch(mlp_hidden_kernel, dim3((mlp_padded(p.h) + kHiddenWarps - 1) / kHiddenWarps, row_blocks), kHiddenWarps * 32,
           0, s, p);
    launch(mlp_output_kernel, dim3((p.n + kThreads - 1) / kThreads, row_blocks), kThreads,
           static_cast<size_t>(kSplitRows) * mlp_padded(p.h) * sizeof(float), s, p);
    return;
  }
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
