#include "core/json_int.h"

#include "core/error.h"

namespace kiln {

namespace {

// The value as the error shows it: short, whatever the input.
std::string excerpt(const nlohmann::json& j) {
  std::string text = j.dump();
  return text.size() <= 40 ? text : text.substr(0, 37) + "...";
}

}  // namespace

int64_t json_int(const nlohmann::json& j, int64_t lo, int64_t hi, const std::string& what) {
  bool ok = false;
  int64_t v = 0;
  if (j.is_number_unsigned()) {
    const uint64_t u = j.get<uint64_t>();
    ok = hi >= 0 && u <= static_cast<uint64_t>(hi);
    v = ok ? static_cast<int64_t>(u) : 0;
  } else if (j.is_number_integer()) {
    v = j.get<int64_t>();
    ok = true;
  }
  KILN_CHECK(ok && v >= lo && v <= hi, "{} must be an integer from {} to {}, not {}", what, lo, hi, excerpt(j));
  return v;
}

std::vector<int64_t> json_ints(const nlohmann::json& j, size_t max_count, int64_t lo, int64_t hi,
                               const std::string& what) {
  KILN_CHECK(j.is_array() && j.size() <= max_count, "{} must be a list of at most {} integers, not {}", what, max_count,
             excerpt(j));
  std::vector<int64_t> out;
  out.reserve(j.size());
  for (const auto& e : j) out.push_back(json_int(e, lo, hi, what));
  return out;
}

}  // namespace kiln
