#include "bundle/checksum.h"

#include "core/sha256.h"
#include "core/xxh3.h"

namespace kiln::bundle {

std::string data_checksum_hex(uint32_t version, std::span<const uint8_t> data) {
  if (version == 2) return sha256_hex(data);
  return xxh3_128_hex(data) + std::string(32, '0');
}

}  // namespace kiln::bundle
