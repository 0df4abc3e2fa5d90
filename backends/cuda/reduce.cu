// reduce, argmax and topk (backends/cuda/reduce.cuh). A group of G threads (1, 32 or 256, by
// how many elements each result reduces) computes one output at a time (grid-stride over
// outputs): each thread folds every G-th element, then the group combines the threads' partial
// results (warp shuffles, then shared memory across a block's warps). topk runs k such rounds
// per slice, each picking the best element ranked after the previous pick; long contiguous rows
// with a small k take the levelled path of topk_rows.cu instead.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/launch.cuh"
#include "backends/cuda/numeric.cuh"
#include "backends/cuda/ranked.cuh"
#include "backends/cuda/reduce.cuh"
#include "backends/cuda/topk_rows.cuh"
#include "backends/cuda/topk_select.cuh"

namespace kiln::cuda {

namespace {

constexpr int kWarps = kBlockThreads / 32;

// Threads per output: few for short reductions, so that a block serves several outputs.
int group_size(int64_t elements) { return elements >= 4096 ? kBlockThreads : elements >= 64 ? 32 : 1; }

// This thread's lane in its group, its group's first output, and the grid's step between outputs.
struct GroupIndex {
  int lane;
  int64_t first, step;
};
template <int G>
__device__ __forceinline__ GroupIndex group_index() {
  constexpr int kGroups = kBlockThreads / G;
  return {static_cast<int>(threadIdx.x % G), static_cast<int64_t>(blockIdx.x) * kGroups + threadIdx.x / G,
          static_cast<int64_t>(gridDim.x) * kGroups};
}

// The combination of the G threads' values (fn associative and commutative), in every thread of
// the group (float sums may differ in rounding between lanes: one thread stores the result).
// shared holds a value per warp; a G of 256 synchronises the block, so every thread of the block
// must call it.
template <int G, typename T, typename Fn>
__device__ __forceinline__ T group_reduce(T v, Fn fn, T* shared) {
  if constexpr (G > 1) {
#pragma unroll
    for (int mask = 16; mask > 0; mask /= 2) v = fn(v, shuffle_xor(v, mask));
  }
  if constexpr (G == kBlockThreads) {
    if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
    __syncthreads();
    v = shared[0];
    for (int w = 1; w < kWarps; ++w) v = fn(v, shared[w]);
    __syncthreads();  // before shared is written again
  }
  return v;
}

// --- reduce

// The accumulator of each element type and function: double sums of floats, fp32 max of
// floats, i64 sums of integers, the integer's own max.
template <typename T, ReduceFn kFn>
using Acc = std::conditional_t<std::is_integral_v<T>, std::conditional_t<kFn == ReduceFn::Max, T, int64_t>,
                               std::conditional_t<kFn == ReduceFn::Max, float, double>>;

template <typename T, ReduceFn kFn>
struct ReduceOps {
  using A = Acc<T, kFn>;
  __device__ static A init() {
    if constexpr (kFn != ReduceFn::Max)
      return 0;
    else if constexpr (std::is_same_v<T, int32_t>)
      return INT32_MIN;
    else if constexpr (std::is_same_v<T, int64_t>)
      return INT64_MIN;
    else
      return -INFINITY;
  }
  __device__ static A load(T v) {
    if constexpr (std::is_integral_v<T>)
      return v;
    else
      return static_cast<A>(to_float(v));
  }
  // std::max(a, b) as the reference takes it, (a < b) ? b : a: a NaN b never replaces a.
  __device__ static A combine(A a, A b) {
    if constexpr (kFn == ReduceFn::Max)
      return a < b ? b : a;
    else if constexpr (std::is_integral_v<T>)
      return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));  // wraps
    else
      return a + b;
  }
  __device__ static T finish(A a, int64_t count) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(a);  // an i64 sum keeps its low bits for i32
    else if constexpr (kFn == ReduceFn::Mean)
      return from_float<T>(static_cast<float>(a / static_cast<double>(count)));
    else
      return from_float<T>(static_cast<float>(a));
  }
};

template <int G, ReduceFn kFn, typename T>
__global__ void reduce_kernel(ReduceArgs p) {
  wait_for_predecessor();
  using Ops = ReduceOps<T, kFn>;
  using A = typename Ops::A;
  __shared__ A shared[kWarps];
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const GroupIndex g = group_index<G>();
  for (int64_t o = g.first; o < p.outputs; o += g.step) {
    const T* xo = x + p.kept(o);
    A acc = Ops::init();
    for (int64_t r = g.lane; r < p.count; r += G) acc = Ops::combine(acc, Ops::load(xo[p.reduced(r)]));
    acc = group_reduce<G>(
        acc, [](A a, A b) { return Ops::combine(a, b); }, shared);
    if (g.lane == 0) y[o] = Ops::finish(acc, p.count);
  }
}

