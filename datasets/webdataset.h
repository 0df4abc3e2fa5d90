// WebDataset tar shards: consecutive members sharing a key ("KEY.jpg", "KEY.cls") form one
// sample. Read with libarchive, which handles the tar variants and rejects malformed archives.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct Sample {
  std::string key;
  std::map<std::string, std::vector<uint8_t>> parts;  // extension ("jpg", "cls") -> bytes
};

// Calls `fn` for each sample in order; stops early when it returns false. Throws kiln::Error on
// a malformed or truncated shard.
void for_each_sample(const std::string& shard, const std::function<bool(Sample&)>& fn);

}  // namespace kiln
