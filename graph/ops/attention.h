// What attention and kv_cache_attention (graph/ops/attention.cpp, kv_cache_attention.cpp) share:
// the scale and causal attributes, and the optional kv_length and kv_rows tables that say how
// many keys a batch row has and in which row of k and v each of them lives.
#pragma once

#include <optional>
#include <vector>

#include "graph/graph.h"

namespace kiln {

// scale (0: 1 / sqrt(D)) and causal (0 or 1).
std::vector<AttrSpec> attention_attrs();
// Throws "[op] node: ..." for a scale that is not finite or a causal that is not 0 or 1.
void check_attention_attrs(const Node& n, const char* op);
// kv_length and kv_rows, where given (inputs at kv_length and kv_length + 1): integers,
// kv_length [b], kv_rows [b, sk].
void check_kv_table_dtypes(const Node& n, const std::vector<std::optional<DType>>& in, size_t kv_length);
void check_kv_table_shapes(const Node& n, const std::vector<std::optional<Shape>>& in, size_t kv_length, int64_t b,
                           int64_t sk, const char* op);

}  // namespace kiln
