// Element types (kiln::DType, include/kiln/tensor.h): sizes, names in graphs and bundles, and
// conversions to and from fp32 for code that computes in fp32 whatever a value is stored as.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/tensor.h"

namespace kiln {

size_t dtype_size(DType t);
bool is_float(DType t);  // F32, F16, BF16, F8E4M3
bool is_integer(DType t);
// Graph JSON names: f32, f16, bf16, f8e4m3, i32, i64, bool.
const char* dtype_name(DType t);
DType parse_dtype(const std::string& name);  // throws "[dtype] unknown ..."
// Tensor-table names, as safetensors spells them: F32, F16, BF16, F8_E4M3, I32, I64, BOOL.
const char* storage_name(DType t);
bool parse_storage_name(const std::string& name, DType* out);

// n elements of type t at src, as floats (integers by value, E4M3 decoded without a scale).
void convert_to_f32(DType t, const void* src, float* dst, int64_t n);
// n floats stored as type t: rounded to nearest even (F16, BF16, E4M3, saturating at 448),
// truncated toward zero for integers, != 0 for Bool.
void convert_from_f32(DType t, const float* src, void* dst, int64_t n);

}  // namespace kiln
