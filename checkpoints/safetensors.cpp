#include "checkpoints/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "core/checked_math.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/half.h"

namespace kiln {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the format's own limit is 100 MB

struct DtypeDesc {
  const char* name;
  StDtype dtype;
  uint64_t size;
};
constexpr DtypeDesc kDtypes[] = {
    {"F32", StDtype::F32, 4}, {"F16", StDtype::F16, 2}, {"BF16", StDtype::BF16, 2},
    {"F64", StDtype::F64, 8}, {"I64", StDtype::I64, 8}, {"I32", StDtype::I32, 4},
    {"U8", StDtype::U8, 1},   {"I8", StDtype::I8, 1},   {"BOOL", StDtype::BOOL, 1},
};

uint64_t dtype_size(StDtype d) {
  for (const auto& e : kDtypes)
    if (e.dtype == d) return e.size;
  return 0;
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : name_(path) {
  file_ = std::make_unique<MappedFile>(path);
  parse(file_->bytes());
}

SafetensorsFile SafetensorsFile::from_bytes(std::span<const uint8_t> bytes, const std::string& name) {
  SafetensorsFile f;
  f.name_ = name;
  f.parse(bytes);
  return f;
}

void SafetensorsFile::parse(std::span<const uint8_t> bytes) {
  KILN_CHECK(bytes.size() >= 8, "[safetensors] {}: file is {} bytes, too short for a header", name_, bytes.size());
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);  // little-endian on every platform kiln targets
  KILN_CHECK(header_len <= kMaxHeaderBytes, "[safetensors] {}: header size {} is over the 100 MB limit", name_,
             header_len);
  KILN_CHECK(header_len <= bytes.size() - 8,
             "[safetensors] {}: header ({} bytes) runs past the end of the file ({} bytes); the file is truncated",
             name_, header_len, bytes.size());
  const char* hdr = reinterpret_cast<const char*>(bytes.data() + 8);
  nlohmann::json j = nlohmann::json::parse(hdr, hdr + header_len, nullptr, false);
  KILN_CHECK(!j.is_discarded() && j.is_object(), "[safetensors] {}: header is not a JSON object", name_);
  data_ = bytes.subspan(8 + header_len);

  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      KILN_CHECK(value.is_object(), "[safetensors] {}: __metadata__ is not an object", name_);
      for (auto& [mk, mv] : value.items())
        if (mv.is_string()) metadata_[mk] = mv.get<std::string>();
      continue;
    }
    KILN_CHECK(
        value.is_object() && value.contains("dtype") && value.contains("shape") && value.contains("data_offsets"),
        "[safetensors] {}: entry '{}' lacks dtype, shape or data_offsets", name_, key);
    const auto& jd = value["dtype"];
    const auto& js = value["shape"];
    const auto& jo = value["data_offsets"];
    KILN_CHECK(jd.is_string() && js.is_array() && jo.is_array() && jo.size() == 2,
               "[safetensors] {}: entry '{}' is malformed", name_, key);
    StTensorInfo info{};
    std::string dname = jd.get<std::string>();
    bool known = false;
    for (const auto& e : kDtypes)
      if (dname == e.name) {
        info.dtype = e.dtype;
        known = true;
      }
    KILN_CHECK(known, "[safetensors] {}: tensor '{}' has unsupported dtype {}", name_, key, dname);
    KILN_CHECK(js.size() <= 8, "[safetensors] {}: tensor '{}' has {} dimensions", name_, key, js.size());
    for (const auto& d : js) {
      KILN_CHECK(d.is_number_unsigned(), "[safetensors] {}: tensor '{}' has a bad dimension", name_, key);
      info.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(d.get<uint64_t>(), INT64_MAX)));
    }
    KILN_CHECK(jo[0].is_number_unsigned() && jo[1].is_number_unsigned(),
               "[safetensors] {}: tensor '{}' has bad data_offsets", name_, key);
    info.begin = jo[0].get<uint64_t>();
    info.end = jo[1].get<uint64_t>();
    KILN_CHECK(info.begin <= info.end, "[safetensors] {}: tensor '{}' ends before it begins", name_, key);
    KILN_CHECK(info.end <= data_.size(),
               "[safetensors] {}: tensor '{}' ends at byte {} past the data section ({} bytes); the file is truncated",
               name_, key, info.end, data_.size());
    uint64_t expect = checked_mul(checked_numel(info.shape, "tensor shape"), dtype_size(info.dtype), "tensor bytes");
    KILN_CHECK(expect == info.end - info.begin,
               "[safetensors] {}: tensor '{}' has {} bytes but its shape and dtype need {}", name_, key,
               info.end - info.begin, expect);
    ranges.emplace_back(info.begin, info.end);
    tensors_.emplace(key, std::move(info));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    KILN_CHECK(ranges[i].first >= ranges[i - 1].second, "[safetensors] {}: tensors overlap", name_);
}

const StTensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = tensors_.find(name);
  KILN_CHECK(it != tensors_.end(), "[safetensors] {}: no tensor named '{}'", name_, name);
  return it->second;
}

std::span<const uint8_t> SafetensorsFile::raw(const std::string& name) const {
  const auto& i = info(name);
  return data_.subspan(i.begin, i.end - i.begin);
}

HostTensor SafetensorsFile::to_host(const std::string& name) const {
  const StTensorInfo& i = info(name);
  static const std::pair<StDtype, DType> kTypes[] = {{StDtype::F32, DType::F32},   {StDtype::F16, DType::F16},
                                                     {StDtype::BF16, DType::BF16}, {StDtype::I32, DType::I32},
                                                     {StDtype::I64, DType::I64},   {StDtype::BOOL, DType::Bool}};
  for (const auto& [st, dt] : kTypes) {
    if (st != i.dtype) continue;
    HostTensor t = HostTensor::zeros(name, dt, i.shape);
    const auto bytes = raw(name);
    KILN_CHECK(bytes.size() == t.data.size(), "[safetensors] {}: tensor '{}' has {} bytes for its shape", name_, name,
               bytes.size());
    std::memcpy(t.data.data(), bytes.data(), bytes.size());
    return t;
  }
  fail("[safetensors] {}: tensor '{}' has an element type kiln does not compute with", name_, name);
}

Tensor SafetensorsFile::to_float(const std::string& name) const {
  const auto& i = info(name);
  auto bytes = raw(name);
  Tensor t;
  t.shape = i.shape;
  size_t n = checked_numel(i.shape, "tensor");
  t.data.resize(n);
  const uint8_t* p = bytes.data();
  switch (i.dtype) {
    case StDtype::F32:
      std::memcpy(t.data.data(), p, n * 4);
      break;
    case StDtype::F64:
      for (size_t k = 0; k < n; ++k) {
        double v;
        std::memcpy(&v, p + 8 * k, 8);
        t.data[k] = static_cast<float>(v);
      }
      break;
    case StDtype::F16:
    case StDtype::BF16:
      for (size_t k = 0; k < n; ++k) {
        uint16_t v;
        std::memcpy(&v, p + 2 * k, 2);
        t.data[k] = i.dtype == StDtype::F16 ? half_to_float(v) : bf16_to_float(v);
      }
      break;
    default:
      fail("[safetensors] {}: tensor '{}' is not floating point", name_, name);
  }
  return t;
}

}  // namespace kiln

namespace kiln {

void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors) {
  std::vector<HostTensor> host;
  for (const auto& [name, t] : tensors) host.push_back(HostTensor::from_f32(name, t.shape, t.data));
  write_safetensors(path, host);
}

void write_safetensors(const std::string& path, const std::vector<HostTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    KILN_CHECK(t.dtype != DType::F8E4M3, "[safetensors] {}: F8_E4M3 is not written", t.name);
    KILN_CHECK(!header.contains(t.name), "[safetensors] two tensors are named '{}'", t.name);
    const uint64_t size = t.data.size();
    header[t.name] = {{"dtype", storage_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string h = header.dump();
  h.resize((h.size() + 7) / 8 * 8, ' ');  // keep the data 8-byte aligned, as the format recommends
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  KILN_CHECK(out.good(), "[safetensors] cannot write {}", path);
  uint64_t n = h.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(h.data(), h.size());
  for (const auto& t : tensors) out.write(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  KILN_CHECK(out.good(), "[safetensors] write to {} failed", path);
}

}  // namespace kiln
