#include "serve/infer_json.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/checked_math.h"
#include "core/half.h"

namespace kiln::serve {

std::optional<size_t> datatype_size(const std::string& t) {
  static const std::pair<const char*, size_t> kSizes[] = {
      {"BOOL", 1},  {"UINT8", 1}, {"UINT16", 2}, {"UINT32", 4}, {"UINT64", 8}, {"INT8", 1}, {"INT16", 2},
      {"INT32", 4}, {"INT64", 8}, {"FP16", 2},   {"BF16", 2},   {"FP32", 4},   {"FP64", 8}, {"BYTES", 0}};
  for (const auto& [name, size] : kSizes)
    if (t == name) return size;
  return std::nullopt;
}

namespace {

constexpr size_t kMaxRank = 16;

using json = nlohmann::json;

// Reads the binary section front to back.
struct BinaryReader {
  std::string_view rest;
  std::string_view take(uint64_t n, const std::string& what) {
    if (n > rest.size()) bad_request(what + ": binary_data_size runs past the end of the body");
    auto out = rest.substr(0, n);
    rest.remove_prefix(n);
    return out;
  }
};

std::vector<int64_t> parse_shape(const json& j, const std::string& what) {
  if (!j.is_array() || j.size() > kMaxRank) bad_request(what + ": \"shape\" must be an array of at most 16 sizes");
  std::vector<int64_t> shape;
  for (const auto& d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      bad_request(what + ": \"shape\" sizes must be non-negative integers");
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

uint64_t numel_of(const std::vector<int64_t>& shape, const std::string& what) {
  try {
    return checked_numel(shape, what.c_str());
  } catch (const std::exception&) {
    bad_request(what + ": the shape's element count overflows");
  }
}

// Flattens the row-major nested "data" arrays the protocol allows.
void flatten(const json& j, std::vector<const json*>& out, size_t limit, int depth, const std::string& what) {
  if (depth > static_cast<int>(kMaxRank)) bad_request(what + ": \"data\" is nested too deeply");
  if (!j.is_array()) {
    if (out.size() >= limit) bad_request(what + ": \"data\" holds more elements than the shape");
    out.push_back(&j);
    return;
  }
  for (const auto& e : j) flatten(e, out, limit, depth + 1, what);
}

template <typename T>
void put(std::vector<uint8_t>& data, size_t i, T v) {
  std::memcpy(data.data() + i * sizeof(T), &v, sizeof(T));
}

template <typename T>
void put_integer(std::vector<uint8_t>& data, size_t i, const json& e, const std::string& what) {
  bool ok = e.is_number_integer();
  if (ok && e.is_number_unsigned())
    ok = e.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  else if (ok)
    ok = e.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
         (std::is_signed_v<T> || e.get<int64_t>() >= 0) &&
         (sizeof(T) == 8 || e.get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max()));
  if (!ok) bad_request(what + ": an element is not an integer of the tensor's datatype");
  if (e.is_number_unsigned())
    put<T>(data, i, static_cast<T>(e.get<uint64_t>()));
  else
    put<T>(data, i, static_cast<T>(e.get<int64_t>()));
}

void fill_from_json(InferTensor& t, const json& data, uint64_t numel, const std::string& what) {
  std::vector<const json*> flat;
  flatten(data, flat, numel, 0, what);
  if (flat.size() != numel)
    bad_request(what + ": \"data\" holds " + std::to_string(flat.size()) + " elements, the shape " +
                std::to_string(numel));
  const std::string& dt = t.datatype;
  if (dt == "BYTES") {
    for (const json* e : flat) {
      if (!e->is_string()) bad_request(what + ": BYTES elements must be strings");
      t.strings.push_back(e->get<std::string>());
    }
    return;
  }
  t.data.resize(numel * *datatype_size(dt));
  for (size_t i = 0; i < flat.size(); ++i) {
    const json& e = *flat[i];
    if (dt == "BOOL") {
      if (!e.is_boolean()) bad_request(what + ": BOOL elements must be true or false");
      t.data[i] = e.get<bool>() ? 1 : 0;
    } else if (dt == "FP32" || dt == "FP64" || dt == "FP16" || dt == "BF16") {
      if (!e.is_number()) bad_request(what + ": " + dt + " elements must be numbers");
      double v = e.get<double>();
      if (dt == "FP32") put<float>(t.data, i, static_cast<float>(v));
      if (dt == "FP64") put<double>(t.data, i, v);
      if (dt == "FP16") put<uint16_t>(t.data, i, float_to_half(static_cast<float>(v)));
      if (dt == "BF16") bad_request(what + ": BF16 data must come as binary data");
    } else if (dt == "UINT8") {
      put_integer<uint8_t>(t.data, i, e, what);
    } else if (dt == "UINT16") {
      put_integer<uint16_t>(t.data, i, e, what);
    } else if (dt == "UINT32") {
      put_integer<uint32_t>(t.data, i, e, what);
    } else if (dt == "UINT64") {
      put_integer<uint64_t>(t.data, i, e, what);
    } else if (dt == "INT8") {
      put_integer<int8_t>(t.data, i, e, what);
    } else if (dt == "INT16") {
      put_integer<int16_t>(t.data, i, e, what);
    } else if (dt == "INT32") {
      put_integer<int32_t>(t.data, i, e, what);
    } else {
      put_integer<int64_t>(t.data, i, e, what);
    }
  }
}

// BYTES as binary data: each element a 4-byte little-endian length and that many bytes.
void fill_strings_from_binary(InferTensor& t, std::string_view bytes, uint64_t numel, const std::string& what) {
  while (!bytes.empty()) {
    if (bytes.size() < 4) bad_request(what + ": a BYTES element's length is cut off");
    uint32_t n;
    std::memcpy(&n, bytes.data(), 4);
    bytes.remove_prefix(4);
    if (n > bytes.size()) bad_request(what + ": a BYTES element runs past its binary data");
    if (t.strings.size() >= numel) bad_request(what + ": the binary data holds more elements than the shape");
    t.strings.emplace_back(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
  if (t.strings.size() != numel)
    bad_request(what + ": the binary data holds " + std::to_string(t.strings.size()) + " elements, the shape " +
                std::to_string(numel));
}

const json& object_or_empty(const json& parent, const char* key, const std::string& what) {
  static const json empty = json::object();
  auto it = parent.find(key);
  if (it == parent.end()) return empty;
  if (!it->is_object()) bad_request(what + ": \"" + key + "\" must be an object");
  return *it;
}

InferTensor parse_input(const json& j, BinaryReader& binary, size_t index) {
  std::string what = "input " + std::to_string(index);
  if (!j.is_object()) bad_request(what + " must be an object");
  InferTensor t;
  if (!j.contains("name") || !j["name"].is_string()) bad_request(what + " has no \"name\" string");
  t.name = j["name"].get<std::string>();
  what = "input '" + t.name + "'";
  if (!j.contains("datatype") || !j["datatype"].is_string()) bad_request(what + " has no \"datatype\" string");
  t.datatype = j["datatype"].get<std::string>();
  auto size = datatype_size(t.datatype);
  if (!size) bad_request(what + ": unknown datatype '" + t.datatype + "'");
  if (!j.contains("shape")) bad_request(what + " has no \"shape\"");
  t.shape = parse_shape(j["shape"], what);
  uint64_t numel = numel_of(t.shape, what);
  t.parameters = object_or_empty(j, "parameters", what);
  if (auto it = t.parameters.find("binary_data_size"); it != t.parameters.end()) {
    if (!it->is_number_unsigned()) bad_request(what + ": binary_data_size must be a non-negative integer");
    if (j.contains("data")) bad_request(what + " has both \"data\" and binary_data_size");
    fill_from_binary(t, binary.take(it->get<uint64_t>(), what), what);
    t.parameters.erase("binary_data_size");
  } else {
    if (!j.contains("data")) bad_request(what + " has neither \"data\" nor binary_data_size");
    fill_from_json(t, j["data"], numel, what);
  }
  return t;
}

RequestedOutput parse_output(const json& j, size_t index) {
  std::string what = "output " + std::to_string(index);
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string())
    bad_request(what + " must be an object with a \"name\" string");
  RequestedOutput o;
  o.name = j["name"].get<std::string>();
  const json& p = object_or_empty(j, "parameters", what);
  if (auto it = p.find("binary_data"); it != p.end()) {
    if (!it->is_boolean()) bad_request(what + ": binary_data must be true or false");
    o.binary_data = it->get<bool>();
  }
  if (auto it = p.find("classification"); it != p.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 1000000)
      bad_request(what + ": classification must be a positive integer");
    o.classification = static_cast<int>(it->get<int64_t>());
  }
  return o;
}

}  // namespace

void fill_from_binary(InferTensor& t, std::string_view bytes, const std::string& what) {
  const uint64_t numel = numel_of(t.shape, what);
  if (t.datatype == "BYTES") return fill_strings_from_binary(t, bytes, numel, what);
  const size_t size = datatype_size(t.datatype).value();
  uint64_t expected;
  if (__builtin_mul_overflow(numel, size, &expected) || expected != bytes.size())
    bad_request(what + ": the binary data is " + std::to_string(bytes.size()) + " bytes, the shape and datatype need " +
                std::to_string(numel) + " x " + std::to_string(size));
  t.data.assign(bytes.begin(), bytes.end());
}

InferRequest parse_infer_request(std::string_view body, std::optional<size_t> header_length) {
  size_t json_length = header_length.value_or(body.size());
  if (json_length > body.size()) bad_request("Inference-Header-Content-Length is larger than the body");
  // Nesting is bounded while parsing: copying a json value recurses once per level.
  const json::parser_callback_t depth_limit = [](int depth, json::parse_event_t, json&) {
    if (depth > static_cast<int>(kMaxRank) + 8) bad_request("the request body is nested too deeply");
    return true;
  };
  json j = json::parse(body.substr(0, json_length), depth_limit, false);
  if (j.is_discarded()) bad_request("the request body is not valid JSON");
  if (!j.is_object()) bad_request("the request body must be a JSON object");
  InferRequest r;
  if (auto it = j.find("id"); it != j.end()) {
    if (!it->is_string()) bad_request("\"id\" must be a string");
    r.id = it->get<std::string>();
  }
  r.parameters = object_or_empty(j, "parameters", "the request");
  if (auto it = r.parameters.find("binary_data_output"); it != r.parameters.end()) {
    if (!it->is_boolean()) bad_request("binary_data_output must be true or false");
    r.binary_data_output = it->get<bool>();
  }
  auto inputs = j.find("inputs");
  if (inputs == j.end() || !inputs->is_array() || inputs->empty()) bad_request("the request has no \"inputs\" array");
  BinaryReader binary{body.substr(json_length)};
  for (size_t i = 0; i < inputs->size(); ++i) {
    InferTensor t = parse_input((*inputs)[i], binary, i);
    if (r.input(t.name)) bad_request("input '" + t.name + "' is given twice");
    r.inputs.push_back(std::move(t));
  }
  if (!binary.rest.empty()) bad_request("the body has binary data that no input claims");
  if (auto outputs = j.find("outputs"); outputs != j.end()) {
    if (!outputs->is_array()) bad_request("\"outputs\" must be an array");
    for (size_t i = 0; i < outputs->size(); ++i) {
      RequestedOutput o = parse_output((*outputs)[i], i);
      for (const auto& seen : r.outputs)
        if (seen.name == o.name) bad_request("output '" + o.name + "' is asked for twice");
      r.outputs.push_back(std::move(o));
    }
  }
  return r;
}

namespace {

template <typename T>
void append_numbers(json& out, const std::vector<uint8_t>& data) {
  size_t n = data.size() / sizeof(T);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, data.data() + i * sizeof(T), sizeof(T));
    out.push_back(v);
  }
}

json json_data(const InferTensor& t) {
  json out = json::array();
  const std::string& dt = t.datatype;
  if (dt == "BYTES") {
    for (const auto& s : t.strings) out.push_back(s);
  } else if (dt == "BOOL") {
    for (uint8_t b : t.data) out.push_back(b != 0);
  } else if (dt == "FP32") {
    append_numbers<float>(out, t.data);
  } else if (dt == "FP64") {
    append_numbers<double>(out, t.data);
  } else if (dt == "FP16") {
    for (size_t i = 0; i + 1 < t.data.size(); i += 2) {
      uint16_t h;
      std::memcpy(&h, t.data.data() + i, 2);
      out.push_back(half_to_float(h));
    }
  } else if (dt == "BF16") {
    for (size_t i = 0; i + 1 < t.data.size(); i += 2) {
      uint16_t h;
      std::memcpy(&h, t.data.data() + i, 2);
      out.push_back(bf16_to_float(h));
    }
  } else if (dt == "INT8") {
    append_numbers<int8_t>(out, t.data);
  } else if (dt == "INT16") {
    append_numbers<int16_t>(out, t.data);
  } else if (dt == "INT32") {
    append_numbers<int32_t>(out, t.data);
  } else if (dt == "INT64") {
    append_numbers<int64_t>(out, t.data);
  } else if (dt == "UINT8") {
    append_numbers<uint8_t>(out, t.data);
  } else if (dt == "UINT16") {
    append_numbers<uint16_t>(out, t.data);
  } else if (dt == "UINT32") {
    append_numbers<uint32_t>(out, t.data);
  } else {
    append_numbers<uint64_t>(out, t.data);
  }
  return out;
}

}  // namespace

