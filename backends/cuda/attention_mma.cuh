// Attention on the tensor cores (attention_mma.cu): the many-rows fp16 case of launch_attention
// (attention.cuh), which calls it where it fits.
#pragma once

#include "backends/cuda/attention.cuh"

namespace kiln::cuda {

// fp16, 16 or more query rows, head dims (d and dv) multiples of 8 up to 128, no kv_rows.
bool attention_mma_fits(const AttentionArgs& args);
void launch_attention_mma(const AttentionArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda
