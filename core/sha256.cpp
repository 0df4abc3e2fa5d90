#include "core/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <vector>

#include "core/error.h"

namespace kiln {

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  KILN_CHECK(state_->ctx && EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) == 1, "[sha256] OpenSSL init failed");
}

Sha256::~Sha256() { EVP_MD_CTX_free(state_->ctx); }

void Sha256::update(std::span<const uint8_t> bytes) {
  KILN_CHECK(EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size()) == 1, "[sha256] update failed");
}

std::string Sha256::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  KILN_CHECK(EVP_DigestFinal_ex(state_->ctx, md, &len) == 1, "[sha256] final failed");
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += digits[md[i] >> 4];
    out += digits[md[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::span<const uint8_t> bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex_digest();
}

std::string sha256_file_hex(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  KILN_CHECK(f, "[sha256] cannot open {}", path);
  Sha256 h;
  std::vector<uint8_t> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) h.update({buf.data(), n});
  std::fclose(f);
  return h.hex_digest();
}

}  // namespace kiln
