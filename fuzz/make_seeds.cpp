// Writes small valid inputs for the fuzz targets' corpora: two bundles (an image classifier;
// two graphs with integer inputs, a constant shared by both and a state), a safetensors file,
// torch.save archives (a state dict, a pickle that calls os.system, the legacy format) and
// tokenizer inputs.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

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

void put_le(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void fields(std::string& out, std::initializer_list<std::pair<uint64_t, int>> values) {
  for (const auto& [v, n] : values) put_le(out, v, n);
}

// A stored zip with torch's layout: one archive folder, zip64 end records (CRCs left zero).
std::string torch_zip(const std::vector<std::pair<std::string, std::string>>& records) {
  std::string out, central;
  for (const auto& [name, data] : records) {
    const uint64_t local = out.size(), size = data.size();
    // Flags, method (stored), time, date and CRC are zero.
    fields(out, {{0x04034b50, 4}, {45, 2}, {0, 2}, {0, 2}, {0, 4}, {0, 4}, {size, 4}, {size, 4}});
    fields(out, {{name.size(), 2}, {0, 2}});
    out += name + data;
    fields(central, {{0x02014b50, 4}, {45, 2}, {45, 2}, {0, 2}, {0, 2}, {0, 4}, {0, 4}, {size, 4}, {size, 4}});
    fields(central, {{name.size(), 2}, {0, 2}, {0, 2}, {0, 2}, {0, 2}, {0, 4}, {local, 4}});
    central += name;
  }
  const uint64_t offset = out.size(), n = records.size(), record = offset + central.size();
  out += central;
  fields(out, {{0x06064b50, 4}, {44, 8}, {45, 2}, {45, 2}, {0, 8}, {n, 8}, {n, 8}});  // zip64 end record
  fields(out, {{central.size(), 8}, {offset, 8}});
  fields(out, {{0x07064b50, 4}, {0, 4}, {record, 8}, {1, 4}});  // its locator
  fields(out, {{0x06054b50, 4}, {0, 4}, {n, 2}, {n, 2}, {central.size(), 4}, {offset, 4}, {0, 2}});
  return out;
}

// data.pkl as torch.save writes it for an OrderedDict of w (2x2 F32), h (a transposed 2x2 F16
// view) and p (an nn.Parameter viewing w's second row), with the _metadata attribute.
const char kStateDict[] =
    "\x80\x02"
    "ccollections\nOrderedDict\nq\x00)Rq\x01("
    "X\x01\x00\x00\x00wq\x02"
    "ctorch._utils\n_rebuild_tensor_v2\nq\x03((X\x07\x00\x00\x00storageq\x04"
    "ctorch\nFloatStorage\nq\x05X\x01\x00\x00\x00"
    "0q\x06X\x03\x00\x00\x00"
    "cpuq\x07K\x04tq\x08QK\x00K\x02K\x02"
    "\x86q\x09K\x02K\x01\x86q\n\x89h\x00)Rq\x0btq\x0cRq\x0d"
    "X\x01\x00\x00\x00hq\x0eh\x03((h\x04"
    "ctorch\nHalfStorage\nq\x0fX\x01\x00\x00\x00"
    "1q\x10h\x07K\x04tq\x11QK\x00"
    "K\x02K\x02\x86q\x12K\x01K\x02\x86q\x13\x89h\x00)Rq\x14tq\x15Rq\x16"
    "X\x01\x00\x00\x00pq\x17"
    "ctorch._utils\n_rebuild_parameter\nq\x18h\x03((h\x04h\x05h\x06h\x07K\x04tq\x19QK\x02"
    "K\x02\x85q\x1aK\x01\x85q\x1b\x89h\x00)Rq\x1ctq\x1dRq\x1e\x88h\x00)Rq\x1f\x87q Rq!u"
    "}q\x22X\x09\x00\x00\x00_metadataq#h\x00)Rq$X\x00\x00\x00\x00q%}q&X\x07\x00\x00\x00versionq'K\x01sssb.";

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

void write_torch_seeds(const std::string& dir) {
  const std::string pickle(kStateDict, sizeof kStateDict - 1);
  const std::string w(16, '\x3f'), h(8, '\x3c');
  write_file(dir + "/state_dict.bin", torch_zip({{"archive/data.pkl", pickle},
                                                 {"archive/byteorder", "little"},
                                                 {"archive/data/0", w},
                                                 {"archive/data/1", h},
                                                 {"archive/version", "3\n"}}));
  const std::string os_system = std::string("\x80\x02") + "cos\nsystem\nX\x02" + std::string(3, '\0') + "ls\x85R.";
  write_file(dir + "/os_system.bin", torch_zip({{"archive/data.pkl", os_system}, {"archive/version", "3\n"}}));
  write_file(dir + "/legacy.bin", "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.");
}

}  // namespace

// Tokenizer seeds: text (mode 0), a byte-level BPE config (mode 1) and, when the test data has
// one, a real SentencePiece model from a checkpoint (mode 2).
void write_tokenizer_seeds(const std::string& dir, const std::string& data) {
  write_file(dir + "/text", std::string(1, '\0') + "The 1000 cats sat.... \xC3\xA9t\xC3\xA9 <mask> \xF0\x9F\x98\x80");
  write_file(dir + "/config",
             std::string("\x01") + R"({"type": "byte_bpe", "vocab": {"a": 0, "b": 1, "ab": 2, "<s>": 3, "</s>": 4},)" +
                 R"( "merges": ["a b"], "added": ["<s>", "</s>"], "bos": 3, "eos": 4, "special_ids": [3, 4]})");
  std::error_code ec;
  for (const auto& ckpt : std::filesystem::directory_iterator(data + "/checkpoints", ec)) {
    std::ifstream spm(ckpt.path() / "source.spm", std::ios::binary);
    if (!spm.good()) continue;
    write_file(dir + "/sentencepiece", "\x02" + std::string(std::istreambuf_iterator<char>(spm), {}));
    return;
  }
}

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr,
                 "usage: make_seeds BUNDLE_CORPUS_DIR SAFETENSORS_CORPUS_DIR TORCH_CORPUS_DIR TOKENIZER_CORPUS_DIR "
                 "TEST_DATA_DIR\n");
    return 2;
  }
  for (int i = 1; i < 5; ++i) std::filesystem::create_directories(argv[i]);
  write_tokenizer_seeds(argv[4], argv[5]);
  kiln::write_bundle(std::string(argv[1]) + "/classifier.bundle", classifier(), kiln::BuildInfo{});
  kiln::write_bundle(std::string(argv[1]) + "/two-graphs.bundle", two_graphs(), kiln::BuildInfo{});
  std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"F16","shape":[2],"data_offsets":[16,20]}})";
  uint64_t n = header.size();
  std::ofstream out(std::string(argv[2]) + "/seed.safetensors", std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << std::string(20, '\x3c');
  write_torch_seeds(argv[3]);
  return 0;
}
