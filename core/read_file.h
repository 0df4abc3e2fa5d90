// The whole of a small file a reader parses (an image, a config, a labels or text file): only a
// regular file, of at most max_bytes. An ifstream read a directory as an error text of the
// standard library's, and a device such as /dev/zero without end.
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

// The file's bytes; fails with "[file] ..." naming the path when it cannot be opened, is not a
// regular file, or is larger than max_bytes.
std::string read_file(const std::string& path, uint64_t max_bytes);

inline constexpr uint64_t kMaxTextFileBytes = uint64_t{1} << 30;     // a list of sentences to translate
inline constexpr uint64_t kMaxSmallFileBytes = uint64_t{256} << 20;  // an image, config, tokenizer or labels file

}  // namespace kiln
