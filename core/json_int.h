// Integers read from untrusted JSON (bundle manifests, graphs, TF.js models). nlohmann's
// get<int64_t>() converts a float with a plain cast, which is undefined behaviour out of range,
// and wraps an unsigned above INT64_MAX; readers of files use these instead.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// j as an integer from lo to hi; anything else (a float, a string, out of range) is an error
// naming `what`.
int64_t json_int(const nlohmann::json& j, int64_t lo, int64_t hi, const std::string& what);

// j as a list of at most max_count integers, each from lo to hi.
std::vector<int64_t> json_ints(const nlohmann::json& j, size_t max_count, int64_t lo, int64_t hi,
                               const std::string& what);

}  // namespace kiln
