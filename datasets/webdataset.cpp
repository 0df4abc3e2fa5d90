#include "datasets/webdataset.h"

#include <archive.h>
#include <archive_entry.h>

#include <memory>

#include "core/error.h"

namespace kiln {

namespace {
constexpr int64_t kMaxMemberBytes = 256ll << 20;
}

void for_each_sample(const std::string& shard, const std::function<bool(Sample&)>& fn) {
  std::unique_ptr<archive, decltype(&archive_read_free)> a(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(a.get());
  archive_read_support_filter_all(a.get());
  KILN_CHECK(archive_read_open_filename(a.get(), shard.c_str(), 1 << 16) == ARCHIVE_OK,
             "[webdataset] cannot open {}: {}", shard, archive_error_string(a.get()));
  Sample current;
  archive_entry* entry;
  int rc;
  while ((rc = archive_read_next_header(a.get(), &entry)) == ARCHIVE_OK) {
    if (archive_entry_filetype(entry) != AE_IFREG) continue;
    std::string path = archive_entry_pathname(entry);
    std::string base = path.substr(path.find_last_of('/') + 1);
    auto dot = base.find('.');
    KILN_CHECK(dot != std::string::npos && dot > 0, "[webdataset] {}: member '{}' has no KEY.EXT name", shard, path);
    std::string key = path.substr(0, path.size() - (base.size() - dot));
    std::string ext = base.substr(dot + 1);
    int64_t size = archive_entry_size(entry);
    KILN_CHECK(size >= 0 && size <= kMaxMemberBytes, "[webdataset] {}: member '{}' has size {}", shard, path, size);
    if (key != current.key && !current.key.empty()) {
      if (!fn(current)) return;
      current = Sample{};
    }
    current.key = key;
    std::vector<uint8_t> bytes(static_cast<size_t>(size));
    la_ssize_t got = size > 0 ? archive_read_data(a.get(), bytes.data(), bytes.size()) : 0;
    KILN_CHECK(got == size, "[webdataset] {}: member '{}' is truncated", shard, path);
    current.parts[ext] = std::move(bytes);
  }
  KILN_CHECK(rc == ARCHIVE_EOF, "[webdataset] {}: {}", shard, archive_error_string(a.get()));
  if (!current.key.empty()) fn(current);
}

}  // namespace kiln
