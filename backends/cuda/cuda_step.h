// One kernel launch of the CUDA backend's plan, as the fusion planner (fusion_planner.cpp) makes
// it from graph nodes and the engine (cuda_engine.cpp) enqueues it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/kernels.cuh"

namespace kiln {

inline constexpr size_t kNoBias = SIZE_MAX;  // CudaStep::b when a layer has no bias

struct CudaStep {
  enum Kind { Stem, Gemm, Depthwise, SqueezeExcite, Pool, Scale, Add, LinearNaive, ToFloat } kind;
  std::string name, group;
  std::vector<int> reads, writes;  // arena values, for memory planning
  int x = -1, y = -1, gate = -1, residual = -1, other = -1;
  bool to_output = false;  // writes the fp32 output buffer instead of the arena
  int node = -1;           // the graph node whose shape parameters it uses
  cuda::Act act = cuda::Act::None, act2 = cuda::Act::Sigmoid;
  size_t w = 0, b = 0, w2 = 0, b2 = 0;  // byte offsets into the weight blob; b = SIZE_MAX: no bias
  int pool_slot = -1;
  int rd = 0;
  // FP8 (see cuda::GemmArgs and cuda::DepthwiseArgs): a GEMM with E4M3 weights and inputs, whose
  // col_scale (blob offset) holds input scale x weight scale per output channel; a GEMM whose
  // output is stored as E4M3 for an FP8 consumer; a depthwise conv's input mode.
  bool fp8 = false, out_e4m3 = false;
  size_t col_scale = 0;
  float a_inv_scale = 1.0f, out_inv_scale = 1.0f, x_scale = 1.0f, x_inv_scale = 1.0f;
  cuda::DepthwiseInput x_mode = cuda::DepthwiseInput::F16;
};

}  // namespace kiln
