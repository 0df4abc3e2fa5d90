// What the attention kernels (reference and fast) read from their optional inputs: kv_length
// per batch and the mask's strides.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"

namespace kiln::cpu {

enum AttentionInput : int { AttnQ = 0, AttnK, AttnV, AttnMask, AttnKvLength };

// kv_length per batch, checked to lie in [0, sk]; sk for every batch when there is none.
std::vector<int64_t> attention_kv_lengths(const KernelArgs& a, int64_t nb, int64_t sk);

// The mask (null when there is none) and its stride along each of [B, H, Sq, Sk]: 0 where it
// broadcasts.
struct AttentionMask {
  const float* data = nullptr;
  int64_t stride[4] = {0, 0, 0, 0};
};
AttentionMask attention_mask(const KernelArgs& a);

}  // namespace kiln::cpu
