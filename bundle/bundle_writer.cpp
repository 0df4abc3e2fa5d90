#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>

#include "bundle/bundle.h"
#include "bundle/checksum.h"
#include "bundle/format.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/fp8.h"
#include "core/sha256.h"

namespace kiln {

namespace {

uint64_t align_up(uint64_t v) { return (v + bundle::kAlignment - 1) / bundle::kAlignment * bundle::kAlignment; }

template <typename T>
void put(std::vector<uint8_t>& buf, int offset, T value) {
  std::memcpy(buf.data() + offset, &value, sizeof(T));
}

void put_hex_digest(std::vector<uint8_t>& buf, int offset, const std::string& hex) {
  for (size_t i = 0; i < 32; ++i) buf[offset + i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char out[32];
  std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return out;
}

// How a weight is stored: E4M3 bytes for an FP8 layer's weight, integers for integer
// constants, half precision for the other weights of rank > 1 in fp16 and fp8 bundles, else
// fp32 (biases and scales keep fp32).
DType storage_type(const ModelDefinition& def, const std::string& name, const Tensor& t, const std::string& precision) {
  for (const auto& [gname, g] : def.graphs)
    for (const Value& v : g.values())
      if (v.kind == ValueKind::Constant && v.name == name && (!is_float(v.dtype) || v.dtype == DType::F8E4M3))
        return v.dtype;
  return precision != "fp32" && t.shape.size() > 1 ? DType::F16 : DType::F32;
}

}  // namespace

void check_bundle_path(const std::string& path) {
  KILN_CHECK(!std::filesystem::is_directory(path), "[bundle] {} is a folder: name the bundle's file ({}/model.bundle)",
             path, path);
}

uint64_t write_bundle(const std::string& path, const ModelDefinition& def, const BuildInfo& info) {
  def.validate();
  KILN_CHECK(info.precision == "fp32" || info.precision == "fp16" || info.precision == "fp8",
             "[bundle] unknown precision '{}'", info.precision);
  // Data section: each tensor 64-byte aligned, in name order.
  std::vector<uint8_t> data;
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& [name, t] : def.weights) {
    const DType dtype = storage_type(def, name, t, info.precision);
    const int64_t n = t.numel();
    for (int64_t i = 0; dtype == DType::F8E4M3 && i < n; ++i)
      KILN_CHECK(round_to_e4m3(t.data[i]) == t.data[i], "[bundle] {}: value {} is not an E4M3 value", name, t.data[i]);
    for (int64_t i = 0; is_integer(dtype) && i < n; ++i)
      KILN_CHECK(t.data[i] == std::trunc(t.data[i]), "[bundle] {}: value {} is not a whole number", name, t.data[i]);
    const uint64_t offset = align_up(data.size()), size = static_cast<uint64_t>(n) * dtype_size(dtype);
    data.resize(offset + size);
    convert_from_f32(dtype, t.data.data(), data.data() + offset, n);
    tensors.push_back(
        {{"name", name}, {"dtype", storage_name(dtype)}, {"shape", t.shape}, {"offset", offset}, {"size", size}});
  }
  data.resize(align_up(data.size()));

  nlohmann::json graphs = nlohmann::json::object();
  for (const auto& [name, g] : def.graphs) graphs[name] = {{"interface", graph_interface(g)}, {"graph", g.to_json()}};
  nlohmann::json manifest = {
      {"format", "kiln-bundle"},
      {"format_version", bundle::kFormatVersion},
      {"kiln_version", KILN_VERSION},
      {"created", utc_now()},
      {"model",
       {{"id", info.model_id},
        {"revision", info.revision},
        {"family", def.family},
        {"architecture", def.architecture},
        {"source", def.source}}},
      {"task", {{"type", def.task}}},
      {"precision", info.precision},
      {"build", {{"batch_sizes", info.batch_sizes}, {"options", info.options}}},
      {"plans", info.plans},
      {"graphs", graphs},
      {"tensors", tensors},
  };
  for (auto& [key, value] : def.task_config.items()) manifest["task"][key] = value;
  std::string manifest_text = manifest.dump();

  std::vector<uint8_t> header(bundle::kHeaderSize, 0);
  std::memcpy(header.data(), bundle::kMagic, 8);
  uint64_t manifest_offset = bundle::kHeaderSize;
  uint64_t data_offset = align_up(manifest_offset + manifest_text.size());
  put<uint32_t>(header, bundle::kOffVersion, bundle::kFormatVersion);
  put<uint32_t>(header, bundle::kOffHeaderSize, static_cast<uint32_t>(bundle::kHeaderSize));
  put<uint64_t>(header, bundle::kOffManifestOffset, manifest_offset);
  put<uint64_t>(header, bundle::kOffManifestSize, manifest_text.size());
  put<uint64_t>(header, bundle::kOffDataOffset, data_offset);
  put<uint64_t>(header, bundle::kOffDataSize, data.size());
  put_hex_digest(header, bundle::kOffManifestSha,
                 sha256_hex({reinterpret_cast<const uint8_t*>(manifest_text.data()), manifest_text.size()}));
  put_hex_digest(header, bundle::kOffDataChecksum, bundle::data_checksum_hex(bundle::kFormatVersion, data));

  check_bundle_path(path);
  // Written beside the bundle and renamed over it, so a reader never sees half a bundle; a
  // failure removes the temporary file.
  const std::string tmp = path + ".tmp";
  std::string error;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    KILN_CHECK(out.good(), "[bundle] cannot write {}", tmp);
    out.write(reinterpret_cast<const char*>(header.data()), header.size());
    out.write(manifest_text.data(), manifest_text.size());
    std::vector<char> pad(data_offset - manifest_offset - manifest_text.size(), 0);
    out.write(pad.data(), pad.size());
    out.write(reinterpret_cast<const char*>(data.data()), data.size());
    out.close();
    if (!out.good()) error = fmt::format("[bundle] write to {} failed", tmp);
  }
  std::error_code ec;
  if (error.empty()) {
    std::filesystem::rename(tmp, path, ec);
    if (ec) error = fmt::format("[bundle] cannot move {} to {}: {}", tmp, path, ec.message());
  }
  if (!error.empty()) {
    std::filesystem::remove(tmp, ec);
    fail("{}", error);
  }
  return data_offset + data.size();
}

}  // namespace kiln
