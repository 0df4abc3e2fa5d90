// The Open Inference Protocol's JSON and binary request bodies: what parses, to what, and the
// one-line errors for everything else.
#include <gtest/gtest.h>

#include <cstring>

#include "serve/infer_json.h"

namespace kiln::serve {
namespace {

std::string parse_error(std::string_view body, std::optional<size_t> header = std::nullopt) {
  try {
    parse_infer_request(body, header);
  } catch (const ServeError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadRequest);
    return e.what();
  }
  return "";
}

template <typename T>
std::vector<T> values(const InferTensor& t) {
  std::vector<T> out(t.data.size() / sizeof(T));
  std::memcpy(out.data(), t.data.data(), t.data.size());
  return out;
}

std::string le32(uint32_t n) { return std::string(reinterpret_cast<const char*>(&n), 4); }

// The specification's example request (its BOOL input given as many elements as its shape says).
TEST(InferJson, ParsesTheSpecificationsExample) {
  auto r = parse_infer_request(R"({"id": "42",
    "inputs": [{"name": "input0", "shape": [2, 2], "datatype": "UINT32", "data": [1, 2, 3, 4]},
               {"name": "input1", "shape": [3], "datatype": "BOOL", "data": [true, false, true]}],
    "outputs": [{"name": "output0"}]})",
                               std::nullopt);
  EXPECT_EQ(r.id, "42");
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values<uint32_t>(r.inputs[0]), (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(r.inputs[1].data, (std::vector<uint8_t>{1, 0, 1}));
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].name, "output0");
  EXPECT_FALSE(r.outputs[0].binary_data.has_value());
  // As printed in the specification, input1 has one element for a shape of three: refused.
  EXPECT_EQ(parse_error(R"({"inputs": [{"name": "input1", "shape": [3], "datatype": "BOOL", "data": [true]}]})"),
            "input 'input1': \"data\" holds 1 elements, the shape 3");
}

TEST(InferJson, NestedDataIsRowMajorAndNumbersConvert) {
  auto r = parse_infer_request(
      R"({"inputs": [{"name": "x", "shape": [2, 3], "datatype": "FP32", "data": [[1, 2, 3], [4, 5, 6.5]]},
                     {"name": "h", "shape": [2], "datatype": "FP16", "data": [1.5, -2]},
                     {"name": "i", "shape": [2], "datatype": "INT64", "data": [-9007199254740993, 7]},
                     {"name": "s", "shape": [2], "datatype": "BYTES", "data": ["ab", "ü"]}],
          "parameters": {"binary_data_output": true}})",
      std::nullopt);
  EXPECT_EQ(values<float>(r.inputs[0]), (std::vector<float>{1, 2, 3, 4, 5, 6.5f}));
  EXPECT_EQ(values<uint16_t>(r.inputs[1]), (std::vector<uint16_t>{0x3E00, 0xC000}));
  EXPECT_EQ(values<int64_t>(r.inputs[2]), (std::vector<int64_t>{-9007199254740993, 7}));
  EXPECT_EQ(r.inputs[3].strings, (std::vector<std::string>{"ab", "ü"}));
  EXPECT_TRUE(r.binary_data_output);
}

TEST(InferJson, BinaryTensorsFollowTheJson) {
  float x[3] = {0.25f, -1, 3};
  std::string header =
      R"({"inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "parameters": {"binary_data_size": 12}},
                     {"name": "b", "shape": [2], "datatype": "BYTES", "parameters": {"binary_data_size": 13}}],
          "outputs": [{"name": "y", "parameters": {"binary_data": true, "classification": 5}}]})";
  std::string body = header + std::string(reinterpret_cast<const char*>(x), 12) + le32(2) + "hi" + le32(3) + "abc";
  auto r = parse_infer_request(body, header.size());
  EXPECT_EQ(values<float>(r.inputs[0]), (std::vector<float>{0.25f, -1, 3}));
  EXPECT_EQ(r.inputs[1].strings, (std::vector<std::string>{"hi", "abc"}));
  EXPECT_EQ(r.outputs[0].binary_data, true);
  EXPECT_EQ(r.outputs[0].classification, 5);
  EXPECT_TRUE(r.inputs[0].parameters.empty());  // binary_data_size is consumed

  EXPECT_EQ(parse_error(body, header.size() - 1), "the request body is not valid JSON");
  EXPECT_EQ(parse_error(body.substr(0, body.size() - 1), header.size()),
            "input 'b': binary_data_size runs past the end of the body");
  EXPECT_EQ(parse_error(body + "x", header.size()), "the body has binary data that no input claims");
  EXPECT_EQ(parse_error(body, body.size() + 1), "Inference-Header-Content-Length is larger than the body");
}

