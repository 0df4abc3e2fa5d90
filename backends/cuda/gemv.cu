// y = act(x W^T + b) (+ residual) for up to 8 rows per block row: a bandwidth-bound walk over
// the weights. A block computes 8 consecutive outputs (the epilogue's unit, shared with the
// GEMMs) for its 8 rows; its warps split K, each lane multiplying 16-byte vectors of the 8 weight
// rows by the same K slice of each input row (fp32 sums), then warp shuffles and shared memory
// add the pieces. The tiled tensor-core kernels would spend most of a 32- or 64-row tile on rows
// that do not exist and read the weights through far fewer blocks.
// A block has one thread per 16-byte vector of a weight row (2 to 16 warps), so that every
// thread's weights are a single set of loads, issued before waiting for the predecessor kernel:
// weights are constants that no kernel writes, so under programmatic dependent launch their
// reads overlap the previous kernel instead of following it. At one row a decoder step is a chain
// of such walks over a few MB each, and their load latency was most of their time.
// FP8 (E4M3 weights, 8 bytes a vector): the same walk over half the bytes; each input vector is
// rounded to E4M3 at the layer's input scale as it is loaded, each sum multiplied by its column's
// scale before the epilogue, as the FP8 GEMM tiles do (gemm_mma.cu).
// A norm_linear (fp16 weights): every block first takes its rows' statistics in one pass (each
// vector's mean and squared deviations, merged pairwise: row_norms), which agree with layer_norm's
// kernel (norm.cu: a shifted sum, then squares about the mean) to float rounding, not bit for bit
// (the mean carries about an fp32 ulp of itself, 8192 times finer than the fp16 inputs' own
// rounding). After the wait that is one read of the row and one barrier before the weights are used
// (until 2026-12-07: three passes, a read of the first element before them and two block sums). It
// then normalises each input vector as it loads it, rounded to fp16 like the norm's output, which
// the blocks of the first column group also store. Every block repeats the statistics instead of a
// launch of its own: at one row this took a 12-layer decoder step from 0.80 to 0.70 ms on an H100
// (37 norms).
#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "backends/cuda/fp8.cuh"
#include "backends/cuda/gemm_epilogue.cuh"
#include "backends/cuda/gemv.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

constexpr int kCols = 8;      // outputs per block
constexpr int kRowGroup = 8;  // rows per block

// Warps per block: one thread per 16-byte vector of a weight row where the registers allow (a
// thread holds 8 weight vectors and 8 sums per row).
__host__ __device__ constexpr int max_warps(int rows) { return rows <= 2 ? 16 : rows <= 4 ? 8 : 4; }
int warps_for(int k, int rows) { return std::clamp((k / 8 + 31) / 32, 2, max_warps(rows)); }

// Layer-norm statistics of one row as count, mean and sum of squared deviations (M2), merged by
// Chan et al.'s pairwise update: one pass over the row and one block reduction, without the
// cancellation of a sum of squares about zero.
// (No member initialisers: the block's shared scratch holds these.)
struct Moments {
  float n, mean, m2;
};

__device__ __forceinline__ Moments merge(const Moments& a, const Moments& b) {
  const float n = a.n + b.n;
  if (n == 0.0f) return a;
  const float delta = b.mean - a.mean, share = b.n / n;
  return {n, fmaf(delta, share, a.mean), a.m2 + b.m2 + delta * delta * a.n * share};
}

// The moments of 8 values (a vector of the row).
__device__ __forceinline__ Moments moments8(const Half8& a) {
  float x[8], sum = 0.0f;
#pragma unroll
  for (int e = 0; e < 8; ++e) sum += x[e] = __half2float(a.h[e]);
  const float mean = sum * 0.125f;
  float m2 = 0.0f;
#pragma unroll
  for (int e = 0; e < 8; ++e) m2 = fmaf(x[e] - mean, x[e] - mean, m2);
  return {8.0f, mean, m2};
}

// The block's rows' layer-norm statistics: the mean and 1 / std.
template <int kRows>
struct RowNorms {
  float mean[kRows], inv[kRows];
};

