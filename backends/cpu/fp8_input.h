// The FP8 layers' input rounding (core/fp8.h's fp8_layer_input) over a whole tensor, 16 lanes at
// a time with AVX-512 (the fp16 step by the F16C conversion, the E4M3 step by the same integer
// rounding) where the CPU has it: scalar, it cost an FP8 bundle three times the fp32 run time.
// Bit-identical to the scalar function (tests/fp8_test.cpp).
#pragma once

#include <cstdint>

namespace kiln::cpu {

void round_fp8_inputs(float* x, int64_t count, float scale, bool is_e4m3);

}  // namespace kiln::cpu
