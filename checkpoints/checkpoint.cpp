#include "checkpoints/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace kiln {

namespace fs = std::filesystem;

nlohmann::json read_json_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), "[{}] cannot read {}", what, path);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  KILN_CHECK(!j.is_discarded(), "[{}] {} is not valid JSON", what, path);
  return j;
}

Checkpoint::Checkpoint(const std::string& dir) : dir_(dir) {
  KILN_CHECK(fs::is_directory(dir), "[checkpoint] {} is not a directory", dir);
  fs::path config = fs::path(dir) / "config.json";
  KILN_CHECK(fs::exists(config), "[checkpoint] {} has no config.json", dir);
  config_ = read_json_file(config.string(), "checkpoint");
  KILN_CHECK(config_.is_object(), "[checkpoint] {} is not a JSON object", config.string());

  std::vector<std::string> shard_names;
  fs::path single = fs::path(dir) / "model.safetensors";
  fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(single)) {
    shard_names.push_back("model.safetensors");
  } else if (fs::exists(index)) {
    auto j = read_json_file(index.string(), "checkpoint");
    KILN_CHECK(j.contains("weight_map") && j["weight_map"].is_object(), "[checkpoint] {} has no weight_map",
               index.string());
    std::set<std::string> seen;
    for (auto& [tensor, file] : j["weight_map"].items()) {
      KILN_CHECK(file.is_string(), "[checkpoint] {}: weight_map entry '{}' is not a file name", index.string(), tensor);
      std::string f = file.get<std::string>();
      KILN_CHECK(f.find('/') == std::string::npos && f != ".." && !f.empty(),
                 "[checkpoint] {}: shard name '{}' is not a plain file name", index.string(), f);
      if (seen.insert(f).second) shard_names.push_back(f);
    }
  } else {
    fail("[checkpoint] {} has neither model.safetensors nor model.safetensors.index.json", dir);
  }
  for (const auto& name : shard_names) {
    files_.push_back(std::make_unique<SafetensorsFile>((fs::path(dir) / name).string()));
    for (const auto& [tensor, info] : files_.back()->tensors()) {
      KILN_CHECK(!owner_.count(tensor), "[checkpoint] tensor '{}' appears in two shards", tensor);
      owner_[tensor] = files_.size() - 1;
    }
  }
}

const SafetensorsFile& Checkpoint::file_for(const std::string& name) const {
  auto it = owner_.find(name);
  KILN_CHECK(it != owner_.end(), "[checkpoint] {}: missing tensor '{}'", dir_, name);
  return *files_[it->second];
}

bool Checkpoint::has(const std::string& name) const { return owner_.count(name) != 0; }

std::vector<int64_t> Checkpoint::shape(const std::string& name) const { return file_for(name).info(name).shape; }

Tensor Checkpoint::load(const std::string& name) {
  Tensor t = file_for(name).to_float(name);
  used_.insert(name);
  return t;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, idx] : owner_) out.push_back(name);
  return out;
}

std::vector<std::string> Checkpoint::unused() const {
  std::vector<std::string> out;
  for (const auto& [name, idx] : owner_)
    if (!used_.count(name)) out.push_back(name);
  return out;
}

}  // namespace kiln
