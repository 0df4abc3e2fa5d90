#include "core/base64.h"

#include <openssl/evp.h>

#include <algorithm>

#include "core/error.h"

namespace kiln {

std::string base64_encode(std::string_view bytes) {
  KILN_CHECK(bytes.size() < (size_t{1} << 30), "[base64] {} bytes are too many to encode", bytes.size());
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string base64_decode(std::string_view text, const std::string& what) {
  KILN_CHECK(text.size() % 4 == 0 && text.size() < (size_t{1} << 31), "[base64] {} is not padded base64", what);
  const bool alphabet = std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' ||
           c == '=';
  });
  KILN_CHECK(alphabet, "[base64] {} has characters outside base64", what);
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  KILN_CHECK(n >= 0, "[base64] {} is not valid base64", what);
  // EVP_DecodeBlock counts the bytes '=' padding stands for; they are not data.
  size_t pad = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '=' && pad < 2; --i) ++pad;
  KILN_CHECK(static_cast<size_t>(n) >= pad, "[base64] {} is not valid base64", what);
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

}  // namespace kiln
