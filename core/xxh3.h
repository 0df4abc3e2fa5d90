// XXH3-128 through libxxhash: the checksum of a bundle's data section (bundle/format.h). Not
// cryptographic, and made for this: it catches corrupt or truncated files at 10-30 GB/s, where
// SHA-256 (about 1 GB/s) made checking a 400 MB bundle take longer than loading and running it.
// A checksum stored in the same file cannot stop deliberate tampering whichever hash it is.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace kiln {

// The hash's canonical (big-endian) 16 bytes as 32 lowercase hex digits.
std::string xxh3_128_hex(std::span<const uint8_t> bytes);

}  // namespace kiln
