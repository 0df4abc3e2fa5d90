#include "checkpoints/source.h"

#include <filesystem>

#include "checkpoints/hub_cache.h"
#include "checkpoints/hub_download.h"
#include "core/error.h"

namespace kiln {

namespace fs = std::filesystem;

ResolvedSource resolve_source(const std::string& source, const std::string& revision) {
  ResolvedSource r;
  if (fs::exists(source)) {
    KILN_CHECK(fs::is_directory(source), "[source] {} is a file; give the checkpoint's folder", source);
    KILN_CHECK(revision.empty(), "[source] --revision applies to Hub ids, not to the local folder {}", source);
    r.dir = source;
    r.model_id = fs::weakly_canonical(source).filename().string();
    // A folder inside the Hub cache records its commit in its own name.
    std::string leaf = fs::weakly_canonical(source).filename().string();
    if (is_commit_hash(leaf)) r.revision = leaf;
    return r;
  }
  KILN_CHECK(is_hub_id(source), "[source] {}: no such folder, and not a Hub model id", source);
  r.dir = fetch_snapshot(source, revision, hub_options_from_env());
  r.model_id = source;
  r.revision = fs::path(r.dir).filename().string();
  return r;
}

}  // namespace kiln
