// The Open Inference Protocol's JSON body for infer requests and responses, with Triton's binary
// tensor data extension: a body whose first Inference-Header-Content-Length bytes are the JSON,
// followed by the raw tensors the JSON gives a "binary_data_size" to, in order. Bodies come from
// the network: every size and count is checked before use (fuzz/serve_request_fuzz.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "serve/infer.h"

namespace kiln::serve {

// header_length: the Inference-Header-Content-Length header (nullopt: the whole body is JSON).
// Throws ServeError(BadRequest) naming what is wrong.
InferRequest parse_infer_request(std::string_view body, std::optional<size_t> header_length);

// The response body; *header_length is set when some output went out as binary data (then the
// caller sends Inference-Header-Content-Length), else nullopt.
std::string encode_infer_response(const InferResponse& response, const InferRequest& request,
                                  std::optional<size_t>* header_length);

// A tensor's elements as binary data (the binary tensor extension, gRPC's raw contents):
// fixed-size datatypes as little-endian bytes, BYTES as each element's 4-byte little-endian
// length followed by the element. fill_from_binary checks the size against t's shape and
// datatype; `what` names the tensor in errors.
void fill_from_binary(InferTensor& t, std::string_view bytes, const std::string& what);
std::string binary_data(const InferTensor& t);

}  // namespace kiln::serve
