// Bundle round trip and the reader's defences: every malformed file is one clear error.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "bundle/bundle.h"
#include "bundle/format.h"
#include "core/error.h"
#include "core/half.h"
#include "core/sha256.h"
#include "graph/builder.h"
#include "graph/rewrites/rewrite.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

// A tiny but complete classifier graph: conv -> pool -> linear, in NHWC after a transpose.
ModelDefinition tiny_model() {
  ModelDefinition def;
  def.family = "test";
  def.architecture = "tiny";
  def.task = "image_classification";
  GraphBuilder b(def);
  auto fill = [](std::vector<int64_t> shape) {
    Tensor t(shape);
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
    return t;
  };
  int x = b.input("pixels", DType::F32, {{0, "batch"}, {3, ""}, {8, ""}, {8, ""}});
  x = b.op("transpose", "nhwc", {x}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  ConvOptions conv;
  conv.stride = 2;
  conv.pad = 1;
  conv.act = Activation::SiLU;
  x = b.conv2d(x, "conv", fill({4, 3, 3, 3}), fill({4}), conv);
  x = b.global_avg_pool(x, "pool");
  x = b.op("reshape", "flatten", {x}, {{"shape", std::vector<int64_t>{0, -1}}});
  b.output("logits", b.linear(x, "fc", fill({2, 4}), fill({2})));
  def.task_config = {{"graph", "main"},
                     {"preprocess",
                      {{"input_size", {3, 8, 8}},
                       {"interpolation", "bicubic"},
                       {"crop_pct", 1.0},
                       {"mean", {0, 0, 0}},
                       {"std", {1, 1, 1}}}},
                     {"labels", {"a", "b"}}};
  return def;
}

std::vector<uint8_t> tiny_bundle_bytes() {
  const std::string path = test::process_dir("bundle-test") + "/tiny.bundle";
  write_bundle(path, tiny_model(), BuildInfo{});
  std::vector<uint8_t> bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::filesystem::remove(path);
  return bytes;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  return test::error_message([&] { Bundle::from_bytes(bytes, "x.bundle"); });
}

// Writes a digest given as hex digits into the header at `at`.
void put_hex(std::vector<uint8_t>& bytes, int at, const std::string& hex) {
  for (size_t i = 0; i < hex.size() / 2; ++i)
    bytes[at + i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
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
  put_hex(out, bundle::kOffManifestSha, sha256_hex({out.data() + bundle::kHeaderSize, m_size}));
  return out;
}

nlohmann::json manifest_of(const std::vector<uint8_t>& bytes) { return Bundle::from_bytes(bytes, "x")->manifest(); }

TEST(Bundle, RoundTrips) {
  auto bytes = tiny_bundle_bytes();
  auto b = Bundle::from_bytes(bytes, "tiny.bundle");
  EXPECT_EQ(b->manifest()["format_version"], 3);
  EXPECT_EQ(b->format_version(), 3u);
  EXPECT_EQ(b->graph("main").nodes().size(), 5u);
  EXPECT_EQ(b->main_graph(), "main");
  const auto w = b->constants()("conv.weight").to_f32();
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
  EXPECT_EQ(b->tensor("conv.weight").dtype, DType::F16);
  EXPECT_EQ(b->tensor("conv.bias").dtype, DType::F32);
  // The graph still computes in f32: narrower storage is the bundle's business.
  EXPECT_EQ(b->graph("main").values()[*b->graph("main").find_value("pixels")].dtype, DType::F32);
  ModelDefinition def = tiny_model();
  const auto w = b->constants()("conv.weight").to_f32();
  ASSERT_EQ(w.size(), def.weights["conv.weight"].data.size());
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], def.weights["conv.weight"].data[i], 1e-4);
}

