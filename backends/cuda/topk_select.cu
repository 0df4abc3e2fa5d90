// One block per row. Every element gets a 32-bit key whose unsigned order is the rank order
// (larger float first, or smaller with largest = false; NaN above every number, -0 as +0), so
// the k-th best key is found digit by digit, 8 bits at a time (two digits for 16-bit floats,
// four for fp32), with a 256-bin histogram of the elements that share the digits found so far.
// The keys above it are all in the top k; of the keys equal to it the lowest indices are taken,
// in index order (each warp counts over its segment of the row, the counts scanned over the
// warps). The k picks are then sorted by (key, index) with a bitonic sort in shared memory:
// exactly the order of the CPU reference (ties to the lower index). Four to six passes over the
// row instead of k, all but the first in shared memory for rows up to 48K elements.
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

// 16-bit floats rank by their own bits, in the key's top half (the low half 0): two digits to
// find instead of four. Their fp32 keys would not do: those differ down to bit 13.
__device__ __forceinline__ uint32_t rank_key16(uint16_t bits, bool nan, bool largest) {
  if (nan) return largest ? 0xffff0000u : 0u;
  if ((bits & 0x7fffu) == 0) bits = 0;  // -0 ranks as +0
  const uint32_t key = static_cast<uint32_t>((bits & 0x8000u) ? ~bits & 0xffffu : bits | 0x8000u) << 16;
  return (largest ? key : ~key) & 0xffff0000u;
}
__device__ __forceinline__ uint32_t rank_key(__half v, bool largest) {
  return rank_key16(__half_as_ushort(v), __hisnan(v), largest);
}
__device__ __forceinline__ uint32_t rank_key(__nv_bfloat16 v, bool largest) {
  return rank_key16(__bfloat16_as_ushort(v), __hisnan(v), largest);
}

// The lowest key bit that can differ between elements of T.
template <typename T>
constexpr int kLowestKeyBit = sizeof(T) == 2 ? 16 : 0;

// Whether (ka, ia) ranks before (kb, ib).
__device__ __forceinline__ bool before(uint32_t ka, int32_t ia, uint32_t kb, int32_t ib) {
  return ka > kb || (ka == kb && ia < ib);
}

// kCached: the row's keys are computed once into shared memory, and every pass reads them there.
template <typename T, bool kCached>
__global__ void __launch_bounds__(kThreads) topk_select_kernel(TopkArgs p, int sort_size) {
  wait_for_predecessor();
  extern __shared__ uint32_t smem[];
  uint32_t* keys = smem;                                        // [sort_size]
  int32_t* idx = reinterpret_cast<int32_t*>(smem + sort_size);  // [sort_size]
  uint32_t* cache = smem + 2 * sort_size;                       // [n] with kCached
  __shared__ int hist[kBins];
  __shared__ uint32_t prefix, mask;
  __shared__ int remaining, taken_above;
  __shared__ int warp_sums[kThreads / 32];

  const int64_t row = blockIdx.x;
  const int n = static_cast<int>(p.view.dim), k = static_cast<int>(p.k);
  const T* xs = static_cast<const T*>(p.x) + row * p.view.dim;
  const bool largest = p.largest;
  if constexpr (kCached) {
#pragma unroll 8
    for (int e = threadIdx.x; e < n; e += kThreads) cache[e] = rank_key(xs[e], largest);
  }
  const auto key_at = [&](int e) { return kCached ? cache[e] : rank_key(xs[e], largest); };
  if (threadIdx.x == 0) {
    prefix = 0;
    mask = 0;
    remaining = k;  // how many of the keys matching prefix/mask still belong to the top k
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // The k-th best key, 8 bits at a time from the top. Close scores share their top digits, so
  // most elements of a pass can fall in one bin: the lanes of a warp that hit the same bin add
  // their count with one shared-memory atomic rather than one each.
  for (int shift = 24; shift >= kLowestKeyBit<T>; shift -= 8) {
    for (int b = threadIdx.x; b < kBins; b += kThreads) hist[b] = 0;
    __syncthreads();
    const uint32_t pre = prefix, msk = mask;
    for (int base = 0; base < n; base += kThreads) {  // uniform over the block: whole warps match
      const int e = base + threadIdx.x;
      int bin = kBins;  // none
      if (e < n) {
        const uint32_t key = key_at(e);
        if ((key & msk) == pre) bin = static_cast<int>((key >> shift) & 0xff);
      }
      const unsigned same = __match_any_sync(0xffffffffu, bin);
      if (bin < kBins && lane == __ffs(same) - 1) atomicAdd(&hist[bin], __popc(same));
    }
    __syncthreads();
    // The digit: the highest bin b whose count with the bins above reaches `remaining`. Warp 0
    // finds it in parallel (one thread walking 256 bins was a few microseconds a pass): lane l
    // sums bins 8l .. 8l + 7, a suffix scan over the lanes finds the lane, which walks its 8.
    if (warp == 0) {
      constexpr int kPerLane = kBins / 32;
      int own = 0;
#pragma unroll
      for (int b = 0; b < kPerLane; ++b) own += hist[lane * kPerLane + b];
      int from_here = own;  // the count in this lane's bins and every higher lane's
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int up = __shfl_down_sync(0xffffffffu, from_here, d);
        if (lane + d < 32) from_here += up;
      }
      const int need = remaining;
      const unsigned reaching = __ballot_sync(0xffffffffu, from_here >= need);  // lanes 0 .. the one
      const int chosen = reaching ? 31 - __clz(reaching) : 0;
      if (lane == chosen) {
        int left = need - (from_here - own), b = (lane + 1) * kPerLane - 1;
        for (; b > lane * kPerLane && hist[b] < left; --b) left -= hist[b];
        remaining = left;
        prefix |= static_cast<uint32_t>(b) << shift;
        mask |= 0xffu << shift;
      }
    }
    __syncthreads();
  }
  const uint32_t kth = prefix;
  const int equal_wanted = remaining;  // >= 1: the k-th best key itself is among them
  if (threadIdx.x == 0) taken_above = 0;
  __syncthreads();
  // Keys above the k-th: all of them, in any order (k - equal_wanted of them), a warp's hits
  // placed with one atomic.
  for (int base = 0; base < n; base += kThreads) {
    const int e = base + threadIdx.x;
    const uint32_t key = e < n ? key_at(e) : 0u;
    const bool hit = e < n && key > kth;
    const unsigned hits = __ballot_sync(0xffffffffu, hit);
    int first = 0;
    if (lane == 0 && hits) first = atomicAdd(&taken_above, __popc(hits));
    first = __shfl_sync(0xffffffffu, first, 0);
    if (hit) {
      const int at = first + __popc(hits & ((1u << lane) - 1));
      keys[at] = key;
      idx[at] = e;
    }
  }
  // Keys equal to the k-th, the lowest indices first: warp w owns a contiguous segment of the
  // row, counts its hits, an exclusive scan of the counts over the warps (by warp 0: 32 warps,
  // 32 lanes) gives each its first slot, and it places its hits in index order. Two passes and
  // two barriers, where walking the row chunk by chunk took four barriers a chunk.
  static_assert(kThreads / 32 == 32, "one lane of warp 0 per warp");
  const int segment = ((n + 31) / 32 + 31) / 32 * 32;  // elements per warp, a multiple of 32
  const int begin = warp * segment, end = min(n, begin + segment);
  int count = 0;
  for (int e0 = begin; e0 < end; e0 += 32) {
    const int e = e0 + lane;
    count += __popc(__ballot_sync(0xffffffffu, e < end && key_at(e) == kth));
  }
  if (lane == 0) warp_sums[warp] = count;
  __syncthreads();
  if (warp == 0) {
    const int own = warp_sums[lane];
    int upto = own;  // inclusive scan
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int low = __shfl_up_sync(0xffffffffu, upto, d);
      if (lane >= d) upto += low;
    }
    warp_sums[lane] = upto - own;
  }
  __syncthreads();
  int slot = warp_sums[warp];  // uniform over the warp
  for (int e0 = begin; e0 < end && slot < equal_wanted; e0 += 32) {
    const int e = e0 + lane;
    const bool hit = e < end && key_at(e) == kth;
    const unsigned hits = __ballot_sync(0xffffffffu, hit);
    const int at = slot + __popc(hits & ((1u << lane) - 1));
    if (hit && at < equal_wanted) {
      keys[k - equal_wanted + at] = kth;
      idx[k - equal_wanted + at] = e;
    }
    slot += __popc(hits);
  }
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

