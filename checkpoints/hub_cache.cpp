#include "checkpoints/hub_cache.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

namespace kiln {

namespace fs = std::filesystem;

std::string hub_cache_dir() {
  if (const char* v = std::getenv("HF_HUB_CACHE"); v && *v) return v;
  if (const char* v = std::getenv("HF_HOME"); v && *v) return (fs::path(v) / "hub").string();
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v && *v) return (fs::path(v) / "huggingface" / "hub").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home ? home : ".") / ".cache" / "huggingface" / "hub").string();
}

std::string hub_repo_folder(const std::string& repo_id) {
  std::string out = "models--";
  for (char c : repo_id) {
    if (c == '/')
      out += "--";
    else
      out += c;
  }
  return out;
}

bool is_hub_id(const std::string& s) {
  static const std::regex re(R"(^[A-Za-z0-9][A-Za-z0-9_.\-]*(/[A-Za-z0-9][A-Za-z0-9_.\-]*)?$)");
  return s.size() <= 200 && std::regex_match(s, re) && s.find("..") == std::string::npos;
}

bool is_commit_hash(const std::string& s) {
  static const std::regex re("^[0-9a-f]{40}$");
  return std::regex_match(s, re);
}

std::optional<std::string> cached_snapshot(const std::string& cache_dir, const std::string& repo_id,
                                           const std::string& revision) {
  fs::path repo = fs::path(cache_dir) / hub_repo_folder(repo_id);
  std::string commit = revision;
  if (!is_commit_hash(revision)) {
    std::ifstream ref(repo / "refs" / revision);
    if (!ref || !(ref >> commit) || !is_commit_hash(commit)) return std::nullopt;
  }
  fs::path snap = repo / "snapshots" / commit;
  if (!fs::exists(snap / "config.json")) return std::nullopt;
  return snap.string();
}

}  // namespace kiln
