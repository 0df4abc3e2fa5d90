// Writes small valid inputs for the fuzz targets' corpora: two bundles (an image classifier;
// two graphs with integer inputs, a constant shared by both and a state) and a safetensors file.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "bundle/bundle.h"
#include "graph/builder.h"

namespace {

kiln::Tensor filled(std::vector<int64_t> shape) {
  kiln::Tensor t(std::move(shape));
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = 0.01f * static_cast<float>(i % 13) - 0.05f;
  return t;
}

kiln::ModelDefinition classifier() {
  kiln::ModelDefinition def;
  def.family = "seed";
  def.architecture = "seed";
  def.task = "image_classification";
  kiln::GraphBuilder b(def);
  int x = b.input("pixels", kiln::DType::F32, {{0, "batch"}, {3, ""}, {4, ""}, {4, ""}});
  x = b.op("transpose", "nhwc", {x}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  kiln::ConvOptions conv;
  conv.same = true;
  conv.act = kiln::Activation::SiLU;
  x = b.conv2d(x, "conv", filled({2, 3, 3, 3}), filled({2}), conv);
  x = b.global_avg_pool(x, "pool");
  b.output("logits", b.op("reshape", "flatten", {x}, {{"shape", std::vector<int64_t>{0, -1}}}));
  def.task_config = {{"graph", "main"},
                     {"preprocess", {{"input_size", {3, 4, 4}}, {"mean", {0, 0, 0}}, {"std", {1, 1, 1}}}},
                     {"labels", {"a", "b"}}};
  return def;
}

kiln::ModelDefinition two_graphs() {
  kiln::ModelDefinition def;
  def.family = "seed";
  def.architecture = "seed2";
  def.task = "test";
  {
    kiln::GraphBuilder b(def, "encoder");
    const int ids = b.input("ids", kiln::DType::I64, {{0, "batch"}, {0, "seq"}});
    const int table = b.weight("embed", filled({5, 4}));
    b.output("hidden", b.op("gather", "embed", {table, ids}));
  }
  {
    kiln::GraphBuilder b(def, "decoder");
    const int cache = b.graph().add_state("cache", kiln::DType::F32, {{0, "batch"}, {8, ""}, {4, ""}});
    const int pos = b.input("position", kiln::DType::I64, {{1, ""}});
    const int row = b.input("row", kiln::DType::F32, {{0, "batch"}, {1, ""}, {4, ""}});
    const int updated = b.op("dynamic_update_slice", "append", {cache, row, pos}, {{"axis", int64_t{1}}});
    const int table = b.weight("embed", filled({5, 4}));
    b.output("scores", b.op("matmul", "scores", {updated, table}, {{"transpose_b", int64_t{1}}}));
  }
  def.task_config = {{"graph", "encoder"}};
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_seeds BUNDLE_CORPUS_DIR SAFETENSORS_CORPUS_DIR\n");
    return 2;
  }
  std::filesystem::create_directories(argv[1]);
  std::filesystem::create_directories(argv[2]);
  kiln::write_bundle(std::string(argv[1]) + "/classifier.bundle", classifier(), kiln::BuildInfo{});
  kiln::write_bundle(std::string(argv[1]) + "/two-graphs.bundle", two_graphs(), kiln::BuildInfo{});
  std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"F16","shape":[2],"data_offsets":[16,20]}})";
  uint64_t n = header.size();
  std::ofstream out(std::string(argv[2]) + "/seed.safetensors", std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << std::string(20, '\x3c');
  return 0;
}
