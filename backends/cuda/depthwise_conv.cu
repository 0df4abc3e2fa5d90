// Depthwise conv + bias + activation, NHWC fp16, and the squeeze-excite average pool
// accumulated in the same pass (per-image channel sums, reduced on chip, then one atomicAdd of
// sum / pixels per channel and block into a zeroed buffer: the mean). A thread owns 8 channels
// (16-byte vectors) of a strip of kStrip outputs along a row: each input vector it reads feeds
// every output of the strip that covers it. Weights are fp32 and sums fp32. An FP8 input is read
// as 8-byte vectors of E4M3 (or rounded to E4M3 from fp16) and its scale applied to the sum.
//
// Two kernels here, timed per layer and batch by the planner (variants) with the tensor-core ones
// of depthwise_mma.cu:
// - strip: each thread reads its inputs straight from global memory. Neighbouring strips and
//   rows read the same input again (through L1/L2: K * ((kStrip - 1) * S + K) / kStrip reads per
//   output, 4.5 at 3x3 and 10 at 5x5 with stride 1), but there is no staging.
// - tile: a block stages a 2-D input tile with its halo in shared memory for a tile of outputs
//   and a slice of channels, then every thread computes its strip from shared memory. Global
//   reads fall to about one per input (plus the halo).
// Profiled at batch 128 (Nsight Compute) both are bound by instruction issue and latency rather
// than bandwidth: fp32 weights keep conversions out of the inner loop (one per input vector
// remains), and the tile is staged asynchronously (an fp32 tile staged through registers,
// converted once, issued fewer instructions but ran slower).
#include <algorithm>

#include "backends/cuda/depthwise_input.cuh"
#include "backends/cuda/depthwise_mma.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

constexpr int kMaxGroups = 1024;             // 8192 channels: one thread per group, at most 1024 a block
constexpr int kStrip = 4;                    // outputs per thread along x
constexpr size_t kMaxTileBytes = 96 * 1024;  // shared memory of a tile block (opted in past 48 KiB)

// The accumulators of a strip start at the bias, unless an FP8 input's scale is applied first.
template <DepthwiseInput kMode>
__device__ __forceinline__ void start_strip(const DepthwiseArgs& p, int c0, float (&acc)[kStrip][8]) {
#pragma unroll
  for (int r = 0; r < kStrip; ++r)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[r][e] = p.bias && kMode == DepthwiseInput::F16 ? p.bias[c0 + e] : 0.0f;
}

// The K taps of kernel row ky for 8 channels (fp32 weights: no conversions in the inner loop).
template <int K>
__device__ __forceinline__ void load_weight_row(const DepthwiseArgs& p, int ky, int c0, float (&wrow)[K][8]) {
#pragma unroll
  for (int kx = 0; kx < K; ++kx) {
    const float4* w = reinterpret_cast<const float4*>(p.w + (ky * K + kx) * p.c + c0);
    const float4 a = __ldg(w), b = __ldg(w + 1);
    const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int e = 0; e < 8; ++e) wrow[kx][e] = v[e];
  }
}

// Input column j of a strip's window (j = 0 .. (kStrip - 1) * S + K - 1) into every output of the
// strip whose taps cover it.
template <int K, int S>
__device__ __forceinline__ void accumulate(int j, const float (&xf)[8], const float (&wrow)[K][8],
                                           float (&acc)[kStrip][8]) {
#pragma unroll
  for (int r = 0; r < kStrip; ++r) {
    const int kx = j - r * S;
    if (kx < 0 || kx >= K) continue;  // resolved at compile time
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[r][e] = fmaf(xf[e], wrow[kx][e], acc[r][e]);
  }
}

// Scale, bias and activation; stores the strip's outputs inside the map and adds them to pool.
template <DepthwiseInput kMode>
__device__ __forceinline__ void store_strip(const DepthwiseArgs& p, int n, int oy, int ox0, int c0,
                                            float (&acc)[kStrip][8], float (&pool)[8]) {
  __half* y = p.y + (static_cast<int64_t>(n) * p.oh + oy) * p.ow * p.c + c0;
#pragma unroll
  for (int r = 0; r < kStrip; ++r) {
    if (ox0 + r >= p.ow) break;
    Half8 o;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float a = acc[r][2 * e], b = acc[r][2 * e + 1];
      if constexpr (kMode != DepthwiseInput::F16) {
        a = a * p.x_scale + (p.bias ? p.bias[c0 + 2 * e] : 0.0f);
        b = b * p.x_scale + (p.bias ? p.bias[c0 + 2 * e + 1] : 0.0f);
      }
      a = activate(a, p.act);
      b = activate(b, p.act);
      o.h2[e] = __floats2half2_rn(a, b);
      pool[2 * e] += a;
      pool[2 * e + 1] += b;
    }
    *reinterpret_cast<uint4*>(y + static_cast<int64_t>(ox0 + r) * p.c) = o.u;
  }
}