template <int G, ReduceFn kFn>
void launch_reduce_fn(const ReduceArgs& p, cudaStream_t stream) {
  const unsigned blocks = grid_blocks(p.outputs, kBlockThreads / G);
  if constexpr (kFn == ReduceFn::Mean) {
    dispatch_float(p.type, "reduce mean", [&](auto tag) {
      using T = typename decltype(tag)::type;
      launch(reduce_kernel<G, kFn, T>, blocks, kBlockThreads, 0, stream, p);
    });
  } else {
    dispatch_number(p.type, "reduce", [&](auto tag) {
      using T = typename decltype(tag)::type;
      launch(reduce_kernel<G, kFn, T>, blocks, kBlockThreads, 0, stream, p);
    });
  }
}

template <int G>
void launch_reduce_group(const ReduceArgs& p, cudaStream_t stream) {
  switch (p.fn) {
    case ReduceFn::Sum:
      return launch_reduce_fn<G, ReduceFn::Sum>(p, stream);
    case ReduceFn::Mean:
      return launch_reduce_fn<G, ReduceFn::Mean>(p, stream);
    case ReduceFn::Max:
      return launch_reduce_fn<G, ReduceFn::Max>(p, stream);
  }
}

// --- argmax and topk

template <int G, typename T>
__global__ void argmax_kernel(const T* x, int64_t* y, AxisView v) {
  wait_for_predecessor();
  using R = Ranked<Key<T>>;
  __shared__ R shared[kWarps];
  const GroupIndex g = group_index<G>();
  for (int64_t s = g.first; s < v.outer * v.inner; s += g.step) {
    const T* xs = x + s / v.inner * v.dim * v.inner + s % v.inner;
    R best{Key<T>{}, -1};
    for (int64_t k = g.lane; k < v.dim; k += G) best = first_of(best, R{key(xs[k * v.inner]), k}, true);
    best = group_reduce<G>(
        best, [](const R& a, const R& b) { return first_of(a, b, true); }, shared);
    if (g.lane == 0) y[s] = best.i;
  }
}

template <int G, typename T>
__global__ void topk_kernel(TopkArgs p) {
  wait_for_predecessor();
  using R = Ranked<float>;
  __shared__ R shared[kWarps];
  const AxisView v = p.view;
  const bool largest = p.largest;
  T* values = static_cast<T*>(p.values);
  const GroupIndex g = group_index<G>();
  for (int64_t s = g.first; s < v.outer * v.inner; s += g.step) {
    const int64_t o = s / v.inner, i = s % v.inner;
    const T* xs = static_cast<const T*>(p.x) + o * v.dim * v.inner + i;
    R prev{0.0f, -1};
    for (int64_t j = 0; j < p.k; ++j) {
      // The best element ranked after the previous pick: the j-th best, as k <= dim.
      R best{0.0f, -1};
      for (int64_t e = g.lane; e < v.dim; e += G) {
        const R candidate{key(xs[e * v.inner]), e};
        if (prev.i < 0 || ahead(prev, candidate, largest)) best = first_of(best, candidate, largest);
      }
      best = group_reduce<G>(
          best, [largest](const R& a, const R& b) { return first_of(a, b, largest); }, shared);
      if (g.lane == 0) {
        const int64_t out = (o * p.k + j) * v.inner + i;
        values[out] = xs[best.i * v.inner];
        p.indices[out] = best.i;
      }
      prev = best;
    }
  }
}

template <typename F>
void with_group(int64_t elements, F&& f) {
  switch (group_size(elements)) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 32:
      return f(std::integral_constant<int, 32>{});
    default:
      return f(std::integral_constant<int, kBlockThreads>{});
  }
}

}  // namespace

void launch_reduce(const ReduceArgs& p, cudaStream_t stream) {
  if (p.outputs <= 0) return;
  with_group(p.count, [&](auto group) { launch_reduce_group<decltype(group)::value>(p, stream); });
}

void launch_argmax(const void* x, DType type, int64_t* y, const AxisView& v, cudaStream_t stream) {
  const int64_t slices = v.outer * v.inner;
  if (slices <= 0) return;
  with_group(v.dim, [&](auto group) {
    constexpr int G = decltype(group)::value;
    dispatch_number(type, "argmax", [&](auto tag) {
      using T = typename decltype(tag)::type;
      launch(argmax_kernel<G, T>, grid_blocks(slices, kBlockThreads / G), kBlockThreads, 0, stream,
             static_cast<const T*>(x), y, v);
    });
  });
}

size_t topk_workspace_bytes(const TopkArgs& p) { return topk_rows_workspace_bytes(p); }

void launch_topk(const TopkArgs& p, cudaStream_t stream) {
  const int64_t slices = p.view.outer * p.view.inner;
  if (slices <= 0 || p.k <= 0) return;
  if (topk_rows_fits(p) && p.workspace) return launch_topk_rows(p, stream);
  if (topk_select_fits(p)) return launch_topk_select(p, stream);
  with_group(p.view.dim, [&](auto group) {
    constexpr int G = decltype(group)::value;
    dispatch_float(p.type, "topk", [&](auto tag) {
      using T = typename decltype(tag)::type;
      launch(topk_kernel<G, T>, grid_blocks(slices, kBlockThreads / G), kBlockThreads, 0, stream, p);
    });
  });
}

}  // namespace kiln::cuda
