#include "checkpoints/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "checkpoints/torch_pickle.h"
#include "core/error.h"
#include "core/read_file.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

// A reader of one format (SafetensorsFile, TorchCheckpointFile: both list tensors() with
// shapes and convert to_float) behind the TensorFile interface.
template <typename File>
class FileTensors : public TensorFile {
 public:
  explicit FileTensors(const std::string& path) : f_(path) {}
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& [name, info] : f_.tensors()) out.push_back(name);
    return out;
  }
  std::vector<int64_t> shape(const std::string& name) const override { return f_.info(name).shape; }
  Tensor to_float(const std::string& name) const override { return f_.to_float(name); }

 private:
  File f_;
};

template <typename File>
std::unique_ptr<TensorFile> open_tensors(const std::string& path) {
  return std::make_unique<FileTensors<File>>(path);
}

// The weight files of one format: the single file, else the shards its index lists; none
// when neither exists.
std::vector<std::string> shards(const std::string& dir, const char* single, const char* index_name) {
  if (fs::exists(fs::path(dir) / single)) return {single};
  const fs::path index = fs::path(dir) / index_name;
  if (!fs::exists(index)) return {};
  auto j = read_json_file(index.string(), "checkpoint");
  KILN_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(),
             "[checkpoint] {} has no weight_map", index.string());
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (auto& [tensor, file] : j["weight_map"].items()) {
    KILN_CHECK(file.is_string(), "[checkpoint] {}: weight_map entry '{}' is not a file name", index.string(), tensor);
    std::string f = file.get<std::string>();
    KILN_CHECK(f.find('/') == std::string::npos && f != ".." && !f.empty(),
               "[checkpoint] {}: shard name '{}' is not a plain file name", index.string(), f);
    if (seen.insert(f).second) out.push_back(f);
  }
  KILN_CHECK(!out.empty(), "[checkpoint] {} lists no shards", index.string());
  return out;
}

}  // namespace

std::string config_architecture(const nlohmann::json& cfg) {
  // null is as good as absent (transformers writes it for a config saved without them).
  KILN_CHECK(!cfg.contains("architecture") || cfg["architecture"].is_string() || cfg["architecture"].is_null(),
             "[checkpoint] config.json: 'architecture' is not a name");
  KILN_CHECK(
      !cfg.contains("architectures") || cfg["architectures"].is_null() ||
          (cfg["architectures"].is_array() && std::all_of(cfg["architectures"].begin(), cfg["architectures"].end(),
                                                          [](const nlohmann::json& a) { return a.is_string(); })),
      "[checkpoint] config.json: 'architectures' is not a list of names");
  std::string arch = cfg.contains("architecture") && cfg["architecture"].is_string()
                         ? cfg["architecture"].get<std::string>()
                         : std::string();
  if (arch.empty() && cfg.contains("architectures") && cfg["architectures"].is_array() && !cfg["architectures"].empty())
    arch = cfg["architectures"][0].get<std::string>();
  if (arch.empty() && cfg.contains("model") && cfg["model"].is_string()) {
    arch = cfg["model"].get<std::string>();
    if (arch.ends_with(".yaml")) arch.resize(arch.size() - 5);
  }
  return arch;
}

nlohmann::json read_json_file(const std::string& path, const char* what) {
  nlohmann::json j = nlohmann::json::parse(read_file(path, kMaxSmallFileBytes), nullptr, false);
  KILN_CHECK(!j.is_discarded(), "[{}] {} is not valid JSON", what, path);
  return j;
}

Checkpoint::Checkpoint(const std::string& dir) : dir_(dir) {
  KILN_CHECK(fs::is_directory(dir), "[checkpoint] {} is not a directory", dir);
  fs::path config = fs::path(dir) / "config.json";
  KILN_CHECK(fs::exists(config), "[checkpoint] {} has no config.json", dir);
  config_ = read_json_file(config.string(), "checkpoint");
  KILN_CHECK(config_.is_object(), "[checkpoint] {} is not a JSON object", config.string());

  // safetensors first (as transformers prefers it), then torch.save files.
  struct Format {
    const char* single;
    const char* index;
    std::unique_ptr<TensorFile> (*open)(const std::string&);
  };
  const Format formats[] = {{"model.safetensors", "model.safetensors.index.json", open_tensors<SafetensorsFile>},
                            {"pytorch_model.bin", "pytorch_model.bin.index.json", open_tensors<TorchCheckpointFile>}};
  for (const Format& f : formats) {
    std::vector<std::string> shard_names = shards(dir, f.single, f.index);
    if (shard_names.empty()) continue;
    for (const auto& name : shard_names) {
      files_.push_back(f.open((fs::path(dir) / name).string()));
      for (const auto& tensor : files_.back()->names()) {
        KILN_CHECK(!owner_.count(tensor), "[checkpoint] tensor '{}' appears in two shards", tensor);
        owner_[tensor] = files_.size() - 1;
      }
    }
    return;
  }
  fail("[checkpoint] {} has no weights (model.safetensors, pytorch_model.bin, or a sharded index of either)", dir);
}

const TensorFile& Checkpoint::file_for(const std::string& name) const {
  auto it = owner_.find(name);
  KILN_CHECK(it != owner_.end(), "[checkpoint] {}: missing tensor '{}'", dir_, name);
  return *files_[it->second];
}

bool Checkpoint::has(const std::string& name) const { return owner_.count(name) != 0; }

std::vector<int64_t> Checkpoint::shape(const std::string& name) const { return file_for(name).shape(name); }

Tensor Checkpoint::load(const std::string& name) {
  Tensor t = file_for(name).to_float(name);
  // A NaN or an infinity in a weight is a damaged file, not a model: every output it reaches
  // would be NaN, so the build stops here and names the tensor.
  const auto not_finite = [](float v) { return !std::isfinite(v); };
  const auto bad = std::find_if(t.data.begin(), t.data.end(), not_finite);
  const auto count = [&] { return std::count_if(bad, t.data.end(), not_finite); };  // only on failure
  KILN_CHECK(bad == t.data.end(),
             "[checkpoint] tensor '{}' holds {} NaN or infinite value{} (the first at element {} of {}): the "
             "checkpoint is damaged",
             name, count(), count() == 1 ? "" : "s", bad - t.data.begin(), t.data.size());
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
