#include "core/dtype.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/fp8.h"
#include "core/half.h"

namespace kiln {

namespace {

struct DTypeInfo {
  DType type;
  const char* name;
  const char* storage;
  size_t size;
};
constexpr DTypeInfo kTypes[] = {
    {DType::F32, "f32", "F32", 4},           {DType::F16, "f16", "F16", 2}, {DType::BF16, "bf16", "BF16", 2},
    {DType::F8E4M3, "f8e4m3", "F8_E4M3", 1}, {DType::I32, "i32", "I32", 4}, {DType::I64, "i64", "I64", 8},
    {DType::Bool, "bool", "BOOL", 1},
};
static_assert(std::size(kTypes) == static_cast<size_t>(DType::Bool) + 1, "one entry per DType, in order");

const DTypeInfo& info(DType t) { return kTypes[static_cast<size_t>(t)]; }

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1);                                                       // round to nearest even
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace

size_t dtype_size(DType t) { return info(t).size; }
bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F8E4M3; }
bool is_integer(DType t) { return t == DType::I32 || t == DType::I64; }
const char* dtype_name(DType t) { return info(t).name; }
const char* storage_name(DType t) { return info(t).storage; }

DType parse_dtype(const std::string& name) {
  for (const auto& i : kTypes)
    if (name == i.name) return i.type;
  fail("[dtype] unknown element type '{}'", name);
}

bool parse_storage_name(const std::string& name, DType* out) {
  for (const auto& i : kTypes)
    if (name == i.storage) {
      *out = i.type;
      return true;
    }
  return false;
}

void convert_to_f32(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(static_cast<const uint16_t*>(src)[i]);
      return;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(static_cast<const uint16_t*>(src)[i]);
      return;
    case DType::F8E4M3:
      for (int64_t i = 0; i < n; ++i) dst[i] = decode_e4m3(static_cast<const uint8_t*>(src)[i]);
      return;
    case DType::I32:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(static_cast<const int32_t*>(src)[i]);
      return;
    case DType::I64:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(static_cast<const int64_t*>(src)[i]);
      return;
    case DType::Bool:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<const uint8_t*>(src)[i] ? 1.0f : 0.0f;
      return;
  }
}

void convert_from_f32(DType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = float_to_half(src[i]);
      return;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = float_to_bf16(src[i]);
      return;
    case DType::F8E4M3:
      for (int64_t i = 0; i < n; ++i) static_cast<uint8_t*>(dst)[i] = encode_e4m3(round_to_e4m3(src[i]));
      return;
    case DType::I32:
      for (int64_t i = 0; i < n; ++i) static_cast<int32_t*>(dst)[i] = static_cast<int32_t>(src[i]);
      return;
    case DType::I64:
      for (int64_t i = 0; i < n; ++i) static_cast<int64_t*>(dst)[i] = static_cast<int64_t>(src[i]);
      return;
    case DType::Bool:
      for (int64_t i = 0; i < n; ++i) static_cast<uint8_t*>(dst)[i] = src[i] != 0.0f;
      return;
  }
}

}  // namespace kiln
