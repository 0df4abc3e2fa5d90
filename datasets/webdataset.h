// WebDataset tar shards: consecutive members sharing a key ("KEY.jpg", "KEY.cls") form one
// sample. Read with libarchive, which handles the tar variants and rejects malformed archives.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct archive;

namespace kiln {

struct Sample {
  std::string key;
  std::map<std::string, std::vector<uint8_t>> parts;  // extension ("jpg", "cls") -> bytes
};

class WebDatasetReader {
 public:
  explicit WebDatasetReader(const std::string& shard);
  ~WebDatasetReader();
  // The next sample; false at the end. Throws kiln::Error on a malformed or truncated shard.
  bool next(Sample& out);

 private:
  bool read_member(std::string& key, std::string& ext, std::vector<uint8_t>& bytes);
  std::string shard_;
  archive* a_ = nullptr;
  bool pending_ = false;  // a member read ahead that starts the next sample
  bool eof_ = false;      // libarchive must not be asked for headers after its end
  std::string pending_key_, pending_ext_;
  std::vector<uint8_t> pending_bytes_;
};

// Calls `fn` for each sample in order; stops early when it returns false.
void for_each_sample(const std::string& shard, const std::function<bool(Sample&)>& fn);

}  // namespace kiln
