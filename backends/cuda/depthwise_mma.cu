// Depthwise conv + bias + activation (+ the squeeze-excite mean) on the tensor cores, NHWC fp16.
//
// Why: the CUDA-core kernels (depthwise_conv.cu) convert every input vector to fp32 once per
// kernel row that reads it and spend K * K fp32 FMAs per output; profiled, they are bound by
// instruction issue at a third of the memory bandwidth. Here one mma.sync does, for one output
// row, 16 output columns (M) x 8 channels (N) x two taps of 8 channels (K = 16):
//   A[m, (tap, c')] = x[c', oy * S + ky(tap), (ox0 + m) * S + kx(tap)]
//   B[(tap, c'), c] = w[tap, c] if c' == c, else 0      (block-diagonal: depthwise)
// so C[m, c] sums every tap of channel c, in fp32 on exact fp16 products. 7/8 of each mma's
// multiplies are by zero, but the tensor cores have that much to spare; what is left per output
// is the epilogue. A comes straight from an input tile in shared memory by ldmatrix: each of
// its 8 x 8 matrices is 8 pixels' 16-byte vectors of 8 channels, and ldmatrix takes any address
// per row, so the im2col costs nothing. B is built once per thread in registers. The last of
// the K * K taps (an odd count) takes an m16n8k8 mma.
//
// Weights are rounded to fp16 for the tensor cores (exact for fp16 bundles, whose weights are
// fp16); FP8 inputs are staged as their E4M3 values (exact in fp16) and scaled in the epilogue.
//
// Measured on an H200 (bench/results/2026-12-05-h200-depthwise-mma/): the planner takes these for
// most layers of an image classifier at batch 1 and few at batch 32 and 128, where they are level
// with the tile kernels at about 1.2 TB/s: with the instructions gone, something else (latency,
// the access pattern) bounds the depthwise convs at large batch.
#include "backends/cuda/depthwise_mma.cuh"

#include "backends/cuda/depthwise_input.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/ptx.cuh"

