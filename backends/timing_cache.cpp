#include "backends/timing_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/read_file.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxCacheBytes = uint64_t{64} << 20;  // thousands of problems take a few hundred kB

using Entries = std::map<std::string, std::map<std::string, std::string>>;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

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

std::shared_ptr<TimingCache> TimingCache::user() {
  static const std::shared_ptr<TimingCache> cache = []() -> std::shared_ptr<TimingCache> {
    std::string path;
    if (const char* set = std::getenv("KILN_TIMING_CACHE")) {
      path = set;
      if (path.empty() || path == "off") return nullptr;
    } else if (!env("XDG_CACHE_HOME").empty()) {
      path = env("XDG_CACHE_HOME") + "/kiln/timing-cache.json";
    } else if (!env("HOME").empty()) {
      path = env("HOME") + "/.cache/kiln/timing-cache.json";
    } else {
      return nullptr;
    }
    return std::make_shared<TimingCache>(path, this_build());
  }();
  return cache;
}

std::string TimingCache::this_build() {
  // The executable's size and modification time tell one build from the next without reading
  // it (tens of MB); the version alone would let a rebuilt kernel inherit its old timings.
  struct stat st {};
  if (::stat("/proc/self/exe", &st) != 0) return KILN_VERSION;
  return fmt::format("{} {} {}", KILN_VERSION, static_cast<long long>(st.st_size), static_cast<long long>(st.st_mtime));
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
  dirty_ = true;
}

void TimingCache::save() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!dirty_) return;
  const std::string tmp = fmt::format("{}.{}.tmp", path_, static_cast<long long>(::getpid()));
  try {
    // Another process may have saved since this one loaded: its entries are kept, ours win.
    Entries merged;
    try {
      merged = load(path_, build_);
    } catch (const std::exception&) {  // unreadable: replaced by ours
    }
    for (const auto& [hardware, problems] : entries_)
      for (const auto& [problem, variant] : problems) merged[hardware][problem] = variant;
    entries_ = merged;
    const nlohmann::json j = {{"build", build_}, {"entries", merged}};
    const fs::path target(path_);
    if (target.has_parent_path()) fs::create_directories(target.parent_path());
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f << j.dump(1) << '\n';
      KILN_CHECK(f.good(), "cannot write {}", tmp);
    }
    fs::rename(tmp, target);
  } catch (const std::exception& e) {
    std::error_code ec;
    fs::remove(tmp, ec);
    std::fprintf(stderr, "kiln: note: timing cache %s not saved: %s\n", path_.c_str(), e.what());
  }
  dirty_ = false;  // saved, or said once that it could not be
}

}  // namespace kiln
