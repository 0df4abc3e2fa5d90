// The CUDA backend's kernels: for each op a host-side class in backends/cuda/ops/<op>.cpp that
// checks what it can run, packs constants and launches device code from backends/cuda/*.cu
// (whose launch functions take plain structs, so that no device code meets host headers):
//
//   KILN_REGISTER_CUDA_KERNELS(softmax) {
//     registry.add("softmax", {supports_softmax, make_cuda_kernel<SoftmaxKernel>, supports_softmax});
//   }
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "graph/graph.h"

namespace kiln {

class CudaBackend;

// Constants kernels pack (weights transposed, converted to fp16 or E4M3), in one device
// buffer the backend uploads once every kernel is made; each packed tensor is 256-byte aligned.
class CudaWeights {
 public:
  size_t add_f16(std::span<const float> v);
  // A constant as fp16, zero-filled to `count` values. One stored as fp16 (an fp16 bundle's
  // GEMM weights, most of its bytes) is not copied on the host: the upload reads it from the
  // lookup, whose bytes outlive the making of the kernels.
  size_t add_f16(const ConstantView& c, size_t count);
  size_t add_f32(std::span<const float> v);
  size_t add_e4m3(std::span<const float> v);  // values already on the E4M3 grid
  // Valid once uploaded (after Backend::kernels_made()).
  const void* at(size_t offset) const { return static_cast<const uint8_t*>(device_) + offset; }
  template <typename T>
  const T* get(size_t offset) const {
    return static_cast<const T*>(at(offset));
  }
  void upload(cudaStream_t stream);
  ~CudaWeights();

 private:
  struct Piece {
    size_t offset;
    std::vector<uint8_t> made;          // converted or padded here
    std::span<const uint8_t> borrowed;  // or read from the lookup at upload
  };
  size_t place(size_t bytes);  // the next aligned offset, for `bytes` more
  uint8_t* make(size_t bytes, size_t* offset);
  std::vector<Piece> pieces_;
  size_t size_ = 0;
  void* device_ = nullptr;
};

// Bits kernels set in the backend's error word when an input they cannot trust is out of
// range (an index, an offset); Engine::run then fails with the matching message.
enum CudaError : uint32_t { kCudaIndexOutOfRange = 1, kCudaOffsetOutOfRange = 2, kCudaLengthOutOfRange = 4 };

struct CudaKernelContext {
  const Graph& graph;
  const Node& node;
  const ConstantLookup& constants;
  CudaWeights& weights;
  uint32_t* error_word;  // device memory
  std::string precision;
  bool checks_inputs = false;  // set by a kernel that may set bits in error_word
};

struct CudaKernelEntry {
  // Whether a kernel of this op runs the node as it stands (dtypes, attributes, fixed sizes):
  // where not, the node runs on the CPU.
  std::function<bool(const Graph&, const Node&)> supports;
  std::function<std::unique_ptr<Kernel>(CudaKernelContext&)> make;
  // Whether a fast kernel runs the node: fusion passes create only such nodes.
  std::function<bool(const Graph&, const Node&)> fast;
};

class CudaKernelRegistry {
 public:
  static CudaKernelRegistry& instance();  // every kernel of backends/cuda/ops/ registered
  void add(const std::string& op, CudaKernelEntry entry);
  const CudaKernelEntry* find(const std::string& op) const;

 private:
  std::map<std::string, CudaKernelEntry> entries_;
};

template <typename K>
std::unique_ptr<Kernel> make_cuda_kernel(CudaKernelContext& c) {
  return std::make_unique<K>(c);
}

// Helpers for supports() functions, which may see a node a rewrite has not added yet: its
// inputs are graph values, its outputs' types follow from them.
DType input_dtype(const Graph& g, const Node& n, int slot);  // slot must be present
std::vector<DType> output_dtypes(const Graph& g, const Node& n);
// Whether every present input and every output has one of these types.
bool io_types_in(const Graph& g, const Node& n, std::initializer_list<DType> allowed);
// A constant input's shape (constants have fixed shapes); empty when the slot is absent or not
// a constant.
Shape constant_shape(const Graph& g, const Node& n, int slot);
// The current device's compute capability as major * 10 + minor (89: FP8 conversions).
int compute_capability();

inline cudaStream_t stream_of(const KernelArgs& a) { return static_cast<cudaStream_t>(a.stream); }

}  // namespace kiln

#define KILN_REGISTER_CUDA_KERNELS(file) void kiln_register_cuda_kernels_##file(::kiln::CudaKernelRegistry& registry)
