// Base64 (RFC 4648, with padding) for binary files carried in a bundle's JSON manifest, such
// as a tokenizer's SentencePiece model. OpenSSL does the coding; decoding checks its input.
#pragma once

#include <string>
#include <string_view>

namespace kiln {

std::string base64_encode(std::string_view bytes);
// Throws kiln::Error naming `what` for text that is not padded base64.
std::string base64_decode(std::string_view text, const std::string& what);

}  // namespace kiln
