// The .bundle file layout (docs/bundle-format.md): a fixed 128-byte header, a JSON manifest and
// a data section of 64-byte aligned tensors. All integers little-endian.
#pragma once

#include <cstdint>

namespace kiln::bundle {

inline constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'B', 'N', 'D', 'L'};
// Major versions: what this kiln writes, and the oldest it still reads (version 2 differs only
// in its data checksum: SHA-256 where version 3 has XXH3-128, bundle/checksum.h).
inline constexpr uint32_t kFormatVersion = 3;
inline constexpr uint32_t kOldestReadVersion = 2;
inline constexpr uint64_t kHeaderSize = 128;
inline constexpr uint64_t kAlignment = 64;
inline constexpr uint64_t kMaxManifestBytes = 64ull << 20;
inline constexpr size_t kMaxGraphs = 64;
inline constexpr int64_t kMaxBatchSize = 4096;  // the largest batch size a bundle is built for

// Byte offsets of the header fields.
inline constexpr int kOffVersion = 8;          // u32
inline constexpr int kOffHeaderSize = 12;      // u32
inline constexpr int kOffManifestOffset = 16;  // u64
inline constexpr int kOffManifestSize = 24;    // u64
inline constexpr int kOffDataOffset = 32;      // u64
inline constexpr int kOffDataSize = 40;        // u64
inline constexpr int kOffManifestSha = 48;     // 32 bytes: SHA-256
inline constexpr int kOffDataChecksum = 80;    // 32 bytes (bundle/checksum.h)

}  // namespace kiln::bundle
