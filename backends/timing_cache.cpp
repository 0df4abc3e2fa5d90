#include "backends/timing_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "core/error.h"
#include "core/read_file.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxCacheBytes = uint64_t{64} << 20;  // thousands of problems take a few hundred kB

using Entries = std::map<std::string, std::map<std::string, std::string>>;

// The file's entries for `build`, or none where there is no file yet.
Entries load(const std::string& path, const std::string& build) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  return TimingCache::parse(read_file(path, kMaxCacheBytes), build);
}

}  // namespace

TimingCache::TimingCache(std::string path, std::string build) : path_(std::move(path)), build_(std::move(build)) {
  try {
    entries_ = load(path_, build_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln: note: timing cache %s ignored (%s); it is written anew\n", path_.c_str(), e.what());
  }
}

std::string TimingCache::user_path(const char* set, const char* xdg_cache_home, const char* home) {
  if (set) return std::string(set) == "off" ? "" : set;
  if (xdg_cache_home && *xdg_cache_home) return std::string(xdg_cache_home) + "/kiln/timing-cache.json";
  if (home && *home) return std::string(home) + "/.cache/kiln/timing-cache.json";
  return "";
}

std::shared_ptr<TimingCache> TimingCache::user() {
  static const std::shared_ptr<TimingCache> cache = []() -> std::shared_ptr<TimingCache> {
    const std::string path =
        user_path(std::getenv("KILN_TIMING_CACHE"), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
    const std::string build = this_build();
    if (path.empty() || build.empty()) return nullptr;
    return std::make_shared<TimingCache>(path, build);
  }();
  return cache;
}

std::string TimingCache::this_build() {
  // The executable's size, modification time and inode tell one build from the next without
  // reading it (tens of MB); the version alone would let a rebuilt kernel inherit its old
  // timings. Without them, no cache.
  struct stat st {};
  if (::stat("/proc/self/exe", &st) != 0) return "";
  return fmt::format("{} {} {}.{:09} {}", KILN_VERSION, static_cast<long long>(st.st_size),
                     static_cast<long long>(st.st_mtim.tv_sec), static_cast<long>(st.st_mtim.tv_nsec),
                     static_cast<unsigned long long>(st.st_ino));
}

Entries TimingCache::parse(const std::string& text, const std::string& build) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  KILN_CHECK(!j.is_discarded(), "[timing cache] not JSON");
  KILN_CHECK(j.is_object() && j.contains("build") && j["build"].is_string() && j.contains("entries") &&
                 j["entries"].is_object(),
             "[timing cache] not a timing cache: an object with 'build' and 'entries' expected");
  Entries out;
  if (j["build"].get<std::string>() != build) return out;  // another build's timings
  for (const auto& [hardware, problems] : j["entries"].items()) {
    KILN_CHECK(problems.is_object(), "[timing cache] entries of '{}' are not an object", hardware);
    for (const auto& [problem, variant] : problems.items()) {
      KILN_CHECK(variant.is_string(), "[timing cache] the variant of '{}' is not a string", problem);
      out[hardware][problem] = variant.get<std::string>();
    }
  }
  return out;
}

std::optional<std::string> TimingCache::find(const std::string& hardware, const std::string& problem) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto h = entries_.find(hardware);
  if (h == entries_.end()) return std::nullopt;
  const auto p = h->second.find(problem);
  if (p == h->second.end()) return std::nullopt;
  return p->second;
}

void TimingCache::record(const std::string& hardware, const std::string& problem, const std::string& variant) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[hardware][problem] = variant;
  recorded_[hardware][problem] = variant;
}

void TimingCache::save() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (recorded_.empty() || unwritable_) return;
  std::string tmp = path_ + ".XXXXXX";  // next to the file: rename() stays on one file system
  int fd = -1;
  try {
    // Other processes may have saved since this one loaded: their entries are kept, and this
    // one's new choices added (what it loaded at the start is no newer than the file).
    Entries merged;
    try {
      merged = load(path_, build_);
    } catch (const std::exception&) {  // unreadable: replaced
    }
    for (const auto& [hardware, problems] : recorded_)
      for (const auto& [problem, variant] : problems) merged[hardware][problem] = variant;
    const fs::path target(path_);
    if (target.has_parent_path()) fs::create_directories(target.parent_path());
    fd = ::mkstemp(tmp.data());
    KILN_CHECK(fd >= 0, "cannot create {}", tmp);
    const std::string text = nlohmann::json{{"build", build_}, {"entries", merged}}.dump(1) + "\n";
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      KILN_CHECK(n > 0, "cannot write {}", tmp);
      done += static_cast<size_t>(n);
    }
    KILN_CHECK(::close(std::exchange(fd, -1)) == 0, "cannot write {}", tmp);
    fs::rename(tmp, target);
    entries_ = std::move(merged);
    recorded_.clear();
  } catch (const std::exception& e) {
    if (fd >= 0) ::close(fd);
    std::error_code ec;
    fs::remove(tmp, ec);
    std::fprintf(stderr, "kiln: note: timing cache %s not saved (%s); kernels are timed as without one\n",
                 path_.c_str(), e.what());
    unwritable_ = true;  // said once
  }
}

}  // namespace kiln