// Rows of up to this many elements keep their keys in shared memory (192 KiB, with the sort's
// 16 KiB at k = 2048 under the 227 KiB a block may have on Hopper): a pass then reads shared
// memory instead of waiting on L2 once per element a thread takes, which made the 24000-element
// row of a detection head's top 300 latency-bound at one block.
constexpr int64_t kMaxCachedKeys = 48 * 1024;

template <typename T, bool kCached>
void launch_typed(const TopkArgs& p, int sort_size, cudaStream_t stream) {
  size_t shared = static_cast<size_t>(sort_size) * (sizeof(uint32_t) + sizeof(int32_t));
  if constexpr (kCached) {
    shared += static_cast<size_t>(p.view.dim) * sizeof(uint32_t);
    // Shared memory past 48 KiB needs the kernel's consent, asked once, for the most any launch
    // asks. A GPU with less shared memory per block refuses it, and rows are then read from
    // global memory instead.
    static_assert((kTopkSelectMaxK & (kTopkSelectMaxK - 1)) == 0, "the sort's size is k rounded up to a power of 2");
    static const bool opted_in = [] {
      const size_t most = kMaxCachedKeys * sizeof(uint32_t) + 2 * kTopkSelectMaxK * sizeof(uint32_t);
      if (cudaFuncSetAttribute(topk_select_kernel<T, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(most)) == cudaSuccess)
        return true;
      cudaGetLastError();  // clear the refusal: it is not the run's error
      return false;
    }();
    if (!opted_in) return launch_typed<T, false>(p, sort_size, stream);
  }
  launch(topk_select_kernel<T, kCached>, dim3(static_cast<unsigned>(p.view.outer)), kThreads, shared, stream, p,
         sort_size);
}

}  // namespace

bool topk_select_fits(const TopkArgs& p) {
  return p.view.inner == 1 && p.k > 32 && p.k <= kTopkSelectMaxK && p.view.dim <= INT32_MAX &&
         p.view.outer <= INT32_MAX;
}

void launch_topk_select(const TopkArgs& p, cudaStream_t stream) {
  if (p.view.outer <= 0) return;
  const int sort_size = sort_size_for(p.k);
  dispatch_float(p.type, "topk", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (p.view.dim <= kMaxCachedKeys)
      launch_typed<T, true>(p, sort_size, stream);
    else
      launch_typed<T, false>(p, sort_size, stream);
  });
}

}  // namespace kiln::cuda
