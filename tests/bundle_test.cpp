// Bundle round trip and the reader's defences: every malformed file is one clear error.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "bundle/bundle.h"
#include "bundle/format.h"
#include "core/error.h"
#include "core/half.h"
#include "core/sha256.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

// A tiny but complete classifier graph: conv -> pool -> linear.
ModelDefinition tiny_model() {
  ModelDefinition def;
  def.family = "test";
  def.architecture = "tiny";
  def.task = "image_classification";
  Graph& g = def.graph;
  int x = g.add_value(3, "input");
  g.set_input(x);
  Node conv;
  conv.name = "conv";
  conv.op = Op::Conv2d;
  conv.kernel = 3;
  conv.stride = 2;
  conv.pad = {false, 1, 1, 1, 1};
  conv.weight = "conv.weight";
  conv.bias = "conv.bias";
  conv.act = Activation::SiLU;
  conv.inputs = {x};
  conv.output = g.add_value(4);
  g.add_node(conv);
  Node pool;
  pool.name = "pool";
  pool.op = Op::GlobalAvgPool;
  pool.inputs = {conv.output};
  pool.output = g.add_value(4);
  g.add_node(pool);
  Node fc;
  fc.name = "fc";
  fc.op = Op::Linear;
  fc.weight = "fc.weight";
  fc.bias = "fc.bias";
  fc.inputs = {pool.output};
  fc.output = g.add_value(2);
  g.add_node(fc);
  g.set_output(fc.output);
  auto fill = [](std::vector<int64_t> shape) {
    Tensor t(shape);
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
    return t;
  };
  def.weights["conv.weight"] = fill({4, 3, 3, 3});
  def.weights["conv.bias"] = fill({4});
  def.weights["fc.weight"] = fill({2, 4});
  def.weights["fc.bias"] = fill({2});
  def.task_config = {{"preprocess",
                      {{"input_size", {3, 8, 8}},
                       {"interpolation", "bicubic"},
                       {"crop_pct", 1.0},
                       {"mean", {0, 0, 0}},
                       {"std", {1, 1, 1}}}},
                     {"labels", {"a", "b"}}};
  return def;
}

std::vector<uint8_t> tiny_bundle_bytes() {
  std::string path = test::binary_dir() + "/tiny.bundle";
  write_bundle(path, tiny_model(), BuildInfo{});
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  return test::error_message([&] { Bundle::from_bytes(bytes, "x.bundle"); });
}

// Rewrites the manifest (and both checksums) so that structural checks behind them are reached.
std::vector<uint8_t> with_manifest(const std::vector<uint8_t>& bytes, const nlohmann::json& manifest) {
  uint64_t m_size, d_off, d_size;
  std::memcpy(&d_off, bytes.data() + bundle::kOffDataOffset, 8);
  std::memcpy(&d_size, bytes.data() + bundle::kOffDataSize, 8);
  std::string text = manifest.dump();
  uint64_t new_d_off = (bundle::kHeaderSize + text.size() + 63) / 64 * 64;
  std::vector<uint8_t> out(new_d_off + d_size, 0);
  std::memcpy(out.data(), bytes.data(), bundle::kHeaderSize);
  std::memcpy(out.data() + bundle::kHeaderSize, text.data(), text.size());
  std::memcpy(out.data() + new_d_off, bytes.data() + d_off, d_size);
  m_size = text.size();
  std::memcpy(out.data() + bundle::kOffManifestSize, &m_size, 8);
  std::memcpy(out.data() + bundle::kOffDataOffset, &new_d_off, 8);
  std::string sha = sha256_hex({out.data() + bundle::kHeaderSize, m_size});
  for (int i = 0; i < 32; ++i)
    out[bundle::kOffManifestSha + i] = static_cast<uint8_t>(std::stoi(sha.substr(2 * i, 2), nullptr, 16));
  return out;
}

nlohmann::json manifest_of(const std::vector<uint8_t>& bytes) { return Bundle::from_bytes(bytes, "x")->manifest(); }

TEST(Bundle, RoundTrips) {
  auto bytes = tiny_bundle_bytes();
  auto b = Bundle::from_bytes(bytes, "tiny.bundle");
  EXPECT_EQ(b->manifest()["format_version"], 1);
  EXPECT_EQ(b->graph().nodes().size(), 3u);
  std::vector<float> storage;
  auto w = b->tensor("conv.weight").as_float(storage);
  ModelDefinition def = tiny_model();
  ASSERT_EQ(w.size(), def.weights["conv.weight"].data.size());
  EXPECT_TRUE(std::equal(w.begin(), w.end(), def.weights["conv.weight"].data.begin()));
  for (const auto& [name, t] : b->tensors())
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.bytes.data()) % 64, reinterpret_cast<uintptr_t>(bytes.data()) % 64) << name;
}

