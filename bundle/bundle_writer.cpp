#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>

#include "bundle/bundle.h"
#include "bundle/format.h"
#include "core/error.h"
#include "core/fp8.h"
#include "core/half.h"
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

}  // namespace

uint64_t write_bundle(const std::string& path, const ModelDefinition& def, const BuildInfo& info) {
  def.validate();
  // Data section: each tensor 64-byte aligned, in name order.
  std::vector<uint8_t> data;
  nlohmann::json tensors = nlohmann::json::array();
  KILN_CHECK(info.precision == "fp32" || info.precision == "fp16" || info.precision == "fp8",
             "[bundle] unknown precision '{}'", info.precision);
  std::set<std::string> fp8_weights;  // weights of FP8 layers hold E4M3 values: stored as one byte each
  for (const auto& n : def.graph.nodes())
    if (n.fp8_weights()) fp8_weights.insert(n.weight);
  for (const auto& [name, t] : def.weights) {
    // fp16 and fp8 bundles store other weights in half precision; biases and scales stay fp32.
    const bool e4m3 = fp8_weights.count(name) != 0;
    const bool half = !e4m3 && info.precision != "fp32" && t.shape.size() > 1;
    const char* dtype = e4m3 ? "F8_E4M3" : half ? "F16" : "F32";
    uint64_t offset = align_up(data.size());
    uint64_t size = t.data.size() * (e4m3 ? 1 : half ? 2 : 4);
    data.resize(offset + size);
    for (size_t i = 0; e4m3 && i < t.data.size(); ++i) {
      KILN_CHECK(round_to_e4m3(t.data[i]) == t.data[i], "[bundle] {}: value {} is not an E4M3 value", name, t.data[i]);
      data[offset + i] = encode_e4m3(t.data[i]);
    }
    for (size_t i = 0; half && i < t.data.size(); ++i) {
      uint16_t h = float_to_half(t.data[i]);
      std::memcpy(data.data() + offset + 2 * i, &h, 2);
    }
    if (!e4m3 && !half) std::memcpy(data.data() + offset, t.data.data(), size);
    tensors.push_back({{"name", name}, {"dtype", dtype}, {"shape", t.shape}, {"offset", offset}, {"size", size}});
  }
  data.resize(align_up(data.size()));

  auto in_shape =
      def.task_config.value("preprocess", nlohmann::json::object()).value("input_size", nlohmann::json::array());
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
      {"input", {{"shape", in_shape}, {"layout", "NCHW"}, {"dtype", "F32"}, {"batch_sizes", info.batch_sizes}}},
      {"build_options", info.options},
      {"plans", info.plans},
      {"graph", def.graph.to_json()},
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
  put_hex_digest(header, bundle::kOffDataSha, sha256_hex(data));

  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    KILN_CHECK(out.good(), "[bundle] cannot write {}", tmp);
    out.write(reinterpret_cast<const char*>(header.data()), header.size());
    out.write(manifest_text.data(), manifest_text.size());
    std::vector<char> pad(data_offset - manifest_offset - manifest_text.size(), 0);
    out.write(pad.data(), pad.size());
    out.write(reinterpret_cast<const char*>(data.data()), data.size());
    KILN_CHECK(out.good(), "[bundle] write to {} failed", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  KILN_CHECK(!ec, "[bundle] cannot move {} to {}: {}", tmp, path, ec.message());
  return data_offset + data.size();
}

}  // namespace kiln
