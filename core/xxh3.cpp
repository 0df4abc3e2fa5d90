#include "core/xxh3.h"

#include <xxhash.h>

#include <fmt/format.h>

namespace kiln {

std::string xxh3_128_hex(std::span<const uint8_t> bytes) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits(bytes.data(), bytes.size()));
  std::string hex;
  hex.reserve(32);
  for (unsigned char b : canonical.digest) hex += fmt::format("{:02x}", b);
  return hex;
}

}  // namespace kiln
