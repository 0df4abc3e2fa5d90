#include "serve/repository.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace kiln::serve {

namespace fs = std::filesystem;

bool valid_model_name(const std::string& name) {
  if (name.empty() || name.size() > 128 || name[0] == '.') return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

bool valid_version(const std::string& v) {
  if (v.empty() || v.size() > 18 || v[0] == '0') return false;
  for (char c : v)
    if (c < '0' || c > '9') return false;
  return true;
}

BatchingConfig parse_model_config(const std::string& text, const std::string& path, std::string* device) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  KILN_CHECK(j.is_object(), "[serve] {}: not a JSON object", path);
  BatchingConfig c;
  auto integer = [&](const std::string& key, int64_t lo, int64_t hi) {
    const auto& v = j[key];
    KILN_CHECK(v.is_number_integer() && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi,
               "[serve] {}: \"{}\" must be an integer from {} to {}", path, key, lo, hi);
    return v.get<int64_t>();
  };
  for (const auto& [key, value] : j.items()) {
    if (key == "max_batch_size") {
      c.max_batch_size = static_cast<int>(integer(key, 1, 4096));
    } else if (key == "max_queue_delay_us") {
      c.max_queue_delay_us = integer(key, 0, 10'000'000);
    } else if (key == "preferred_batch_sizes") {
      KILN_CHECK(value.is_array(), "[serve] {}: \"preferred_batch_sizes\" must be a list", path);
      for (const auto& b : value) {
        KILN_CHECK(b.is_number_integer() && b.get<int64_t>() >= 1 && b.get<int64_t>() <= 4096,
                   "[serve] {}: preferred batch sizes must be integers from 1 to 4096", path);
        c.preferred_batch_sizes.push_back(b.get<int>());
      }
    } else if (key == "max_queue_size") {
      c.max_queue_size = static_cast<size_t>(integer(key, 1, 1'000'000));
    } else if (key == "instances") {
      c.instances = static_cast<int>(integer(key, 1, 64));
    } else if (key == "timeout_us") {
      c.timeout_us = integer(key, 0, 3'600'000'000);
    } else if (key == "device") {
      KILN_CHECK(value.is_string() && (value == "cpu" || value == "cuda" || value == "auto"),
                 "[serve] {}: \"device\" must be \"cpu\", \"cuda\" or \"auto\"", path);
      *device = value.get<std::string>();
    } else {
      fail("[serve] {}: unknown setting \"{}\"", path, key);
    }
  }
  return c;
}

Repository::Repository(std::string root, ServableOptions options, Metrics* metrics)
    : root_(std::move(root)), options_(std::move(options)), metrics_(metrics) {
  KILN_CHECK(fs::is_directory(root_), "[serve] {}: no such model repository folder", root_);
}

Repository::~Repository() { unload_all(); }

int Repository::load_all() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(root_))
    if (entry.is_directory() && valid_model_name(entry.path().filename().string()))
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  int failed = 0;
  for (const auto& name : names) {
    try {
      load(name);
    } catch (const std::exception&) {
      ++failed;
    }
  }
  return failed;
}

std::map<int64_t, std::shared_ptr<Batcher>> Repository::load_versions(const std::string& name) {
  fs::path dir = fs::path(root_) / name;
  ServableOptions options = options_;
  BatchingConfig config;
  if (fs::exists(dir / "config.json")) {
    std::ifstream in(dir / "config.json");
    std::stringstream text;
    text << in.rdbuf();
    config = parse_model_config(text.str(), (dir / "config.json").string(), &options.device);
  }
  std::map<int64_t, std::shared_ptr<Batcher>> versions;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string v = entry.path().filename().string();
    if (!entry.is_directory() || !valid_version(v) || !fs::exists(entry.path() / "model.bundle")) continue;
    std::vector<std::unique_ptr<Servable>> instances;
    for (int i = 0; i < config.instances; ++i)
      instances.push_back(load_servable((entry.path() / "model.bundle").string(), options));
    versions[std::stoll(v)] = std::make_shared<Batcher>(std::move(instances), config, metrics_, name, v);
  }
  KILN_CHECK(!versions.empty(), "[serve] model '{}' has no <version>/model.bundle", name);
  return versions;
}

void Repository::load(const std::string& name) {
  if (!valid_model_name(name) || !fs::is_directory(fs::path(root_) / name))
    throw ServeError(ErrorKind::NotFound, "the repository has no model '" + name + "'");
  std::lock_guard load_lock(load_mutex_);
  std::map<int64_t, std::shared_ptr<Batcher>> versions, old;
  try {
    versions = load_versions(name);
  } catch (const std::exception& e) {
    // A failed reload keeps the versions that serve (and the server ready); a failed first load
    // leaves the model unavailable.
    std::lock_guard lock(mutex_);
    Model& m = models_[name];
    if (m.versions.empty()) m.state = "UNAVAILABLE";
    m.reason = std::string(m.versions.empty() ? "" : "reload failed: ") + e.what();
    throw ServeError(ErrorKind::BadRequest, std::string("failed to load '") + name + "': " + e.what());
  }
  {
    std::lock_guard lock(mutex_);
    Model& m = models_[name];
    old = std::move(m.versions);
    m = Model{std::move(versions), "READY", ""};
  }
  for (auto& [v, b] : old) b->stop();  // a reload: the old versions finish what they queued
}

void Repository::unload(const std::string& name) {
  std::lock_guard load_lock(load_mutex_);
  std::map<int64_t, std::shared_ptr<Batcher>> old;
  {
    std::lock_guard lock(mutex_);
    auto it = models_.find(name);
    if (it == models_.end()) throw ServeError(ErrorKind::NotFound, "the repository has no model '" + name + "'");
    old = std::move(it->second.versions);
    it->second = Model{{}, "UNAVAILABLE", "unloaded"};
  }
  for (auto& [v, b] : old) b->stop();
}

void Repository::unload_all() {
  std::vector<std::string> names;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [name, m] : models_)
      if (!m.versions.empty()) names.push_back(name);
  }
  for (const auto& n : names) unload(n);
}

std::shared_ptr<Batcher> Repository::find(const std::string& name, const std::string& version) const {
  std::lock_guard lock(mutex_);
  auto it = models_.find(name);
  if (it == models_.end() || it->second.versions.empty())
    throw ServeError(ErrorKind::NotFound, "model '" + name + "' is not loaded");
  const auto& versions = it->second.versions;
  if (version.empty()) return versions.rbegin()->second;
  auto v = valid_version(version) ? versions.find(std::stoll(version)) : versions.end();
  if (v == versions.end())
    throw ServeError(ErrorKind::NotFound, "model '" + name + "' has no loaded version '" + version + "'");
  return v->second;
}

std::vector<std::string> Repository::versions(const std::string& name) const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  if (auto it = models_.find(name); it != models_.end())
    for (const auto& [v, b] : it->second.versions) out.push_back(std::to_string(v));
  return out;
}

nlohmann::json Repository::index() const {
  std::lock_guard lock(mutex_);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, m] : models_) {
    if (m.versions.empty()) {
      out.push_back({{"name", name}, {"state", m.state}, {"reason", m.reason}});
      continue;
    }
    for (const auto& [v, b] : m.versions)
      out.push_back({{"name", name}, {"version", std::to_string(v)}, {"state", m.state}, {"reason", m.reason}});
  }
  return out;
}

bool Repository::ready() const {
  std::lock_guard lock(mutex_);
  for (const auto& [name, m] : models_)
    if (m.state != "READY" && m.reason != "unloaded") return false;
  return true;
}

}  // namespace kiln::serve
