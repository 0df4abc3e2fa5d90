// libFuzzer target for the timing cache file (backends/timing_cache.h), which every GPU engine
// reads from the user's cache folder: any bytes as a cache of the build "fuzz"; what parses
// holds no hardware without choices.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "backends/timing_cache.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto entries = kiln::TimingCache::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    for (const auto& [hardware, problems] : entries)
      if (problems.empty()) std::abort();  // an empty hardware object yields no entry
  } catch (const kiln::Error&) {
  }
  return 0;
}
