// The Hugging Face cache layout, as huggingface_hub writes it:
//   <cache>/models--ORG--NAME/{blobs/<etag>, snapshots/<commit>/<file> -> ../../blobs/<etag>, refs/<revision>}
#pragma once

#include <optional>
#include <string>

namespace kiln {

// HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::string hub_cache_dir();
// "org/model-name" -> "models--org--model-name"
std::string hub_repo_folder(const std::string& repo_id);
// A plausible Hub model id: NAME or ORG/NAME of letters, digits, '-', '_', '.'.
bool is_hub_id(const std::string& s);
bool is_commit_hash(const std::string& s);
// The snapshot folder for `revision` (branch, tag or commit) if the cache has one with config.json.
std::optional<std::string> cached_snapshot(const std::string& cache_dir, const std::string& repo_id,
                                           const std::string& revision);

}  // namespace kiln
