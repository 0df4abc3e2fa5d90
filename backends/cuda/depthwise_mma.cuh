// The tensor-core depthwise kernels (depthwise_mma.cu): variants of launch_depthwise
// (kernels.cuh), numbered here from 0; depthwise_conv.cu places them after its own.
#pragma once

#include <cuda_runtime.h>

#include "backends/cuda/kernels.cuh"

namespace kiln::cuda {

inline constexpr int kDepthwiseMmaVariants = 4;
const char* depthwise_mma_variant_name(int variant);
bool depthwise_mma_supports(const DepthwiseArgs& args, int variant);
void launch_depthwise_mma(const DepthwiseArgs& args, int variant, cudaStream_t stream);

}  // namespace kiln::cuda
