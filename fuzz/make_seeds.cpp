// Writes small valid inputs for the fuzz targets' corpora: a tiny bundle and a safetensors file.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "bundle/bundle.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_seeds BUNDLE_CORPUS_DIR SAFETENSORS_CORPUS_DIR\n");
    return 2;
  }
  std::filesystem::create_directories(argv[1]);
  std::filesystem::create_directories(argv[2]);
  kiln::ModelDefinition def;
  def.family = "seed";
  def.architecture = "seed";
  def.task = "image_classification";
  int x = def.graph.add_value(3, "input");
  def.graph.set_input(x);
  kiln::Node conv;
  conv.name = "conv";
  conv.op = kiln::Op::Conv2d;
  conv.kernel = 3;
  conv.pad.same = true;
  conv.groups = 1;
  conv.weight = "conv.weight";
  conv.bias = "conv.bias";
  conv.act = kiln::Activation::SiLU;
  conv.inputs = {x};
  conv.output = def.graph.add_value(2, "features");
  def.graph.add_node(conv);
  kiln::Node pool;
  pool.name = "pool";
  pool.op = kiln::Op::GlobalAvgPool;
  pool.inputs = {conv.output};
  pool.output = def.graph.add_value(2);
  def.graph.add_node(pool);
  def.graph.set_output(pool.output);
  def.weights["conv.weight"] = kiln::Tensor({2, 3, 3, 3});
  def.weights["conv.bias"] = kiln::Tensor({2});
  def.task_config = {{"preprocess", {{"input_size", {3, 4, 4}}, {"mean", {0, 0, 0}}, {"std", {1, 1, 1}}}},
                     {"labels", {"a", "b"}}};
  kiln::write_bundle(std::string(argv[1]) + "/seed.bundle", def, kiln::BuildInfo{});
  std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"F16","shape":[2],"data_offsets":[16,20]}})";
  uint64_t n = header.size();
  std::ofstream out(std::string(argv[2]) + "/seed.safetensors", std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << std::string(20, '\x3c');
  return 0;
}
