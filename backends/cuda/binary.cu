// Generic add, sub, mul, div (backends/cuda/binary.cuh). Each thread computes one output
// element at a time (grid-stride): its flat index mapped through each input's broadcast view.
#include <type_traits>

#include "backends/cuda/binary.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/numeric.cuh"

namespace kiln::cuda {

namespace {

// Integers in unsigned arithmetic, so that overflow wraps instead of being undefined.
template <BinaryFn kFn, typename T>
__device__ __forceinline__ T apply_integer(T a, T b) {
  using U = std::make_unsigned_t<T>;
  if constexpr (kFn == BinaryFn::Add) return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  if constexpr (kFn == BinaryFn::Sub) return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  if constexpr (kFn == BinaryFn::Mul) return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  if constexpr (kFn == BinaryFn::Div) {
    if (b == 0) return 0;
    if (b == -1) return static_cast<T>(U{0} - static_cast<U>(a));  // a / -1 overflows for the minimum
    return a / b;                                                  // C++ truncates toward zero
  }
}

template <BinaryFn kFn>
__device__ __forceinline__ float apply_float(float a, float b) {
  if constexpr (kFn == BinaryFn::Add) return a + b;
  if constexpr (kFn == BinaryFn::Sub) return a - b;
  if constexpr (kFn == BinaryFn::Mul) return a * b;
  if constexpr (kFn == BinaryFn::Div) return a / b;
}

template <BinaryFn kFn, typename T>
__global__ void binary_kernel(BinaryArgs p) {
  wait_for_predecessor();
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  T* out = static_cast<T*>(p.out);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const T x = a[p.ia(i)], y = b[p.ib(i)];
    if constexpr (std::is_integral_v<T>)
      out[i] = apply_integer<kFn>(x, y);
    else
      out[i] = from_float<T>(apply_float<kFn>(to_float(x), to_float(y)));
  }
}

template <BinaryFn kFn>
void launch_fn(const BinaryArgs& args, cudaStream_t stream) {
  dispatch_number(args.type, "binary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(binary_kernel<kFn, T>, grid_blocks(args.n), kBlockThreads, 0, stream, args);
  });
}

}  // namespace

void launch_binary(const BinaryArgs& args, cudaStream_t stream) {
  if (args.n <= 0) return;
  switch (args.fn) {
    case BinaryFn::Add:
      return launch_fn<BinaryFn::Add>(args, stream);
    case BinaryFn::Sub:
      return launch_fn<BinaryFn::Sub>(args, stream);
    case BinaryFn::Mul:
      return launch_fn<BinaryFn::Mul>(args, stream);
    case BinaryFn::Div:
      return launch_fn<BinaryFn::Div>(args, stream);
  }
}

}  // namespace kiln::cuda
