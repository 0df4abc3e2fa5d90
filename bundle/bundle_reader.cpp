#include <algorithm>
#include <cstring>

#include "bundle/bundle.h"
#include "bundle/format.h"
#include "core/checked_math.h"
#include "core/error.h"
#include "core/fp8.h"
#include "core/half.h"
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
  KILN_CHECK(version == kFormatVersion, "[bundle] {} has format version {}; this kiln reads version {}", name_, version,
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
  KILN_CHECK(sha256_hex(data) == hex(f.subspan(kOffDataSha, 32)),
             "[bundle] {}: data checksum mismatch; the file is corrupt", name_);

  const char* text = reinterpret_cast<const char*>(manifest_bytes.data());
  manifest_ = nlohmann::json::parse(text, text + m_size, nullptr, false);
  KILN_CHECK(!manifest_.is_discarded() && manifest_.is_object(), "[bundle] {}: manifest is not a JSON object", name_);
  KILN_CHECK(manifest_.value("format", std::string()) == "kiln-bundle",
             "[bundle] {}: manifest format is not kiln-bundle", name_);
  try {
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const auto& t : manifest_.at("tensors")) {
      BundleTensor bt;
      std::string name = t.at("name").get<std::string>();
      bt.dtype = t.at("dtype").get<std::string>();
      const uint64_t element = bt.dtype == "F32" ? 4 : bt.dtype == "F16" ? 2 : bt.dtype == "F8_E4M3" ? 1 : 0;
      KILN_CHECK(element, "[bundle] {}: tensor '{}' has unsupported dtype {}", name_, name, bt.dtype);
      bt.shape = t.at("shape").get<std::vector<int64_t>>();
      KILN_CHECK(bt.shape.size() <= 8, "[bundle] {}: tensor '{}' has too many dimensions", name_, name);
      uint64_t offset = t.at("offset").get<uint64_t>(), size = t.at("size").get<uint64_t>();
      KILN_CHECK(offset % kAlignment == 0, "[bundle] {}: tensor '{}' is not {}-byte aligned", name_, name, kAlignment);
      KILN_CHECK(checked_add(offset, size, "tensor range") <= d_size,
                 "[bundle] {}: tensor '{}' lies outside the data section", name_, name);
      KILN_CHECK(checked_mul(checked_numel(bt.shape, "tensor"), element, "tensor bytes") == size,
                 "[bundle] {}: tensor '{}' size does not match its shape", name_, name);
      bt.bytes = data.subspan(offset, size);
      ranges.emplace_back(offset, offset + size);
      KILN_CHECK(tensors_.emplace(name, bt).second, "[bundle] {}: tensor '{}' appears twice", name_, name);
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
      KILN_CHECK(ranges[i].first >= ranges[i - 1].second, "[bundle] {}: tensors overlap", name_);
    graph_ = Graph::from_json(manifest_.at("graph"), [&](const std::string& n) -> std::optional<std::vector<int64_t>> {
      auto it = tensors_.find(n);
      if (it == tensors_.end()) return std::nullopt;
      return it->second.shape;
    });
    const auto& shape = manifest_.at("input").at("shape");
    KILN_CHECK(shape.is_array() && shape.size() == 3, "[bundle] {}: input shape must be [C, H, W]", name_);
    KILN_CHECK(shape[0].get<int>() == graph_.values()[graph_.input()].channels,
               "[bundle] {}: input channels disagree with the graph", name_);
    graph_.infer_dims(shape[1].get<int>(), shape[2].get<int>());
  } catch (const nlohmann::json::exception& e) {
    fail("[bundle] {}: malformed manifest: {}", name_, e.what());
  }
}

std::span<const float> BundleTensor::as_float(std::vector<float>& storage) const {
  if (dtype == "F32") return {reinterpret_cast<const float*>(bytes.data()), bytes.size() / sizeof(float)};
  if (dtype == "F8_E4M3") {
    storage.resize(bytes.size());
    for (size_t i = 0; i < storage.size(); ++i) storage[i] = decode_e4m3(bytes[i]);
    return storage;
  }
  storage.resize(bytes.size() / 2);
  for (size_t i = 0; i < storage.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    storage[i] = half_to_float(h);
  }
  return storage;
}

WeightLookup Bundle::weights() const {
  return [this](const std::string& name) {
    const BundleTensor& t = tensor(name);
    return WeightView{t.shape, t.as_float(converted_[name])};
  };
}

const BundleTensor& Bundle::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  KILN_CHECK(it != tensors_.end(), "[bundle] {}: no tensor '{}'", name_, name);
  return it->second;
}

}  // namespace kiln