std::string binary_data(const InferTensor& t) {
  if (t.datatype != "BYTES") return std::string(t.data.begin(), t.data.end());
  std::string out;
  for (const auto& s : t.strings) {
    uint32_t n = static_cast<uint32_t>(s.size());
    out.append(reinterpret_cast<const char*>(&n), 4);
    out += s;
  }
  return out;
}

std::string encode_infer_response(const InferResponse& response, const InferRequest& request,
                                  std::optional<size_t>* header_length) {
  json j = {{"model_name", response.model_name}, {"outputs", json::array()}};
  if (!response.model_version.empty()) j["model_version"] = response.model_version;
  if (!response.id.empty()) j["id"] = response.id;
  std::string binary;
  bool any_binary = false;
  for (const auto& t : response.outputs) {
    bool as_binary = request.binary_data_output;
    for (const auto& o : request.outputs)
      if (o.name == t.name) as_binary = o.binary_data.value_or(request.binary_data_output);
    json o = {{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}};
    if (as_binary) {
      any_binary = true;
      std::string bytes = binary_data(t);
      o["parameters"] = {{"binary_data_size", bytes.size()}};
      binary += bytes;
    } else {
      o["data"] = json_data(t);
    }
    j["outputs"].push_back(std::move(o));
  }
  // BYTES outputs that are not UTF-8 go out with U+FFFD in JSON; binary data carries them as they are.
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  *header_length = std::nullopt;
  if (any_binary) {
    *header_length = text.size();
    text += binary;
  }
  return text;
}

}  // namespace kiln::serve
