// Kernel variant choices remembered across processes, like TensorRT's timing cache: the planner
// times the variants of each kernel problem (op, form, tensor types and shapes) once per engine,
// and a translation's encoder meets new problems with every source-length bucket, so a fresh
// process spent up to half its first run timing kernels its predecessor had already timed.
// Here each choice is kept per hardware (the backend's hardware string, as a bundle's saved
// plans are) in one JSON file, and a later planner takes it without timing.
//
// The file belongs to one build of kiln: a kernel may change while its variant names stay, so
// entries written by another build are dropped on load (and by its next save). A variant that
// is a rank in a library's list (cuBLASLt's, cuDNN's) may name another algorithm under another
// version of that library: the CUDA backend's hardware string names those versions. A file that
// does not parse, or holds the wrong types, is ignored with a one-line note (the planner times
// again and rewrites it).
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

  // The cache of this user and this build of kiln, shared by every engine of the process, at
  // user_path() of the environment; none where that is empty.
  static std::shared_ptr<TimingCache> user();
  // $KILN_TIMING_CACHE if set ("off" or empty: none), else timing-cache.json under
  // $XDG_CACHE_HOME/kiln or ~/.cache/kiln; none where neither is set.
  static std::string user_path(const char* kiln_timing_cache, const char* xdg_cache_home, const char* home);
  // This build of kiln: its version and its executable's size, modification time (ns) and inode;
  // empty where the executable cannot be seen (then no cache).
  static std::string this_build();

  std::optional<std::string> find(const std::string& hardware, const std::string& problem) const;
  void record(const std::string& hardware, const std::string& problem, const std::string& variant);
  // Writes the choices recorded since the last save into the file, keeping what other processes
  // wrote there meanwhile, through a temporary file and a rename (readers never see half a
  // file). A cache that cannot be written is one note, not an error: planning goes on.
  void save();

  // The entries of a cache file's text for `build` ({hardware: {problem: variant}}); throws
  // kiln::Error on anything but that file's format (the fuzz target's entry point).
  static std::map<std::string, std::map<std::string, std::string>> parse(const std::string& text,
                                                                         const std::string& build);

 private:
  std::string path_, build_;
  mutable std::mutex mutex_;
  std::map<std::string, std::map<std::string, std::string>> entries_;   // hardware -> problem -> variant
  std::map<std::string, std::map<std::string, std::string>> recorded_;  // of which not yet saved
  bool unwritable_ = false;
};

}  // namespace kiln
