// The reference attention arithmetic (the spec the other kernels are checked against): one
// query row at a time, scores, softmax and the weighted sum of values in double; keys a row may
// not see (past kv_length, or after it under causal) are skipped, so a row that sees none, or
// only -inf mask entries, gives zeros. attention's and kv_cache_attention's CPU kernels share it.
#pragma once

#include "backends/cpu/attention_inputs.h"

namespace kiln::cpu {

// y [rows.count(), rows.dv()] in the rows' order.
void attention_reference(const AttentionRows& rows, float* y);

}  // namespace kiln::cpu
