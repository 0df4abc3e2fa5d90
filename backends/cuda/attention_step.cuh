// Attention for a few query rows over many keys (attention_step.cu): the decoder-step case of
// launch_attention (attention.cuh), which calls it where it fits.
#pragma once

#include "backends/cuda/attention.cuh"

namespace kiln::cuda {

// Head dims (d and dv) up to 128, a block per query row.
bool attention_step_fits(const AttentionArgs& args);
void launch_attention_step(const AttentionArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda
