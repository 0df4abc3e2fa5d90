// Resolves the SOURCE argument of `kiln build` to a folder on disk: a local folder as given, or
// a Hub id found in (or downloaded into) the Hugging Face cache.
#pragma once

#include <string>

namespace kiln {

struct ResolvedSource {
  std::string dir;
  std::string model_id;  // Hub id, or the folder's name for local sources
  std::string revision;  // commit hash where known
};

ResolvedSource resolve_source(const std::string& source, const std::string& revision);

}  // namespace kiln