template <int K, int S, DepthwiseInput kMode>
__global__ void depthwise_strip_kernel(DepthwiseArgs p, int lanes) {
  wait_for_predecessor();
  extern __shared__ float red[];  // [lanes][c], only when pooling across lanes
  constexpr int kCols = (kStrip - 1) * S + K;
  const int groups = p.c / 8;
  const int g = threadIdx.x % groups, lane = threadIdx.x / groups;
  const int n = blockIdx.y, c0 = g * 8;
  const int strips_per_row = (p.ow + kStrip - 1) / kStrip;
  const int strip = blockIdx.x * lanes + lane;
  float pool[8] = {};
  if (lane < lanes && strip < p.oh * strips_per_row) {
    const int oy = strip / strips_per_row, ox0 = (strip % strips_per_row) * kStrip;
    const int64_t x0 = static_cast<int64_t>(n) * p.h * p.w_in * p.c + c0;
    float acc[kStrip][8];
    start_strip<kMode>(p, c0, acc);
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
      const int iy = oy * S - p.pad_top + ky;
      if (iy < 0 || iy >= p.h) continue;
      float wrow[K][8];
      load_weight_row<K>(p, ky, c0, wrow);
      const int ix0 = ox0 * S - p.pad_left;
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        const int ix = ix0 + j;
        if (ix < 0 || ix >= p.w_in) continue;
        float xf[8];
        load_input8<kMode>(p, x0 + (static_cast<int64_t>(iy) * p.w_in + ix) * p.c, xf);
        accumulate<K, S>(j, xf, wrow, acc);
      }
    }
    store_strip<kMode>(p, n, oy, ox0, c0, acc, pool);
  }
  if (!p.pool) return;
  if (lanes == 1) {
#pragma unroll
    for (int e = 0; e < 8; ++e) atomicAdd(p.pool + static_cast<int64_t>(n) * p.c + c0 + e, pool[e] * p.pool_scale);
    return;
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) red[lane * p.c + c0 + e] = pool[e];
  __syncthreads();
  for (int c = threadIdx.x; c < p.c; c += blockDim.x) {
    float s = 0.0f;
    for (int l = 0; l < lanes; ++l) s += red[l * p.c + c];
    atomicAdd(p.pool + static_cast<int64_t>(n) * p.c + c, s * p.pool_scale);
  }
}

// A tile kernel's block: rows x (strips * kStrip) outputs of 8 * groups channels (groups a power
// of two, 1 << groups_log2), one thread per strip and group; `slices` blocks share a tile of
// outputs, each its groups.
struct TileShape {
  int rows = 0, strips = 0, groups = 0, groups_log2 = 0, slices = 0;
};

// Where input pixel `pixel` (row-major in the tile) and channel group g live in shared memory: one
// spare slot after every kStrip * S pixels, so that the threads of a quarter warp, which read
// pixels one strip apart, fall on different banks.
template <int S>
__device__ __forceinline__ int tile_slot(int pixel, int g, int groups_log2) {
  return ((pixel + pixel / (kStrip * S)) << groups_log2) + g;
}

__host__ __device__ constexpr int tile_in_rows(int rows, int k, int s) { return (rows - 1) * s + k; }
__host__ __device__ constexpr int tile_in_cols(int strips, int k, int s) { return (strips * kStrip - 1) * s + k; }
__host__ __device__ constexpr int tile_slots(int pixels, int s, int groups) {
  return (pixels + pixels / (kStrip * s)) * groups;
}

