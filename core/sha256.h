// SHA-256 through OpenSSL: bundle manifest checksums, Hub download verification, provenance.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace kiln {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  void update(std::span<const uint8_t> bytes);
  std::string hex_digest();  // finishes the hash

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::string sha256_hex(std::span<const uint8_t> bytes);
std::string sha256_file_hex(const std::string& path);

}  // namespace kiln