namespace kiln::cuda {

namespace {

constexpr int kCols = 16;                    // output columns of one mma (its M)
constexpr size_t kMaxTileBytes = 48 * 1024;  // no opt-in to larger shared memory needed

// A block: rows x (col_blocks * 16) outputs of `groups` groups of 8 channels (halved until they
// divide the layer's), one warp per group and every warps_per_group-th row.
struct MmaVariant {
  const char* name;
  int rows, col_blocks, groups, warps_per_group;
};
constexpr MmaVariant kVariants[] = {{"dw_mma_8x16", 8, 1, 4, 2},
                                    {"dw_mma_8x32", 8, 2, 2, 2},
                                    {"dw_mma_4x16", 4, 1, 8, 1},
                                    {"dw_mma_16x32", 16, 2, 2, 4}};
static_assert(sizeof(kVariants) / sizeof(kVariants[0]) == kDepthwiseMmaVariants);

// The input tile in shared memory, in 16-byte units (8 channels of one pixel): group-major, so
// that the 8 rows of an ldmatrix (8 pixels of one group) are consecutive units and hit distinct
// banks. At stride 2 a row's even columns come first, then its odd ones: the pixels an ldmatrix
// reads are then consecutive too. group_stride is 1 past a multiple of 8 units, so that the
// staging stores of one pixel's groups fall on different banks.
struct MmaShape {
  int rows = 0, col_blocks = 0, groups = 0, groups_log2 = 0, warps_per_group = 0, slices = 0;
  int in_rows = 0, in_cols = 0, half = 0, row_stride = 0, group_stride = 0;
};

template <int S>
__device__ __forceinline__ int column_unit(int col, int half) {
  return S == 1 ? col : (col & 1) * half + (col >> 1);
}

// Where tap `tap`'s input lies relative to the tile unit of its output row and column.
template <int K, int S>
__device__ __forceinline__ int tap_offset(int tap, const MmaShape& t) {
  const int ky = tap / K, kx = tap % K;
  return ky * t.row_stride + (S == 1 ? kx : (kx & 1) * t.half + (kx >> 1));
}

// Lane l's part of B for one tap: B[2t, g] and B[2t + 1, g] (g = l / 4, t = l % 4), where only the
// diagonal c' == g holds channel c's weight.
__device__ __forceinline__ uint32_t weight_pair(const DepthwiseArgs& p, int tap, int c, int lane) {
  const int g = lane / 4, t = lane % 4;
  const float w = p.w[static_cast<int64_t>(tap) * p.c + c];
  return ptx::pack_half2(2 * t == g ? w : 0.0f, 2 * t + 1 == g ? w : 0.0f);
}

template <int K, int S, DepthwiseInput kMode>
__global__ void __launch_bounds__(256) depthwise_mma_kernel(DepthwiseArgs p, MmaShape t) {
  constexpr int kTaps = K * K, kPairs = kTaps / 2;
  static_assert(K % 2 == 1, "the last of an odd number of taps takes the m16n8k8 mma");
  extern __shared__ uint4 tile[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = warp & (t.groups - 1), wr = warp >> t.groups_log2;
  const int tile_w = kCols * t.col_blocks, tiles_x = (p.ow + tile_w - 1) / tile_w;
  const int tile_index = blockIdx.x / t.slices, slice = blockIdx.x - tile_index * t.slices;
  const int oy0 = tile_index / tiles_x * t.rows, ox0 = tile_index % tiles_x * tile_w;
  const int n = blockIdx.y, cb = slice * t.groups * 8;

  // Constants before the wait (launch.cuh): B for every tap, this lane's two output channels' bias.
  uint32_t b[kPairs + 1][2];
#pragma unroll
  for (int q = 0; q < kPairs; ++q) {
    b[q][0] = weight_pair(p, 2 * q, cb + g * 8 + lane / 4, lane);
    b[q][1] = weight_pair(p, 2 * q + 1, cb + g * 8 + lane / 4, lane);
  }
  b[kPairs][0] = weight_pair(p, kTaps - 1, cb + g * 8 + lane / 4, lane);
  const int c_out = cb + g * 8 + 2 * (lane % 4);
  const float bias0 = p.bias ? p.bias[c_out] : 0.0f, bias1 = p.bias ? p.bias[c_out + 1] : 0.0f;
  wait_for_predecessor();

  const int iy0 = oy0 * S - p.pad_top, ix0 = ox0 * S - p.pad_left;
  const int64_t image = static_cast<int64_t>(n) * p.h * p.w_in * p.c + cb;
  const int pixels = t.in_rows * t.in_cols;
  for (int i = threadIdx.x; i < pixels << t.groups_log2; i += blockDim.x) {
    const int gi = i & (t.groups - 1), pixel = i >> t.groups_log2;
    const int r = pixel / t.in_cols, col = pixel - r * t.in_cols;
    const int iy = iy0 + r, ix = ix0 + col;
    const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w_in;
    const int64_t offset = image + (static_cast<int64_t>(iy) * p.w_in + ix) * p.c + gi * 8;
    stage_input8<kMode>(p, tile + gi * t.group_stride + r * t.row_stride + column_unit<S>(col, t.half), offset, inside);
  }
  wait_staged<kMode>();
  __syncthreads();

  // ldmatrix rows: lanes 0-7 and 8-15 give columns 0-7 and 8-15 of the first tap of a pair,
  // lanes 16-31 the same of the second.
  const int m = (lane & 7) + (lane & 8);
  const bool second_tap = lane >= 16;
  float pool0 = 0.0f, pool1 = 0.0f;
  for (int ty = wr; ty < t.rows; ty += t.warps_per_group) {  // warp-uniform bounds: mma.sync needs all lanes
    const int oy = oy0 + ty;
    if (oy >= p.oh) break;
    for (int cblock = 0; cblock < t.col_blocks; ++cblock) {
      const int ox_block = ox0 + cblock * kCols;
      if (ox_block >= p.ow) break;
      const uint4* row = tile + g * t.group_stride + ty * S * t.row_stride + cblock * kCols + m;
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int q = 0; q < kPairs; ++q) {
        uint32_t a[4];
        ptx::ldmatrix_x4(a, row + (second_tap ? tap_offset<K, S>(2 * q + 1, t) : tap_offset<K, S>(2 * q, t)));
        ptx::mma_m16n8k16(acc, a, b[q]);
      }
      uint32_t a[2];
      ptx::ldmatrix_x2(a, row + tap_offset<K, S>(kTaps - 1, t));
      ptx::mma_m16n8k8(acc, a, b[kPairs][0]);
      // acc[0..1]: column lane / 4, channels c_out and c_out + 1; acc[2..3]: column lane / 4 + 8.
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int ox = ox_block + lane / 4 + 8 * h;
        if (ox >= p.ow) continue;
        float v0 = acc[2 * h], v1 = acc[2 * h + 1];
        if constexpr (kMode != DepthwiseInput::F16) {
          v0 *= p.x_scale;
          v1 *= p.x_scale;
        }
        v0 = activate(v0 + bias0, p.act);
        v1 = activate(v1 + bias1, p.act);
        *reinterpret_cast<__half2*>(p.y + ((static_cast<int64_t>(n) * p.oh + oy) * p.ow + ox) * p.c + c_out) =
            __floats2half2_rn(v0, v1);
        pool0 += v0;
        pool1 += v1;
      }
    }
  }
  if (!p.pool) return;
    // The lanes of one channel pair (same lane % 4), then one atomicAdd per channel and warp.
#pragma unroll
  for (int off = 4; off < 32; off *= 2) {
    pool0 += __shfl_xor_sync(0xffffffffu, pool0, off);
    pool1 += __shfl_xor_sync(0xffffffffu, pool1, off);
  }
  if (lane < 4) {
    float* pool = p.pool + static_cast<int64_t>(n) * p.c + c_out;
    atomicAdd(pool, pool0 * p.pool_scale);
    atomicAdd(pool + 1, pool1 * p.pool_scale);
  }
}

MmaShape mma_shape(const DepthwiseArgs& p, int variant) {
  const MmaVariant& v = kVariants[variant];
  MmaShape t;
  t.rows = v.rows;
  t.col_blocks = v.col_blocks;
  t.groups = v.groups;
  t.warps_per_group = v.warps_per_group;
  while ((p.c / 8) % t.groups) t.groups /= 2;
  while ((1 << t.groups_log2) < t.groups) ++t.groups_log2;
  t.slices = p.c / 8 / t.groups;
  t.in_rows = (t.rows - 1) * p.stride + p.kernel;
  t.in_cols = (kCols * t.col_blocks - 1) * p.stride + p.kernel;
  t.half = (t.in_cols + 1) / 2;
  t.row_stride = p.stride == 1 ? t.in_cols : 2 * t.half;
  t.group_stride = (t.in_rows * t.row_stride + 7) / 8 * 8 + 1;
  return t;
}

size_t tile_bytes(const MmaShape& t) { return static_cast<size_t>(t.groups) * t.group_stride * sizeof(uint4); }

template <int K, int S, DepthwiseInput kMode>
void launch_shape(const DepthwiseArgs& p, const MmaShape& t, cudaStream_t s) {
  const int tile_w = kCols * t.col_blocks;
  const int tiles = ((p.oh + t.rows - 1) / t.rows) * ((p.ow + tile_w - 1) / tile_w);
  // A tile's channel slices are neighbours in the grid, so they run at about the same time and
  // read each pixel's channels while its other slices' are still in L2. With the slices outermost
  // each swept the whole map on its own, and layers cut into 32-byte slices read their input from
  // DRAM twice over (Nsight Compute at batch 128: 144 channels, 231 MB read for a 116 MB input).
  const dim3 grid(tiles * t.slices, p.batch);
  launch(depthwise_mma_kernel<K, S, kMode>, grid, 32 * t.groups * t.warps_per_group, tile_bytes(t), s, p, t);
}

}  // namespace

const char* depthwise_mma_variant_name(int variant) { return kVariants[variant].name; }

bool depthwise_mma_supports(const DepthwiseArgs& p, int variant) {
  return variant >= 0 && variant < kDepthwiseMmaVariants && tile_bytes(mma_shape(p, variant)) <= kMaxTileBytes;
}

void launch_depthwise_mma(const DepthwiseArgs& p, int variant, cudaStream_t s) {
  const MmaShape t = mma_shape(p, variant);
  with_depthwise_shape(p, [&](auto k, auto stride, auto mode) {
    launch_shape<decltype(k)::value, decltype(stride)::value, decltype(mode)::value>(p, t, s);
  });
}

}  // namespace kiln::cuda
