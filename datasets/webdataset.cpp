#include "datasets/webdataset.h"

#include <archive.h>
#include <archive_entry.h>

#include "core/error.h"

namespace kiln {

namespace {
constexpr int64_t kMaxMemberBytes = 256ll << 20;
}

WebDatasetReader::WebDatasetReader(const std::string& shard) : shard_(shard), a_(archive_read_new()) {
  archive_read_support_format_tar(a_);
  archive_read_support_filter_all(a_);
  if (archive_read_open_filename(a_, shard.c_str(), 1 << 16) != ARCHIVE_OK) {
    std::string msg = archive_error_string(a_) ? archive_error_string(a_) : "unknown error";
    archive_read_free(a_);
    a_ = nullptr;
    fail("[webdataset] cannot open {}: {}", shard, msg);
  }
}

WebDatasetReader::~WebDatasetReader() {
  if (a_) archive_read_free(a_);
}

bool WebDatasetReader::read_member(std::string& key, std::string& ext, std::vector<uint8_t>& bytes) {
  if (eof_) return false;
  archive_entry* entry;
  int rc;
  while ((rc = archive_read_next_header(a_, &entry)) == ARCHIVE_OK) {
    if (archive_entry_filetype(entry) != AE_IFREG) continue;
    std::string path = archive_entry_pathname(entry);
    std::string base = path.substr(path.find_last_of('/') + 1);
    auto dot = base.find('.');
    KILN_CHECK(dot != std::string::npos && dot > 0, "[webdataset] {}: member '{}' has no KEY.EXT name", shard_, path);
    key = path.substr(0, path.size() - (base.size() - dot));
    ext = base.substr(dot + 1);
    int64_t size = archive_entry_size(entry);
    KILN_CHECK(size >= 0 && size <= kMaxMemberBytes, "[webdataset] {}: member '{}' has size {}", shard_, path, size);
    bytes.resize(static_cast<size_t>(size));
    la_ssize_t got = size > 0 ? archive_read_data(a_, bytes.data(), bytes.size()) : 0;
    KILN_CHECK(got == size, "[webdataset] {}: member '{}' is truncated", shard_, path);
    return true;
  }
  KILN_CHECK(rc == ARCHIVE_EOF, "[webdataset] {}: {}", shard_, archive_error_string(a_));
  eof_ = true;
  return false;
}

bool WebDatasetReader::next(Sample& out) {
  out = Sample{};
  if (pending_) {
    out.key = pending_key_;
    out.parts[pending_ext_] = std::move(pending_bytes_);
    pending_ = false;
  }
  std::string key, ext;
  std::vector<uint8_t> bytes;
  while (read_member(key, ext, bytes)) {
    if (!out.key.empty() && key != out.key) {
      pending_ = true;
      pending_key_ = key;
      pending_ext_ = ext;
      pending_bytes_ = std::move(bytes);
      return true;
    }
    out.key = key;
    out.parts[ext] = std::move(bytes);
  }
  return !out.key.empty();
}

void for_each_sample(const std::string& shard, const std::function<bool(Sample&)>& fn) {
  WebDatasetReader reader(shard);
  Sample s;
  while (reader.next(s))
    if (!fn(s)) return;
}

}  // namespace kiln