// Each thread merges the moments of its vectors of each row, each warp by xor shuffles (after
// which lanes may differ in the last bits: merge's rounding depends on the order of its operands,
// so only lane 0's result is kept), then every thread merges the warps' in the same order, so
// that all threads hold the same statistics.
template <int kRows>
__device__ RowNorms<kRows> row_norms(const GemmArgs& p, float eps, int m0, int rows, Moments (*scratch)[kRows]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  Moments s[kRows] = {};
  for (int c = threadIdx.x; c < p.k / 8; c += blockDim.x)
#pragma unroll
    for (int m = 0; m < kRows; ++m)
      if (m < rows) {
        Half8 a;
        a.u = __ldg(reinterpret_cast<const uint4*>(p.a + static_cast<int64_t>(m0 + m) * p.k) + c);
        s[m] = merge(s[m], moments8(a));
      }
#pragma unroll
  for (int m = 0; m < kRows; ++m) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      const Moments other = {__shfl_xor_sync(0xffffffffu, s[m].n, offset),
                             __shfl_xor_sync(0xffffffffu, s[m].mean, offset),
                             __shfl_xor_sync(0xffffffffu, s[m].m2, offset)};
      s[m] = merge(s[m], other);
    }
    if (lane == 0) scratch[warp][m] = s[m];
  }
  __syncthreads();
  RowNorms<kRows> r;
#pragma unroll
  for (int m = 0; m < kRows; ++m) {
    Moments t = {};
    for (int q = 0; q < warps; ++q) t = merge(t, scratch[q][m]);
    r.mean[m] = t.mean;
    r.inv[m] = rsqrtf(t.m2 / static_cast<float>(p.k) + eps);
  }
  return r;
}

// The norm's scale and shift for input elements c * 8 ... (1 and 0 where absent).
struct NormAffine {
  float gamma[8], beta[8];
};

// Two 16-byte loads each: gamma and beta are [k] f32 with k % 8 == 0, from the kernel's own
// aligned weight memory.
__device__ __forceinline__ NormAffine norm_affine(const GemvNorm& n, int c) {
  NormAffine f;
  auto load = [&](const float* v, float fill, float(&out)[8]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float4 q = v ? __ldg(reinterpret_cast<const float4*>(v) + c * 2 + h) : make_float4(fill, fill, fill, fill);
      out[4 * h] = q.x, out[4 * h + 1] = q.y, out[4 * h + 2] = q.z, out[4 * h + 3] = q.w;
    }
  };
  load(n.gamma, 1.0f, f.gamma);
  load(n.beta, 0.0f, f.beta);
  return f;
}

// One input vector of row m normalised, rounded to fp16.
template <int kRows>
__device__ __forceinline__ uint4 normalise(const RowNorms<kRows>& r, const NormAffine& f, int m, uint4 x) {
  Half8 a, y;
  a.u = x;
#pragma unroll
  for (int e = 0; e < 8; e += 2) {
    float v[2];
#pragma unroll
    for (int h = 0; h < 2; ++h)
      v[h] = fmaf((__half2float(a.h[e + h]) - r.mean[m]) * r.inv[m], f.gamma[e + h], f.beta[e + h]);
    y.h2[e / 2] = __floats2half2_rn(v[0], v[1]);
  }
  return y.u;
}

