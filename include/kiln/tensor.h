// Element types and host tensors of kiln's public API: what kiln::Model takes and returns.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kiln {

// Element types of graph values and bundle tensors. F8E4M3 is the OCP "E4M3FN" format (bias 7,
// no infinities, largest finite 448); Bool is one byte, 0 or 1.
enum class DType : uint8_t { F32, F16, BF16, F8E4M3, I32, I64, Bool };

// A dense, row-major tensor in host memory, named after the graph input or output it is for.
struct HostTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // shape's element count times the element size

  // A tensor of `shape` filled with zeros.
  static HostTensor zeros(std::string name, DType dtype, std::vector<int64_t> shape);
  // Copies `values` (their count must match the shape).
  static HostTensor from_f32(std::string name, std::vector<int64_t> shape, const std::vector<float>& values);
  static HostTensor from_i64(std::string name, std::vector<int64_t> shape, const std::vector<int64_t>& values);

  int64_t numel() const;
  // The elements as T, which must match dtype (F32: float, I32: int32_t, I64: int64_t, Bool: uint8_t).
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data.data());
  }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(data.data());
  }
  // Any element type converted to float (integers and bools by value).
  std::vector<float> to_f32() const;
};

}  // namespace kiln
