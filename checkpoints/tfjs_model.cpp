#include "checkpoints/tfjs_model.h"

#include <cstring>
#include <filesystem>

#include "checkpoints/checkpoint.h"
#include "core/checked_math.h"
#include "core/error.h"
#include "core/json_int.h"
#include "core/mapped_file.h"
#include "core/sha256.h"

namespace kiln {

namespace fs = std::filesystem;

bool TfjsModel::looks_like(const std::string& dir) {
  fs::path p = fs::path(dir) / "model.json";
  if (!fs::is_regular_file(p)) return false;
  try {
    auto j = read_json_file(p.string(), "tfjs");
    return j.is_object() && j.value("format", std::string()) == "graph-model";
  } catch (const Error&) {
    return false;
  }
}

TfjsModel::TfjsModel(const std::string& dir) : dir_(dir) {
  fs::path model_json = fs::path(dir) / "model.json";
  auto j = read_json_file(model_json.string(), "tfjs");
  files_["model.json"] = sha256_file_hex(model_json.string());
  try {
    KILN_CHECK(j.value("format", std::string()) == "graph-model", "[tfjs] {} is not a graph model",
               model_json.string());
    for (const auto& n : j.at("modelTopology").at("node")) {
      TfjsNode node;
      node.op = n.at("op").get<std::string>();
      if (n.contains("input")) node.inputs = n["input"].get<std::vector<std::string>>();
      node.attr = n.value("attr", nlohmann::json::object());
      nodes_[n.at("name").get<std::string>()] = std::move(node);
    }
    for (const auto& group : j.at("weightsManifest")) {
      // A group's weights are laid out back to back across its shards, in manifest order.
      std::vector<uint8_t> blob;
      for (const auto& path : group.at("paths")) {
        std::string name = path.get<std::string>();
        KILN_CHECK(name.find('/') == std::string::npos && name != "..",
                   "[tfjs] shard name '{}' is not a plain file name", name);
        MappedFile shard((fs::path(dir) / name).string());
        files_[name] = sha256_hex(shard.bytes());
        blob.insert(blob.end(), shard.bytes().begin(), shard.bytes().end());
      }
      uint64_t offset = 0;
      for (const auto& w : group.at("weights")) {
        std::string name = w.at("name").get<std::string>();
        std::string dtype = w.at("dtype").get<std::string>();
        KILN_CHECK(!w.contains("quantization"), "[tfjs] weight '{}' is quantized; only float32 models are supported",
                   name);
        KILN_CHECK(dtype == "float32" || dtype == "int32", "[tfjs] weight '{}' has unsupported dtype {}", name, dtype);
        Tensor t;
        t.shape = json_ints(w.at("shape"), 8, 0, INT64_MAX, "[tfjs] weight '" + name + "': shape");
        uint64_t n = checked_numel(t.shape, "tfjs weight");
        uint64_t bytes = checked_mul(n, 4, "tfjs weight");
        KILN_CHECK(checked_add(offset, bytes, "tfjs offset") <= blob.size(),
                   "[tfjs] weight '{}' runs past the end of the shards; they are truncated", name);
        if (dtype == "float32") {
          t.data.resize(n);
          std::memcpy(t.data.data(), blob.data() + offset, bytes);
          weights_[name] = std::move(t);
        }
        offset += bytes;
      }
      KILN_CHECK(offset == blob.size(), "[tfjs] shards hold {} bytes but the manifest describes {}", blob.size(),
                 offset);
    }
  } catch (const nlohmann::json::exception& e) {
    fail("[tfjs] {} is malformed: {}", model_json.string(), e.what());
  }
}

const TfjsNode& TfjsModel::node(const std::string& name) const {
  auto it = nodes_.find(name);
  KILN_CHECK(it != nodes_.end(), "[tfjs] {}: no node '{}'", dir_, name);
  return it->second;
}

const Tensor& TfjsModel::weight(const std::string& name) const {
  auto it = weights_.find(name);
  KILN_CHECK(it != weights_.end(), "[tfjs] {}: no float weight '{}'", dir_, name);
  return it->second;
}

}  // namespace kiln
