// libFuzzer target for the bundle reader. Most mutations would stop at the checksums, so the
// harness also re-seals each input's manifest and data checksums and parses it again: that way
// the manifest, tensor-table and graph validation are fuzzed too.
#include <cstdint>
#include <cstring>
#include <vector>

#include "bundle/bundle.h"
#include "bundle/checksum.h"
#include "bundle/format.h"
#include "core/error.h"
#include "core/sha256.h"

namespace {

void try_parse(const std::vector<uint8_t>& bytes) {
  try {
    kiln::Bundle::from_bytes(bytes, "fuzz.bundle");
  } catch (const kiln::Error&) {
  }
}

void seal(std::vector<uint8_t>& b) {
  using namespace kiln::bundle;
  if (b.size() < kHeaderSize) return;
  uint64_t m_off, m_size, d_off, d_size;
  std::memcpy(&m_off, b.data() + kOffManifestOffset, 8);
  std::memcpy(&m_size, b.data() + kOffManifestSize, 8);
  std::memcpy(&d_off, b.data() + kOffDataOffset, 8);
  std::memcpy(&d_size, b.data() + kOffDataSize, 8);
  if (m_off > b.size() || m_size > b.size() - m_off || d_off > b.size() || d_size > b.size() - d_off) return;
  auto put = [&](int at, const std::string& hex) {
    for (int i = 0; i < 32; ++i) b[at + i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  };
  uint32_t version;
  std::memcpy(&version, b.data() + kOffVersion, 4);
  put(kOffManifestSha, kiln::sha256_hex({b.data() + m_off, m_size}));
  put(kOffDataChecksum, data_checksum_hex(version, {b.data() + d_off, d_size}));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  try_parse(bytes);
  seal(bytes);
  try_parse(bytes);
  return 0;
}
