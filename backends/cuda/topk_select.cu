// One block per row. Every element gets a 32-bit key whose unsigned order is the rank order
// (larger float first, or smaller with largest = false; NaN above every number, -0 as +0), so
// the k-th best key is found digit by digit, 8 bits at a time, with a 256-bin histogram of the
// elements that share the digits found so far. The keys above it are all in the top k; of the
// keys equal to it the lowest indices are taken, in index order (a block-wide prefix count per
// chunk of the row). The k picks are then sorted by (key, index) with a bitonic sort in shared
// memory: exactly the order of the CPU reference (ties to the lower index). Five passes over the
// row instead of k.
#include <cstdint>

#include "backends/cuda/launch.cuh"
#include "backends/cuda/numeric.cuh"
#include "backends/cuda/topk_select.cuh"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 1024;
constexpr int kBins = 256;

template <typename T>
__device__ __forceinline__ uint32_t rank_key(T v, bool largest) {
  float f = to_float(v);
  uint32_t key;
  if (isnan(f)) {
    key = 0xffffffffu;  // above every number, in both directions (as the reference ranks NaN)
    return largest ? key : 0u;
  }
  if (f == 0.0f) f = 0.0f;  // -0 ranks as +0
  const uint32_t u = __float_as_uint(f);
  key = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return largest ? key : ~key;
}

// Whether (ka, ia) ranks before (kb, ib).
__device__ __forceinline__ bool before(uint32_t ka, int32_t ia, uint32_t kb, int32_t ib) {
  return ka > kb || (ka == kb && ia < ib);
}

template <typename T>
__global__ void __launch_bounds__(kThreads) topk_select_kernel(TopkArgs p, int sort_size) {
  wait_for_predecessor();
  extern __shared__ uint32_t smem[];
  uint32_t* keys = smem;                                        // [sort_size]
  int32_t* idx = reinterpret_cast<int32_t*>(smem + sort_size);  // [sort_size]
  __shared__ int hist[kBins];
  __shared__ uint32_t prefix, mask;
  __shared__ int remaining, taken_above, taken_equal;
  __shared__ int warp_sums[kThreads / 32];

  const int64_t row = blockIdx.x;
  const int n = static_cast<int>(p.view.dim), k = static_cast<int>(p.k);
  const T* xs = static_cast<const T*>(p.x) + row * p.view.dim;
  const bool largest = p.largest;
  if (threadIdx.x == 0) {
    prefix = 0;
    mask = 0;
    remaining = k;  // how many of the keys matching prefix/mask still belong to the top k
  }
  // The k-th best key, 8 bits at a time from the top.
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < kBins; b += kThreads) hist[b] = 0;
    __syncthreads();
    const uint32_t pre = prefix, msk = mask;
    for (int e = threadIdx.x; e < n; e += kThreads) {
      const uint32_t key = rank_key(xs[e], largest);
      if ((key & msk) == pre) atomicAdd(&hist[(key >> shift) & 0xff], 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int need = remaining, b = kBins - 1;
      for (; b > 0 && hist[b] < need; --b) need -= hist[b];
      remaining = need;
      prefix |= static_cast<uint32_t>(b) << shift;
      mask |= 0xffu << shift;
    }
    __syncthreads();
  }
  const uint32_t kth = prefix;
  const int equal_wanted = remaining;  // >= 1: the k-th best key itself is among them
  if (threadIdx.x == 0) {
    taken_above = 0;
    taken_equal = 0;
  }
  __syncthreads();
  // Keys above the k-th: all of them, in any order (k - equal_wanted of them).
  for (int e = threadIdx.x; e < n; e += kThreads) {
    const uint32_t key = rank_key(xs[e], largest);
    if (key > kth) {
      const int at = atomicAdd(&taken_above, 1);
      keys[at] = key;
      idx[at] = e;
    }
  }
  // Keys equal to the k-th: the lowest indices first, chunk by chunk in index order.
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int base = 0; base < n; base += kThreads) {
    __syncthreads();
    if (taken_equal >= equal_wanted) break;
    const int e = base + threadIdx.x;
    const bool hit = e < n && rank_key(xs[e], largest) == kth;
    const unsigned ballot = __ballot_sync(0xffffffffu, hit);
    if (lane == 0) warp_sums[warp] = __popc(ballot);
    __syncthreads();
    int before_me = __popc(ballot & ((1u << lane) - 1));
    for (int w = 0; w < warp; ++w) before_me += warp_sums[w];
    const int slot = taken_equal + before_me;
    if (hit && slot < equal_wanted) {
      keys[k - equal_wanted + slot] = kth;
      idx[k - equal_wanted + slot] = e;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int total = 0;
      for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
      taken_equal += total;
    }
  }
  __syncthreads();
  // Padding after the k picks ranks last: key 0 with the largest index.
  for (int i = k + threadIdx.x; i < sort_size; i += kThreads) {
    keys[i] = 0;
    idx[i] = 0x7fffffff;
  }
  __syncthreads();
  // Bitonic sort, best first.
  for (int size = 2; size <= sort_size; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < sort_size; i += kThreads) {
        const int j = i ^ stride;
        if (j <= i) continue;
        const bool descending = (i & size) == 0;  // this run's order: best first
        const bool swap =
            descending ? before(keys[j], idx[j], keys[i], idx[i]) : before(keys[i], idx[i], keys[j], idx[j]);
        if (swap) {
          const uint32_t tk = keys[i];
          keys[i] = keys[j];
          keys[j] = tk;
          const int32_t ti = idx[i];
          idx[i] = idx[j];
          idx[j] = ti;
        }
      }
      __syncthreads();
    }
  T* values = static_cast<T*>(p.values);
  for (int j = threadIdx.x; j < k; j += kThreads) {
    values[row * k + j] = xs[idx[j]];
    p.indices[row * k + j] = idx[j];
  }
}

int sort_size_for(int64_t k) {
  int s = 1;
  while (s < k) s <<= 1;
  return s;
}

}  // namespace

bool topk_select_fits(const TopkArgs& p) {
  return p.view.inner == 1 && p.k > 32 && p.k <= kTopkSelectMaxK && p.view.dim <= INT32_MAX &&
         p.view.outer <= INT32_MAX;
}

void launch_topk_select(const TopkArgs& p, cudaStream_t stream) {
  if (p.view.outer <= 0) return;
  const int sort_size = sort_size_for(p.k);
  const size_t shared = static_cast<size_t>(sort_size) * (sizeof(uint32_t) + sizeof(int32_t));
  dispatch_float(p.type, "topk", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(topk_select_kernel<T>, dim3(static_cast<unsigned>(p.view.outer)), kThreads, shared, stream, p, sort_size);
  });
}

}  // namespace kiln::cuda
