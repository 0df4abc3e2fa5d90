// Kernel variant choices remembered across processes, like TensorRT's timing cache: the planner
// times the variants of each kernel problem (op, form, tensor types and shapes) once per plan,
// and a translation's encoder meets a new problem for every source-length bucket, so a fresh
// process spends up to half its first run timing kernels its predecessor already timed. Here
// each choice is kept per hardware (the backend's hardware string) in one JSON file, and a
// later planner takes it without timing.
//
// The file belongs to one build of kiln: a kernel may change while its variant names stay, so
// entries written by another build are dropped on load. A file that does not parse, or holds
// the wrong types, is ignored with a one-line note (the planner times again and rewrites it).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace kiln {

class TimingCache {
 public:
  // A cache kept in `path` (read now if it exists, written by save()) for choices made by
  // `build` (entries of any other build are dropped).
  TimingCache(std::string path, std::string build);

  // The cache of this user and this build of kiln, shared by every engine of the process:
  // $KILN_TIMING_CACHE if set ("off" or empty: none), else timing-cache.json under
  // $XDG_CACHE_HOME/kiln or ~/.cache/kiln; none where neither is set.
  static std::shared_ptr<TimingCache> user();
  // This build of kiln: its version and the size and time of its executable.
  static std::string this_build();

  std::optional<std::string> find(const std::string& hardware, const std::string& problem) const;
  void record(const std::string& hardware, const std::string& problem, const std::string& variant);
  // Writes the entries recorded since the last save, merged with what other processes wrote
  // meanwhile, through a temporary file and a rename (readers never see half a file). A cache
  // that cannot be written is a note, not an error: planning goes on without it.
  void save();

  // The entries of a cache file's text for `build` ({hardware: {problem: variant}}); throws
  // kiln::Error on anything but that file's format (the fuzz target's entry point).
  static std::map<std::string, std::map<std::string, std::string>> parse(const std::string& text,
                                                                         const std::string& build);

 private:
  std::string path_, build_;
  mutable std::mutex mutex_;
  std::map<std::string, std::map<std::string, std::string>> entries_;  // hardware -> problem -> variant
  bool dirty_ = false;
};

}  // namespace kiln
