// The whole of a small file a reader parses (an image, a config, a labels or text file), read
// defensively: a folder is refused by name (an ifstream read it as the standard library's error
// text), and no more than max_bytes are read from anything (a device such as /dev/zero read
// without end). Pipes (/dev/stdin, <(cmd)) are read to their end like files.
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

// The file's bytes; fails with "[file] ..." naming the path when it cannot be opened, is a
// folder, or holds more than max_bytes.
std::string read_file(const std::string& path, uint64_t max_bytes);

inline constexpr uint64_t kMaxTextFileBytes = uint64_t{1} << 30;     // a list of sentences to translate
inline constexpr uint64_t kMaxSmallFileBytes = uint64_t{256} << 20;  // an image, config, tokenizer or labels file

}  // namespace kiln
