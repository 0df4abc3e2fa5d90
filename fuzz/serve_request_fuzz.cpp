// libFuzzer target: an inference request body as it comes off the network (the first byte picks
// whether an Inference-Header-Content-Length header splits it into JSON and binary tensors, and
// where). Any input must parse or give a ServeError; responses encode again.
#include <cstdint>
#include <string_view>

#include "serve/infer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::optional<size_t> header;
  if (data[0] & 1) header = static_cast<size_t>(data[0] >> 1) * body.size() / 127;
  try {
    kiln::serve::InferRequest r = kiln::serve::parse_infer_request(body, header);
    kiln::serve::InferResponse response{"m", "1", r.id, r.inputs};
    std::optional<size_t> length;
    kiln::serve::encode_infer_response(response, r, &length);
  } catch (const kiln::serve::ServeError&) {
  }
  return 0;
}
