// The data section's checksum as a bundle's header holds it (format.h, docs/bundle-format.md):
// 32 bytes, as 64 hex digits.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace kiln::bundle {

// Format version 3: XXH3-128 of the data, then 16 zero bytes; version 2: SHA-256 of the data.
std::string data_checksum_hex(uint32_t version, std::span<const uint8_t> data);

}  // namespace kiln::bundle
