// The bearer token both front ends ask for (--auth-token-file).
#pragma once

#include <string>
#include <string_view>

namespace kiln::serve {

// Whether an Authorization header (or gRPC "authorization" metadata) is "Bearer <token>";
// compared in constant time so that timing does not tell how much of a guess was right.
inline bool bearer_token_matches(std::string_view given, const std::string& token) {
  const std::string want = "Bearer " + token;
  unsigned diff = given.size() != want.size();
  for (size_t i = 0; i < given.size() && i < want.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ want[i]);
  return diff == 0;
}

}  // namespace kiln::serve