// The tile holds fp16 (E4M3 values are exact in fp16). An fp16 input is staged with cp.async:
// no registers held while the loads are in flight, which matters because these blocks are few
// per SM (register-bound) and their loads are all issued before one barrier.
template <int K, int S, DepthwiseInput kMode>
__global__ void depthwise_tile_kernel(DepthwiseArgs p, TileShape t) {
  wait_for_predecessor();
  extern __shared__ uint4 tile[];  // [slots] input, then [warps][groups * 8] pool sums
  constexpr int kCols = (kStrip - 1) * S + K;
  const int in_rows = tile_in_rows(t.rows, K, S), in_cols = tile_in_cols(t.strips, K, S);
  const int tile_w = t.strips * kStrip, tiles_x = (p.ow + tile_w - 1) / tile_w;
  const int tile_index = blockIdx.x / t.slices, slice = blockIdx.x - tile_index * t.slices;
  const int oy0 = tile_index / tiles_x * t.rows, ox0 = tile_index % tiles_x * tile_w;
  const int n = blockIdx.y, cb = slice * t.groups * 8;
  const int iy0 = oy0 * S - p.pad_top, ix0 = ox0 * S - p.pad_left;
  const int pixels = in_rows * in_cols;

  const int64_t image = static_cast<int64_t>(n) * p.h * p.w_in * p.c + cb;
  for (int i = threadIdx.x; i < pixels << t.groups_log2; i += blockDim.x) {
    const int g = i & (t.groups - 1), pixel = i >> t.groups_log2;
    const int r = pixel / in_cols, col = pixel - r * in_cols;
    const int iy = iy0 + r, ix = ix0 + col;
    const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w_in;
    const int64_t offset = image + (static_cast<int64_t>(iy) * p.w_in + ix) * p.c + g * 8;
    stage_input8<kMode>(p, tile + tile_slot<S>(pixel, g, t.groups_log2), offset, inside);
  }
  wait_staged<kMode>();
  __syncthreads();

  const int g = threadIdx.x & (t.groups - 1), lane = threadIdx.x >> t.groups_log2;
  const int ty = lane / t.strips, sx = lane - ty * t.strips;
  const int oy = oy0 + ty, ox = ox0 + sx * kStrip, c0 = cb + g * 8;
  float pool[8] = {};
  if (oy < p.oh && ox < p.ow) {
    float acc[kStrip][8];
    start_strip<kMode>(p, c0, acc);
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
      float wrow[K][8];
      load_weight_row<K>(p, ky, c0, wrow);
      const int base = (ty * S + ky) * in_cols + sx * kStrip * S;
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        Half8 xv;
        xv.u = tile[tile_slot<S>(base + j, g, t.groups_log2)];
        float xf[8];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float2 f = __half22float2(xv.h2[e]);
          xf[2 * e] = f.x;
          xf[2 * e + 1] = f.y;
        }
        accumulate<K, S>(j, xf, wrow, acc);
      }
    }
    store_strip<kMode>(p, n, oy, ox, c0, acc, pool);
  }
  // The sums of one channel group: across the warp's lanes of that group (a warp holds
  // 32 / groups of them; blocks are whole warps), then across warps in shared memory (after
  // the tile), then one atomicAdd per channel and block.
  if (!p.pool) return;
#pragma unroll
  for (int e = 0; e < 8; ++e)
    for (int off = t.groups; off < 32; off *= 2) pool[e] += __shfl_xor_sync(0xffffffffu, pool[e], off);
  float* red = reinterpret_cast<float*>(tile + tile_slots(pixels, S, t.groups));
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (threadIdx.x % 32 < t.groups)
#pragma unroll
    for (int e = 0; e < 8; ++e) red[warp * t.groups * 8 + g * 8 + e] = pool[e];
  __syncthreads();
  for (int i = threadIdx.x; i < t.groups * 8; i += blockDim.x) {
    float sum = 0.0f;
    for (int w = 0; w < warps; ++w) sum += red[w * t.groups * 8 + i];
    atomicAdd(p.pool + static_cast<int64_t>(n) * p.c + cb + i, sum * p.pool_scale);
  }
}

// The tile variants: output rows x strips of kStrip, and how many groups of 8 channels a block
// takes (halved until they divide the layer's groups). Bigger tiles waste less of the halo;
// smaller ones make more blocks.
struct TileVariant {
  const char* name;
  int rows, strips, groups;
};
constexpr TileVariant kTiles[] = {
    {"dw_tile_16x16", 16, 4, 4}, {"dw_tile_8x16", 8, 4, 4}, {"dw_tile_8x8", 8, 2, 8}, {"dw_tile_4x8", 4, 2, 8}};