// Two graphs sharing one tensor, an integer input and constant, two outputs, and a state.
TEST(Bundle, StoresSeveralGraphsWithIntegersAndStates) {
  ModelDefinition def;
  def.family = "test";
  def.architecture = "two";
  def.task = "test";
  {
    GraphBuilder b(def, "encoder");
    const int ids = b.input("ids", DType::I64, {{0, "batch"}, {0, "seq"}});
    const int table = b.weight("embed", Tensor({5, 4}));
    const int offset = b.weight("offset", Tensor({1}), DType::I64);
    const int shifted = b.op("add", "shift", {ids, offset});
    b.output("hidden", b.op("gather", "embed", {table, shifted}));
    b.output("ids_out", shifted);
  }
  {
    GraphBuilder b(def, "decoder");
    const int table = b.weight("embed", Tensor({5, 4}));
    const int cache = b.graph().add_state("cache", DType::F32, {{0, "batch"}, {8, ""}, {4, ""}});
    const int pos = b.input("position", DType::I64, {{1, ""}});
    const int row = b.input("row", DType::F32, {{0, "batch"}, {1, ""}, {4, ""}});
    const int updated = b.op("dynamic_update_slice", "append", {cache, row, pos}, {{"axis", int64_t{1}}});
    b.output("sum", b.op("reduce", "sum", {updated}, {{"op", std::string("sum")}, {"axes", std::vector<int64_t>{1}}}));
    (void)table;
  }
  def.weights["offset"].data = {2.0f};
  def.task_config = {{"graph", "encoder"}};
  const std::string path = test::binary_dir() + "/two-graphs.bundle";
  write_bundle(path, def, BuildInfo{});
  auto b = Bundle::open(path);
  EXPECT_EQ(b->graphs().size(), 2u);
  EXPECT_EQ(b->main_graph(), "encoder");
  EXPECT_EQ(b->tensor("offset").dtype, DType::I64);
  EXPECT_EQ(b->manifest()["graphs"]["decoder"]["interface"]["states"][0]["name"], "cache");
  EXPECT_EQ(b->manifest()["graphs"]["encoder"]["interface"]["inputs"][0]["shape"], nlohmann::json({"batch", "seq"}));
  EXPECT_NE(test::error_message([&] { b->graph("nope"); }).find("it has: decoder, encoder"), std::string::npos);
  // A whole number is required of an integer constant.
  def.weights["offset"].data = {2.5f};
  EXPECT_NE(test::error_message([&] { write_bundle(path, def, BuildInfo{}); }).find("not a whole number"),
            std::string::npos);
}

