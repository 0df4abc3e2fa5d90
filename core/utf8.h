// UTF-8, strictly as Python and Rust decode it: no overlong forms, surrogates or code points
// past U+10FFFF. Shared by everything that reads text from users or bundles (tokenizers,
// metrics, the CLI).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln {

// One step through UTF-8: the length of the well-formed sequence at s[i], or, when there is
// none, the length of its maximal invalid prefix (at least 1), which is what one U+FFFD replaces
// in Rust's from_utf8_lossy and Python's errors="replace".
struct Utf8Step {
  size_t length;
  bool valid;
};
Utf8Step utf8_step(std::string_view s, size_t i);

// The offset of the first byte that does not start well-formed UTF-8, or npos.
size_t first_invalid_utf8(std::string_view s);
inline bool valid_utf8(std::string_view s) { return first_invalid_utf8(s) == std::string_view::npos; }

// Decodes the well-formed sequence of `length` bytes at s[i].
char32_t code_point_at(std::string_view s, size_t i, size_t length);
void append_utf8(std::string& out, char32_t cp);

// The code points of s; false (out unspecified) where s is not well-formed.
bool decode_utf8(std::string_view s, std::u32string& out);

}  // namespace kiln