constexpr int kTileVariants = sizeof(kTiles) / sizeof(kTiles[0]);
static_assert(kTileVariants + 1 + kDepthwiseMmaVariants == kDepthwiseVariants);

TileShape tile_shape(const DepthwiseArgs& p, int variant) {
  const TileVariant& v = kTiles[variant - 1];
  TileShape t;
  t.rows = v.rows;
  t.strips = v.strips;
  t.groups = v.groups;
  while ((p.c / 8) % t.groups) t.groups /= 2;
  while ((1 << t.groups_log2) < t.groups) ++t.groups_log2;
  t.slices = p.c / 8 / t.groups;
  return t;
}

int tile_threads(const TileShape& t) { return t.groups * t.rows * t.strips; }

size_t tile_bytes(const DepthwiseArgs& p, const TileShape& t) {
  const int pixels = tile_in_rows(t.rows, p.kernel, p.stride) * tile_in_cols(t.strips, p.kernel, p.stride);
  const size_t pool_sums = static_cast<size_t>(tile_threads(t) / 32) * t.groups * 8 * sizeof(float);
  return static_cast<size_t>(tile_slots(pixels, p.stride, t.groups)) * sizeof(uint4) + pool_sums;
}

template <int K, int S, DepthwiseInput kMode>
void launch_shape(const DepthwiseArgs& p, int variant, cudaStream_t s) {
  if (variant == 0) {
    const int groups = p.c / 8;
    const int lanes = std::max(1, 256 / groups);  // strips per block
    const int strips = p.oh * ((p.ow + kStrip - 1) / kStrip);
    const dim3 grid((strips + lanes - 1) / lanes, p.batch);
    const size_t shared = p.pool && lanes > 1 ? static_cast<size_t>(lanes) * p.c * sizeof(float) : 0;
    launch(depthwise_strip_kernel<K, S, kMode>, grid, groups * lanes, shared, s, p, lanes);
    return;
  }
  // Tiles past 48 KiB of shared memory need the kernel's consent, given once.
  static const bool large_tiles =
      cudaFuncSetAttribute(depthwise_tile_kernel<K, S, kMode>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(kMaxTileBytes)) == cudaSuccess;
  (void)large_tiles;  // on failure the launch fails and says so
  const TileShape t = tile_shape(p, variant);
  const int tile_w = t.strips * kStrip;
  const int tiles = ((p.oh + t.rows - 1) / t.rows) * ((p.ow + tile_w - 1) / tile_w);
  const dim3 grid(tiles * t.slices, p.batch);  // channel slices innermost, as in depthwise_mma.cu
  launch(depthwise_tile_kernel<K, S, kMode>, grid, tile_threads(t), tile_bytes(p, t), s, p, t);
}

}  // namespace

bool depthwise_supported(int kernel, int stride, int channels) {
  return ((kernel == 3 || kernel == 5) && (stride == 1 || stride == 2) || (kernel == 7 && stride == 1)) &&
         channels % 8 == 0 && channels / 8 <= kMaxGroups;
}

const char* depthwise_variant_name(int variant) {
  if (variant > kTileVariants) return depthwise_mma_variant_name(variant - kTileVariants - 1);
  return variant == 0 ? "dw_strip" : kTiles[variant - 1].name;
}

bool depthwise_variant_supports(const DepthwiseArgs& p, int variant) {
  if (variant == 0) return true;
  if (variant > kTileVariants) return depthwise_mma_supports(p, variant - kTileVariants - 1);
  const TileShape t = tile_shape(p, variant);
  return tile_threads(t) % 32 == 0 && tile_bytes(p, t) <= kMaxTileBytes;  // whole warps: the pool's shuffles
}

void launch_depthwise(const DepthwiseArgs& p, int variant, cudaStream_t s) {
  if (variant > kTileVariants) return launch_depthwise_mma(p, variant - kTileVariants - 1, s);
  with_depthwise_shape(p, [&](auto k, auto stride, auto mode) {
    launch_shape<decltype(k)::value, decltype(stride)::value, decltype(mode)::value>(p, variant, s);
  });
}

}  // namespace kiln::cuda