TEST(Bundle, StoresFp16WeightsAndFp32Biases) {
  std::string path = test::binary_dir() + "/tiny-fp16.bundle";
  BuildInfo info;
  info.precision = "fp16";
  write_bundle(path, tiny_model(), info);
  auto b = Bundle::open(path);
  EXPECT_EQ(b->tensor("conv.weight").dtype, "F16");
  EXPECT_EQ(b->tensor("conv.bias").dtype, "F32");
  ModelDefinition def = tiny_model();
  auto w = b->weights()("conv.weight");
  ASSERT_EQ(w.data.size(), def.weights["conv.weight"].data.size());
  for (size_t i = 0; i < w.data.size(); ++i) EXPECT_NEAR(w.data[i], def.weights["conv.weight"].data[i], 1e-4);
}

TEST(Half, RoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);            // rounds up to infinity
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3C00);  // halfway, to even
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048), 0x3C02);  // halfway, to even (up)
  EXPECT_EQ(float_to_half(5.9604645e-8f), 0x0001);       // smallest subnormal
  EXPECT_EQ(float_to_half(2.9802322e-8f), 0x0000);       // half of it: to even (zero)
  EXPECT_EQ(float_to_half(6.1035156e-5f), 0x0400);       // smallest normal
  for (uint16_t h : {0x0001, 0x03ff, 0x0400, 0x3555, 0x7bff, 0xabcd})
    EXPECT_EQ(float_to_half(half_to_float(h)), h) << h;
}

TEST(Bundle, RejectsTruncatedAndCorruptFiles) {
  auto good = tiny_bundle_bytes();
  EXPECT_EQ(error_of(good), "");
  EXPECT_NE(error_of({good.begin(), good.begin() + 50}).find("not a kiln bundle"), std::string::npos);
  EXPECT_NE(error_of({good.begin(), good.end() - 10}).find("truncated"), std::string::npos);
  auto bad_magic = good;
  bad_magic[0] = 'X';
  EXPECT_NE(error_of(bad_magic).find("bad magic"), std::string::npos);
  auto future = good;
  future[bundle::kOffVersion] = 2;
  EXPECT_NE(error_of(future).find("format version 2"), std::string::npos);
  auto flip_data = good;
  flip_data[flip_data.size() - 70] ^= 0x10;
  EXPECT_NE(error_of(flip_data).find("data checksum"), std::string::npos);
  auto flip_manifest = good;
  flip_manifest[bundle::kHeaderSize + 20] ^= 0x01;
  EXPECT_NE(error_of(flip_manifest).find("manifest checksum"), std::string::npos);
  auto oversized = good;
  uint64_t huge = 1ull << 40;
  std::memcpy(oversized.data() + bundle::kOffManifestSize, &huge, 8);
  EXPECT_NE(error_of(oversized).find("limit"), std::string::npos);
}

TEST(Bundle, RejectsInconsistentManifests) {
  auto good = tiny_bundle_bytes();
  auto m = manifest_of(good);
  EXPECT_EQ(error_of(with_manifest(good, m)), "");

  auto out_of_range = m;
  out_of_range["tensors"][0]["offset"] = 1 << 20;
  EXPECT_NE(error_of(with_manifest(good, out_of_range)).find("outside the data section"), std::string::npos);
  auto misaligned = m;
  misaligned["tensors"][0]["offset"] = 4;
  EXPECT_NE(error_of(with_manifest(good, misaligned)).find("aligned"), std::string::npos);
  auto wrong_size = m;
  wrong_size["tensors"][0]["shape"] = {5};
  EXPECT_NE(error_of(with_manifest(good, wrong_size)).find("size does not match"), std::string::npos);
  auto missing_weight = m;
  missing_weight["graph"]["nodes"][0]["weight"] = "nope";
  EXPECT_NE(error_of(with_manifest(good, missing_weight)).find("not in the tensor table"), std::string::npos);
  auto bad_input = m;
  bad_input["graph"]["nodes"][1]["inputs"] = {7};
  EXPECT_NE(error_of(with_manifest(good, bad_input)).find("not defined before use"), std::string::npos);
  auto bad_op = m;
  bad_op["graph"]["nodes"][1]["op"] = "softmax";
  EXPECT_NE(error_of(with_manifest(good, bad_op)).find("unknown op"), std::string::npos);
  auto no_graph = m;
  no_graph.erase("graph");
  EXPECT_NE(error_of(with_manifest(good, no_graph)).find("malformed"), std::string::npos);
}

}  // namespace
}  // namespace kiln