TEST(InferJson, MalformedRequestsSayWhatIsWrong) {
  EXPECT_EQ(parse_error("{"), "the request body is not valid JSON");
  EXPECT_EQ(parse_error("[]"), "the request body must be a JSON object");
  EXPECT_EQ(parse_error("{}"), "the request has no \"inputs\" array");
  EXPECT_EQ(parse_error(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP33", "data": [1]}]})"),
            "input 'x': unknown datatype 'FP33'");
  EXPECT_EQ(parse_error(R"({"inputs": [{"name": "x", "shape": [-1], "datatype": "FP32", "data": [1]}]})"),
            "input 'x': \"shape\" sizes must be non-negative integers");
  EXPECT_EQ(parse_error(R"({"inputs": [{"name": "x", "shape": [4294967296, 4294967296, 4294967296],
                           "datatype": "FP32", "data": []}]})"),
            "input 'x': the shape's element count overflows");
  EXPECT_EQ(parse_error(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "INT8", "data": [300]}]})"),
            "input 'x': an element is not an integer of the tensor's datatype");
  EXPECT_EQ(parse_error(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "UINT8", "data": [-1]}]})"),
            "input 'x': an element is not an integer of the tensor's datatype");
  EXPECT_EQ(parse_error(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": ["1"]}]})"),
            "input 'x': FP32 elements must be numbers");
  EXPECT_EQ(parse_error(R"({"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1, 2, 3]}]})"),
            "input 'x': \"data\" holds more elements than the shape");
  EXPECT_EQ(parse_error(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]},
                                       {"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]})"),
            "input 'x' is given twice");
  EXPECT_EQ(parse_error(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32",
                           "parameters": {"binary_data_size": 4}}]})"),
            "input 'x': binary_data_size runs past the end of the body");
  EXPECT_EQ(parse_error(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}],
                           "outputs": [{"name": "y", "parameters": {"classification": 0}}]})"),
            "output 0: classification must be a positive integer");
  EXPECT_EQ(parse_error(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}],
                           "outputs": [{"name": "y"}, {"name": "y"}]})"),
            "output 'y' is asked for twice");
  // Deep nesting anywhere is refused while parsing (copying such a value would recurse per level).
  EXPECT_EQ(parse_error(R"({"parameters": {"a": )" + std::string(100000, '[') + std::string(100000, ']') + "}}"),
            "the request body is nested too deeply");
  std::string deep(20, '[');
  EXPECT_EQ(parse_error(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": )" + deep +
                        std::string(20, ']') + "}]}"),
            "input 'x': \"data\" is nested too deeply");
}

TEST(InferJson, ResponsesAreJsonOrBinaryAsAsked) {
  float y[2] = {0.1f, 3e-8f};
  InferTensor t{"y",    "FP32",
                {1, 2}, std::vector<uint8_t>(reinterpret_cast<uint8_t*>(y), reinterpret_cast<uint8_t*>(y) + 8),
                {},     nlohmann::json::object()};
  InferTensor s{"s", "BYTES", {1}, {}, {"ok"}, nlohmann::json::object()};
  InferResponse response{"m", "2", "7", {t, s}};
  InferRequest as_json;
  std::optional<size_t> length;
  auto body = encode_infer_response(response, as_json, &length);
  EXPECT_FALSE(length);
  auto j = nlohmann::json::parse(body);
  EXPECT_EQ(j["model_name"], "m");
  EXPECT_EQ(j["model_version"], "2");
  EXPECT_EQ(j["id"], "7");
  EXPECT_EQ(j["outputs"][0]["shape"], (std::vector<int64_t>{1, 2}));
  // Floats come back bit for bit.
  EXPECT_EQ(j["outputs"][0]["data"][0].get<float>(), 0.1f);
  EXPECT_EQ(j["outputs"][0]["data"][1].get<float>(), 3e-8f);
  EXPECT_EQ(j["outputs"][1]["data"][0], "ok");

  // Per output, or for every output not saying otherwise.
  InferRequest binary;
  binary.binary_data_output = true;
  binary.outputs = {{"y", std::nullopt, 0}, {"s", true, 0}};
  body = encode_infer_response(response, binary, &length);
  ASSERT_TRUE(length);
  auto head = nlohmann::json::parse(body.substr(0, *length));
  EXPECT_EQ(head["outputs"][0]["parameters"]["binary_data_size"], 8);
  EXPECT_EQ(head["outputs"][1]["parameters"]["binary_data_size"], 6);
  EXPECT_EQ(body.substr(*length), std::string(reinterpret_cast<const char*>(y), 8) + le32(2) + "ok");
  binary.outputs[0].binary_data = false;
  body = encode_infer_response(response, binary, &length);
  head = nlohmann::json::parse(body.substr(0, *length));
  EXPECT_EQ(head["outputs"][0]["data"][0].get<float>(), 0.1f);
  // BYTES that are not UTF-8 cannot be JSON strings: U+FFFD stands in, binary data keeps them.
  InferResponse raw{"m", "2", "", {InferTensor{"s", "BYTES", {1}, {}, {"a\xff"}, nlohmann::json::object()}}};
  EXPECT_EQ(nlohmann::json::parse(encode_infer_response(raw, as_json, &length))["outputs"][0]["data"][0],
            "a\xef\xbf\xbd");
}

}  // namespace
}  // namespace kiln::serve