TEST(Bundle, KeepsASymbolsMultiple) {
  // A map whose side must be a multiple of 4: two stride-2 levels that round up (as a padded
  // conv does) joined again by a concat; at an odd side the two would not fit together.
  ModelDefinition def;
  def.family = "test";
  def.architecture = "levels";
  def.task = "test";
  {
    GraphBuilder b(def);
    b.graph().set_symbol("side", {8, 64, 4});
    const int x = b.input("x", DType::F32, {{1, ""}, {0, "side"}, {0, "side"}, {1, ""}});
    const auto pool = [&](int v, const std::string& n) {
      return b.op("max_pool", n, {v},
                  {{"kernel", std::vector<int64_t>{2, 2}}, {"pad", std::vector<int64_t>{0, 0, 1, 1}}});
    };
    const int half = pool(x, "half"), quarter = pool(half, "quarter");
    const int up = b.op("upsample_nearest", "up", {quarter}, {{"scale", std::vector<int64_t>{2, 2}}});
    b.output("y", b.op("concat", "join", {half, up}, {{"axis", int64_t{3}}}));
  }
  def.validate();
  const std::string path = test::binary_dir() + "/multiple.bundle";
  write_bundle(path, def, BuildInfo{});
  auto bundle = Bundle::open(path);
  const Graph& g = bundle->graph("main");
  EXPECT_EQ(g.symbols().at("side").multiple, 4);
  EXPECT_EQ(g.infer_shapes({{"side", 12}})[g.outputs()[0].value], (Shape{1, 6, 6, 2}));
  EXPECT_NE(test::error_message([&] {
              g.infer_shapes({{"side", 10}});
            }).find("side = 10 is not a multiple of 4"),
            std::string::npos);
  // The rewrites' second size is the next multiple, one the graph takes.
  EXPECT_NO_THROW(ShapeOracle{g});
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

// Version 2 differs only in its data checksum (SHA-256): such bundles are still read, and their
// checksum checked as SHA-256.
TEST(Bundle, ReadsVersion2) {
  auto v2 = tiny_bundle_bytes();
  uint64_t d_off, d_size;
  std::memcpy(&d_off, v2.data() + bundle::kOffDataOffset, 8);
  std::memcpy(&d_size, v2.data() + bundle::kOffDataSize, 8);
  v2[bundle::kOffVersion] = 2;
  EXPECT_NE(error_of(v2).find("data checksum mismatch"), std::string::npos);  // an XXH3 field under version 2
  put_hex(v2, bundle::kOffDataChecksum, sha256_hex({v2.data() + d_off, d_size}));
  EXPECT_EQ(error_of(v2), "");
  EXPECT_EQ(Bundle::from_bytes(v2, "v2.bundle")->format_version(), 2u);
  v2[v2.size() - 70] ^= 0x10;
  EXPECT_NE(error_of(v2).find("data checksum mismatch"), std::string::npos);
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
  future[bundle::kOffVersion] = 4;
  EXPECT_NE(error_of(future).find("format version 4; this kiln reads versions 2 to 3"), std::string::npos);
  auto old = good;
  old[bundle::kOffVersion] = 1;
  EXPECT_NE(error_of(old).find("rebuild it with `kiln build`"), std::string::npos);
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
  nlohmann::json& graph = m["graphs"]["main"]["graph"];
  auto edit = [&](const std::function<void(nlohmann::json&)>& change) {
    auto copy = m;
    change(copy["graphs"]["main"]["graph"]);
    return error_of(with_manifest(good, copy));
  };
  int weight_value = -1;
  for (size_t v = 0; v < graph["values"].size(); ++v)
    if (graph["values"][v].value("name", "") == "conv.weight") weight_value = static_cast<int>(v);
  ASSERT_GE(weight_value, 0);
  EXPECT_NE(edit([&](auto& g) { g["values"][weight_value]["name"] = "nope"; }).find("not in the tensor table"),
            std::string::npos);
  EXPECT_NE(edit([&](auto& g) {
              g["values"][weight_value]["shape"] = {4, 3, 3, 2};
            }).find("has shape"),
            std::string::npos);
  EXPECT_NE(
      edit([](auto& g) { g["nodes"][1]["inputs"][0] = g["nodes"][4]["outputs"][0]; }).find("before it is written"),
      std::string::npos);
  EXPECT_NE(edit([](auto& g) { g["nodes"][1]["op"] = "frobnicate"; }).find("unknown op 'frobnicate'"),
            std::string::npos);
  EXPECT_NE(edit([](auto& g) { g["nodes"][1]["attrs"]["stride"] = {0, 2}; }).find("bad stride"), std::string::npos);
  EXPECT_NE(edit([](auto& g) { g["nodes"][1]["attrs"]["colour"] = 3; }).find("unknown attribute 'colour'"),
            std::string::npos);
  EXPECT_NE(edit([](auto& g) { g["values"][1]["dtype"] = "i64"; }).find("recorded as i64"), std::string::npos);
  EXPECT_NE(edit([](auto& g) { g["nodes"][2]["outputs"] = g["nodes"][1]["outputs"]; }).find("not a fresh"),
            std::string::npos);
  // Numbers that are not integers, or do not fit, where integers are read (a float far out of
  // range once reached a plain cast).
  const std::string not_integer = "must be an integer";
  EXPECT_NE(edit([](auto& g) { g["nodes"][1]["inputs"][0] = 1.048e79; }).find(not_integer), std::string::npos);
  EXPECT_NE(edit([](auto& g) { g["nodes"][1]["outputs"][0] = 4294967297ull; }).find(not_integer), std::string::npos);
  EXPECT_NE(edit([](auto& g) { g["nodes"][1]["attrs"]["groups"] = 1.5; }).find(not_integer), std::string::npos);
  EXPECT_NE(edit([](auto& g) {
              g["nodes"][1]["attrs"]["stride"] = {1, 18446744073709551615ull};
            }).find(not_integer),
            std::string::npos);
  EXPECT_NE(edit([](auto& g) {
              g["symbols"]["batch"] = {{"example", 1e300}, {"max", 8}};
            }).find(not_integer),
            std::string::npos);
  EXPECT_NE(edit([](auto& g) { g["outputs"][0]["value"] = -3; }).find(not_integer), std::string::npos);
  auto float_shape = m;
  float_shape["tensors"][0]["shape"] = {2.5};
  EXPECT_NE(error_of(with_manifest(good, float_shape)).find("shape must be an integer"), std::string::npos);
  auto float_offset = m;
  float_offset["tensors"][0]["offset"] = 1e300;
  EXPECT_NE(error_of(with_manifest(good, float_offset)).find("offset must be an integer"), std::string::npos);
  auto lying = m;
  lying["graphs"]["main"]["interface"]["inputs"][0]["dtype"] = "f16";
  EXPECT_NE(error_of(with_manifest(good, lying)).find("disagrees with the graph"), std::string::npos);
  auto no_graph = m;
  no_graph.erase("graphs");
  EXPECT_NE(error_of(with_manifest(good, no_graph)).find("malformed"), std::string::npos);
}

// Fields read after loading (by the CLI, the API and the engine's saved plans) are checked when
// the bundle is read, so that no later reader meets a wrong type.
TEST(Bundle, RejectsMistypedDescriptiveFields) {
  auto good = tiny_bundle_bytes();
  const auto m = manifest_of(good);
  auto error_with = [&](const std::function<void(nlohmann::json&)>& change) {
    auto copy = m;
    change(copy);
    return error_of(with_manifest(good, copy));
  };
  EXPECT_NE(error_with([](auto& j) { j["format"] = nlohmann::json::object(); }).find("format is not kiln-bundle"),
            std::string::npos);
  EXPECT_NE(error_with([](auto& j) { j["precision"] = 16; }).find("'precision' is missing or of the wrong type"),
            std::string::npos);
  EXPECT_NE(error_with([](auto& j) { j["precision"] = "int4"; }).find("unknown precision \"int4\""), std::string::npos);
  EXPECT_NE(error_with([](auto& j) { j["model"] = nlohmann::json::array(); }).find("'model'"), std::string::npos);
  EXPECT_NE(error_with([](auto& j) { j["model"]["family"] = 3; }).find("'family'"), std::string::npos);
  EXPECT_NE(error_with([](auto& j) { j.erase("created"); }).find("malformed manifest"), std::string::npos);
  EXPECT_NE(error_with([](auto& j) {
              j["build"]["batch_sizes"] = {1, 0};
            }).find("'build.batch_sizes'"),
            std::string::npos);
  EXPECT_NE(error_with([](auto& j) {
              j["build"]["batch_sizes"] = {1, 1 << 20};
            }).find("'build.batch_sizes'"),
            std::string::npos);
  EXPECT_NE(error_with([](auto& j) {
              j["plans"] = {{"cuda", {{"device", 7}, {"precision", "fp16"}, {"plans", nlohmann::json::object()}}}};
            }).find("'plans'"),
            std::string::npos);
  EXPECT_NE(
      error_with([](auto& j) {
        j["plans"] = {{"cuda", {{"device", "GPU"}, {"precision", "fp16"}, {"plans", {{"batch=1", {{"conv", 2}}}}}}}};
      }).find("'plans'"),
      std::string::npos);
  EXPECT_EQ(error_with([](auto& j) {
              j["plans"] = {
                  {"cuda", {{"device", "GPU"}, {"precision", "fp16"}, {"plans", {{"batch=1", {{"conv", "gemm"}}}}}}}};
            }),
            "");
}

}  // namespace
}  // namespace kiln
