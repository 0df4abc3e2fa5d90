// The .bundle file layout (docs/bundle-format.md): a fixed 128-byte header, a JSON manifest and
// a data section of 64-byte aligned tensors. All integers little-endian.
#pragma once

#include <cstdint>

namespace kiln::bundle {

inline constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'B', 'N', 'D', 'L'};
inline constexpr uint32_t kFormatVersion = 2;  // readers accept their own major version only
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
inline constexpr int kOffManifestSha = 48;     // 32 bytes
inline constexpr int kOffDataSha = 80;         // 32 bytes

}  // namespace kiln::bundle