template <int kRows, bool kResidual, bool kOutF32, bool kFp8, bool kNorm>
__global__ void __launch_bounds__(max_warps(kRows) * 32) gemv_kernel(GemmArgs p, GemvNorm norm) {
  const int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n0 = blockIdx.x * kCols, m0 = blockIdx.y * kRowGroup;
  const int vecs = p.k / 8;
  // One vector of 8 weights per output column: 16 bytes of fp16, or 8 of E4M3 (widened at use).
  using Vec = std::conditional_t<kFp8, uint2, uint4>;
  const auto* w = static_cast<const Vec*>(p.w);
  Vec wv[kCols];
  auto load_weights = [&](int c) {
#pragma unroll
    for (int j = 0; j < kCols; ++j) wv[j] = __ldg(w + static_cast<int64_t>(n0 + j) * vecs + c);
  };
  // The norm's gamma and beta are constants too.
  [[maybe_unused]] NormAffine affine;
  if (static_cast<int>(threadIdx.x) < vecs) {
    load_weights(threadIdx.x);
    if constexpr (kNorm) affine = norm_affine(norm, threadIdx.x);
  }
  // Thread m < rows stores row m0 + m: its bias (and FP8 column scales) before the wait, its
  // residual right after it, all in flight while the block sums.
  const int rows = min(kRows, p.m - m0);
  const bool stores = static_cast<int>(threadIdx.x) < rows;
  EpilogueBias bias = {};
  [[maybe_unused]] float col_scale[kCols];
  if (stores) {
    bias = load_bias(p, n0);
    if constexpr (kFp8)
#pragma unroll
      for (int j = 0; j < kCols; ++j) col_scale[j] = __ldg(p.col_scale + n0 + j);
  }
  wait_for_predecessor();
  const uint4 residual = stores ? load_residual<kResidual>(p, m0 + threadIdx.x, n0) : make_uint4(0, 0, 0, 0);
  __shared__ float partial[max_warps(kRows)][kRows][kCols];
  [[maybe_unused]] RowNorms<kRows> norms;
  if constexpr (kNorm) {
    __shared__ Moments scratch[max_warps(kRows)][kRows];
    norms = row_norms<kRows>(p, norm.eps, m0, rows, scratch);
  }
  float acc[kRows][kCols] = {};
  for (int c = threadIdx.x; c < vecs; c += blockDim.x) {
    if (c != static_cast<int>(threadIdx.x)) {
      load_weights(c);
      if constexpr (kNorm) affine = norm_affine(norm, c);
    }
    Half8 a[kRows];
#pragma unroll
    for (int m = 0; m < kRows; ++m) {
      a[m].u = m < rows ? __ldg(reinterpret_cast<const uint4*>(p.a + static_cast<int64_t>(m0 + m) * p.k) + c)
                        : make_uint4(0, 0, 0, 0);
      if constexpr (kFp8) a[m].u = round_to_e4m3(a[m], p.a_inv_scale);
      if constexpr (kNorm) {
        if (m < rows) {
          a[m].u = normalise(norms, affine, m, a[m].u);
          if (blockIdx.x == 0) reinterpret_cast<uint4*>(norm.out + static_cast<int64_t>(m0 + m) * p.k)[c] = a[m].u;
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      Half8 wj;
      if constexpr (kFp8)
        wj.u = widen_e4m3(wv[j]);
      else
        wj.u = wv[j];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 wf = __half22float2(wj.h2[e]);
#pragma unroll
        for (int m = 0; m < kRows; ++m) {
          const float2 af = __half22float2(a[m].h2[e]);
          acc[m][j] = fmaf(af.x, wf.x, fmaf(af.y, wf.y, acc[m][j]));
        }
      }
    }
  }
#pragma unroll
  for (int m = 0; m < kRows; ++m)
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
#pragma unroll
      for (int mask = 16; mask > 0; mask /= 2) acc[m][j] += __shfl_xor_sync(0xffffffffu, acc[m][j], mask);
      if (lane == 0) partial[warp][m][j] = acc[m][j];
    }
  __syncthreads();
  if (!stores) return;
  const int m = threadIdx.x;
  float v[kCols];
#pragma unroll
  for (int j = 0; j < kCols; ++j) {
    v[j] = 0.0f;
#pragma unroll
    for (int q = 0; q < warps; ++q) v[j] += partial[q][m][j];
    if constexpr (kFp8) v[j] *= col_scale[j];
  }
  store_loaded<kResidual, kOutF32>(p, m0 + m, n0, v, bias, residual);
}

template <int kRows, bool kFp8, bool kNorm>
void launch_rows(const GemmArgs& p, const GemvNorm& n, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(p.n / kCols), static_cast<unsigned>((p.m + kRowGroup - 1) / kRowGroup));
  const unsigned threads = static_cast<unsigned>(warps_for(p.k, kRows) * 32);
  if (p.out_f32)
    launch(gemv_kernel<kRows, false, true, kFp8, kNorm>, grid, threads, 0, s, p, n);
  else if (p.residual)
    launch(gemv_kernel<kRows, true, false, kFp8, kNorm>, grid, threads, 0, s, p, n);
  else
    launch(gemv_kernel<kRows, false, false, kFp8, kNorm>, grid, threads, 0, s, p, n);
}

template <bool kFp8, bool kNorm>
void launch_any_rows(const GemmArgs& p, const GemvNorm& n, cudaStream_t s) {
  if (p.m == 1)
    launch_rows<1, kFp8, kNorm>(p, n, s);
  else if (p.m == 2)
    launch_rows<2, kFp8, kNorm>(p, n, s);
  else if (p.m <= 4)
    launch_rows<4, kFp8, kNorm>(p, n, s);
  else
    launch_rows<8, kFp8, kNorm>(p, n, s);
}

}  // namespace

bool gemv_supports(const GemmArgs& p) {
  return !p.gate && !p.out_e4m3 && p.m >= 1 && p.m <= kGemvMaxRows && p.n % kCols == 0 && p.k % 8 == 0;
}

bool gemv_by_default(const GemmArgs& p) { return !p.im2col.active() && p.m <= 16 && gemv_supports(p); }

void launch_gemv(const GemmArgs& p, cudaStream_t s, const GemvNorm* norm) {
  if (norm && p.fp8) throw std::invalid_argument("[cuda] gemv: no layer norm before FP8 weights");
  if (p.fp8)
    launch_any_rows<true, false>(p, GemvNorm{}, s);
  else if (norm)
    launch_any_rows<false, true>(p, *norm, s);
  else
    launch_any_rows<false, false>(p, GemvNorm{}, s);
}

}  // namespace kiln::cuda
