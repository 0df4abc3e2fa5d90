// The Open Inference Protocol's (KServe v2) requests and responses, independent of the wire: the
// HTTP/JSON front end makes them from a body and writes them back; servables and the batcher see
// only these types.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::serve {

// A tensor of a request or response. Fixed-size datatypes keep their elements as little-endian
// bytes in `data`; BYTES tensors keep one string per element in `strings`.
struct InferTensor {
  std::string name;
  std::string datatype;  // "FP32", "INT64", "BYTES", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
  std::vector<std::string> strings;
  nlohmann::json parameters = nlohmann::json::object();
};

// An output a request asks for: binary_data (Triton's binary tensor extension; unset: the
// request's binary_data_output) and classification (the classification extension: the top k as
// "value:index:label" strings).
struct RequestedOutput {
  std::string name;
  std::optional<bool> binary_data;
  int classification = 0;
};

struct InferRequest {
  std::string id;
  std::vector<InferTensor> inputs;
  std::vector<RequestedOutput> outputs;  // empty: every output, as JSON
  bool binary_data_output = false;       // the request's "binary_data_output" parameter
  nlohmann::json parameters = nlohmann::json::object();

  const InferTensor* input(const std::string& name) const {
    for (const auto& t : inputs)
      if (t.name == name) return &t;
    return nullptr;
  }
};

struct InferResponse {
  std::string model_name, model_version, id;
  std::vector<InferTensor> outputs;
};

// How a request failed, which each front end maps to its status codes.
enum class ErrorKind { BadRequest, NotFound, Unavailable, Overloaded, Timeout, Internal };

class ServeError : public std::runtime_error {
 public:
  ServeError(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void bad_request(const std::string& message) { throw ServeError(ErrorKind::BadRequest, message); }

// The element size of a fixed-size datatype, 0 for BYTES; nullopt for a name the protocol does
// not define.
std::optional<size_t> datatype_size(const std::string& datatype);

}  // namespace kiln::serve
