// Downloads a model snapshot from the Hugging Face Hub (or any server with the same
// /{repo}/resolve/{revision}/{file} URLs) into the cache layout of hub_cache.h, with libcurl.
// Partial files are resumed with HTTP Range; LFS files are checked against their sha256 etag.
#pragma once

#include <string>

namespace kiln {

struct HubOptions {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT
  std::string token;                                // HF_TOKEN
  bool offline = false;                             // HF_HUB_OFFLINE
  std::string cache_dir;                            // hub_cache_dir()
  int max_attempts = 5;                             // per file, resuming each time
  long timeout_s = 60;                              // stall timeout
};

HubOptions hub_options_from_env();

// Returns the snapshot folder holding config.json and the safetensors weights of `revision`.
// Offline, or if the Hub cannot be reached, a cached snapshot is used when there is one.
std::string fetch_snapshot(const std::string& repo_id, const std::string& revision, const HubOptions& options);

}  // namespace kiln
