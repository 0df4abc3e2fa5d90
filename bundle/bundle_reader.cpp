#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "bundle/bundle.h"
#include "bundle/checksum.h"
#include "bundle/format.h"
#include "core/checked_math.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/json_int.h"
#include "core/sha256.h"

namespace kiln {

namespace {

template <typename T>
T get(std::span<const uint8_t> b, int offset) {
  T v;
  std::memcpy(&v, b.data() + offset, sizeof(T));
  return v;
}

std::string hex(std::span<const uint8_t> b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t c : b) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

}  // namespace

std::shared_ptr<Bundle> Bundle::open(const std::string& path) {
  auto b = std::shared_ptr<Bundle>(new Bundle());
  b->name_ = path;
  b->file_ = std::make_unique<MappedFile>(path);
  b->bytes_ = b->file_->bytes();
  b->parse();
  return b;
}

std::shared_ptr<Bundle> Bundle::from_bytes(std::span<const uint8_t> bytes, const std::string& name) {
  auto b = std::shared_ptr<Bundle>(new Bundle());
  b->name_ = name;
  b->bytes_ = bytes;
  b->parse();
  return b;
}

void Bundle::parse() {
  using namespace bundle;
  const auto& f = bytes_;
  KILN_CHECK(f.size() >= kHeaderSize && std::memcmp(f.data(), kMagic, 8) == 0,
             "[bundle] {} is not a kiln bundle (bad magic or too short)", name_);
  uint32_t version = get<uint32_t>(f, kOffVersion);
  KILN_CHECK(version != 1,
             "[bundle] {} has format version 1 (kiln 0.1); this kiln reads versions {} to {}: rebuild it with "
             "`kiln build`",
             name_, kOldestReadVersion, kFormatVersion);
  KILN_CHECK(version >= kOldestReadVersion && version <= kFormatVersion,
             "[bundle] {} has format version {}; this kiln reads versions {} to {}", name_, version, kOldestReadVersion,
             kFormatVersion);
  KILN_CHECK(get<uint32_t>(f, kOffHeaderSize) == kHeaderSize, "[bundle] {}: bad header size", name_);
  uint64_t m_off = get<uint64_t>(f, kOffManifestOffset), m_size = get<uint64_t>(f, kOffManifestSize);
  uint64_t d_off = get<uint64_t>(f, kOffDataOffset), d_size = get<uint64_t>(f, kOffDataSize);
  KILN_CHECK(m_size <= kMaxManifestBytes, "[bundle] {}: manifest size {} is over the {} byte limit", name_, m_size,
             kMaxManifestBytes);
  KILN_CHECK(m_off == kHeaderSize && checked_add(m_off, m_size, "manifest") <= d_off && d_off % kAlignment == 0,
             "[bundle] {}: manifest and data sections are out of place", name_);
  KILN_CHECK(checked_add(d_off, d_size, "data section") == f.size(),
             "[bundle] {}: file is {} bytes but its header describes {}; it is truncated or padded", name_, f.size(),
             d_off + d_size);

  auto manifest_bytes = f.subspan(m_off, m_size);
  auto data = f.subspan(d_off, d_size);
  KILN_CHECK(sha256_hex(manifest_bytes) == hex(f.subspan(kOffManifestSha, 32)),
             "[bundle] {}: manifest checksum mismatch; the file is corrupt", name_);
  KILN_CHECK(data_checksum_hex(version, data) == hex(f.subspan(kOffDataChecksum, 32)),
             "[bundle] {}: data checksum mismatch; the file is corrupt", name_);

  format_version_ = version;
  const char* text = reinterpret_cast<const char*>(manifest_bytes.data());
  manifest_ = nlohmann::json::parse(text, text + m_size, nullptr, false);
  KILN_CHECK(!manifest_.is_discarded() && manifest_.is_object(), "[bundle] {}: manifest is not a JSON object", name_);
  const auto format = manifest_.find("format");
  KILN_CHECK(format != manifest_.end() && format->is_string() && *format == "kiln-bundle",
             "[bundle] {}: manifest format is not kiln-bundle", name_);
  try {
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    const auto& table = manifest_.at("tensors");
    KILN_CHECK(table.is_array(), "[bundle] {}: the tensor table is not a list", name_);
    for (const auto& t : table) {
      BundleTensor bt;
      std::string name = t.at("name").get<std::string>();
      const std::string dtype = t.at("dtype").get<std::string>();
      KILN_CHECK(parse_storage_name(dtype, &bt.dtype), "[bundle] {}: tensor '{}' has unsupported dtype {}", name_, name,
                 dtype);
      const std::string what = fmt::format("[bundle] {}: tensor '{}'", name_, name);
      bt.shape = json_ints(t.at("shape"), 8, 0, INT64_MAX, what + ": shape");
      const uint64_t offset = json_int(t.at("offset"), 0, INT64_MAX, what + ": offset"),
                     size = json_int(t.at("size"), 0, INT64_MAX, what + ": size");
      KILN_CHECK(offset % kAlignment == 0, "[bundle] {}: tensor '{}' is not {}-byte aligned", name_, name, kAlignment);
      KILN_CHECK(checked_add(offset, size, "tensor range") <= d_size,
                 "[bundle] {}: tensor '{}' lies outside the data section", name_, name);
      KILN_CHECK(checked_mul(checked_numel(bt.shape, "tensor"), dtype_size(bt.dtype), "tensor bytes") == size,
                 "[bundle] {}: tensor '{}' size does not match its shape", name_, name);
      bt.bytes = data.subspan(offset, size);
      ranges.emplace_back(offset, offset + size);
      KILN_CHECK(tensors_.emplace(name, bt).second, "[bundle] {}: tensor '{}' appears twice", name_, name);
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
      KILN_CHECK(ranges[i].first >= ranges[i - 1].second, "[bundle] {}: tensors overlap", name_);
    const ConstantInfoFn info = [&](const std::string& n) -> std::optional<ConstantInfo> {
      auto it = tensors_.find(n);
      if (it == tensors_.end()) return std::nullopt;
      return ConstantInfo{it->second.dtype, it->second.shape};
    };
    const auto& graphs = manifest_.at("graphs");
    KILN_CHECK(graphs.is_object() && !graphs.empty() && graphs.size() <= kMaxGraphs,
               "[bundle] {}: 'graphs' must name 1 to {} graphs", name_, kMaxGraphs);
    for (auto& [gname, entry] : graphs.items()) {
      Graph g = Graph::from_json(entry.at("graph"), info);
      KILN_CHECK(entry.at("interface") == graph_interface(g),
                 "[bundle] {}: graph '{}': its inputs and outputs list disagrees with the graph", name_, gname);
      graphs_.emplace(gname, std::move(g));
    }
    check_descriptive_fields();
    const auto& task = manifest_.at("task");
    KILN_CHECK(task.is_object() && task.at("type").is_string(), "[bundle] {}: the task section has no type", name_);
    main_graph_ = task.value("graph", graphs_.size() == 1 ? graphs_.begin()->first : std::string());
    KILN_CHECK(graphs_.count(main_graph_), "[bundle] {}: the task's graph '{}' is not in the bundle", name_,
               main_graph_);
  } catch (const nlohmann::json::exception& e) {
    fail("[bundle] {}: malformed manifest: {}", name_, e.what());
  }
}

// The fields the API, the CLI and the engine read without further checks (provenance, precision,
// batch sizes, saved kernel choices): present and of the type the writer gives them.
void Bundle::check_descriptive_fields() const {
  const auto require = [&](bool ok, const char* field) {
    KILN_CHECK(ok, "[bundle] {}: manifest field '{}' is missing or of the wrong type", name_, field);
  };
  const auto& model = manifest_.at("model");
  require(model.is_object(), "model");
  for (const char* key : {"id", "revision", "family", "architecture"}) require(model.at(key).is_string(), key);
  for (const char* key : {"kiln_version", "created", "precision"}) require(manifest_.at(key).is_string(), key);
  const auto& precision = manifest_.at("precision");
  KILN_CHECK(precision == "fp32" || precision == "fp16" || precision == "fp8", "[bundle] {}: unknown precision {}",
             name_, precision.dump());
  const auto& build = manifest_.at("build");
  require(build.is_object() && build.at("batch_sizes").is_array(), "build.batch_sizes");
  for (const auto& b : build.at("batch_sizes"))
    require(b.is_number_integer() && b.get<int64_t>() >= 1 && b.get<int64_t>() <= bundle::kMaxBatchSize,
            "build.batch_sizes");
  // plans: {backend: {"device": str, "precision": str, "plans": {shape key: {node: variant}}}}
  const auto& plans = manifest_.at("plans");
  require(plans.is_object(), "plans");
  for (const auto& backend : plans) {
    require(backend.is_object() && backend.at("device").is_string() && backend.at("precision").is_string() &&
                backend.at("plans").is_object(),
            "plans");
    for (const auto& choices : backend.at("plans")) {
      require(choices.is_object(), "plans");
      for (const auto& variant : choices) require(variant.is_string(), "plans");
    }
  }
}

const Graph& Bundle::graph(const std::string& name) const {
  auto it = graphs_.find(name);
  if (it != graphs_.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [n, g] : graphs_) names.push_back(n);
  fail("[bundle] {} has no graph '{}' (it has: {})", name_, name, fmt::join(names, ", "));
}

ConstantLookup Bundle::constants() const {
  return [this](const std::string& name) {
    const BundleTensor& t = tensor(name);
    return ConstantView{t.dtype, t.shape, t.bytes};
  };
}

EngineOptions Bundle::engine_options(const std::string& device) const {
  EngineOptions o;
  o.device = device;
  o.precision = precision() == "fp32" ? "fp32" : "fp16";
  o.saved_plans = manifest_.value("plans", nlohmann::json::object());
  o.timing_cache = TimingCache::user();
  return o;
}

nlohmann::json graph_interface(const Graph& g) {
  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array(), states = nlohmann::json::array();
  auto spec = [&](int v) {
    const Value& val = g.values()[v];
    nlohmann::json shape = nlohmann::json::array();
    for (const Dim& d : val.shape) shape.push_back(d.is_symbol() ? nlohmann::json(d.symbol) : nlohmann::json(d.value));
    return nlohmann::json{{"name", val.name}, {"dtype", dtype_name(val.dtype)}, {"shape", shape}};
  };
  for (int v : g.inputs()) inputs.push_back(spec(v));
  for (int v : g.states()) states.push_back(spec(v));
  for (const auto& o : g.outputs())
    outputs.push_back({{"name", o.name}, {"dtype", dtype_name(g.values()[o.value].dtype)}});
  return {{"inputs", inputs}, {"outputs", outputs}, {"states", states}};
}

const BundleTensor& Bundle::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  KILN_CHECK(it != tensors_.end(), "[bundle] {}: no tensor '{}'", name_, name);
  return it->second;
}

}  // namespace kiln
