// The torch.save (zip) checkpoint reader on archives built here byte for byte as torch.save
// writes them, and on hostile or corrupt ones: each must fail with one clear message, never run
// anything, crash or read out of bounds.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>

#include "checkpoints/torch_pickle.h"
#include "core/error.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

using namespace std::string_literals;

void put_le(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Writes opcodes as Python's pickler does at protocol 2 (torch.save's default): strings and
// globals are memoized, so a repeat becomes a BINGET, and tuples are memoized after they are built.
class Pickler {
 public:
  Pickler() { out_ = "\x80\x02"; }
  const std::string& bytes() const { return out_; }

  Pickler& op(char c) {
    out_.push_back(c);
    return *this;
  }
  Pickler& raw(const std::string& s) {
    out_ += s;
    return *this;
  }
  Pickler& put() {
    const int index = next_++;
    if (index < 256) return op('q').op(static_cast<char>(index));
    op('r');
    put_le(out_, index, 4);
    return *this;
  }
  Pickler& get(int index) {
    if (index < 256) return op('h').op(static_cast<char>(index));
    op('j');
    put_le(out_, index, 4);
    return *this;
  }
  Pickler& str(const std::string& s) {
    if (memoized("s" + s)) return *this;
    op('X');
    put_le(out_, s.size(), 4);
    return raw(s).put();
  }
  Pickler& global(const std::string& module, const std::string& name) {
    if (memoized("g" + module + "\n" + name)) return *this;
    return op('c').raw(module + "\n" + name + "\n").put();
  }
  // save_long at protocol 2: BININT1, BININT2, BININT, then LONG1.
  Pickler& integer(int64_t v) {
    if (v >= 0 && v < 0x100) return op('K').op(static_cast<char>(v));
    if (v >= 0 && v < 0x10000) {
      op('M');
      put_le(out_, v, 2);
      return *this;
    }
    if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      put_le(out_, static_cast<uint64_t>(v), 4);
      return *this;
    }
    std::string bytes;  // encode_long: the shortest little-endian two's complement
    do {
      bytes.push_back(static_cast<char>(v & 0xff));
      v >>= 8;
    } while (!((v == 0 && !(bytes.back() & 0x80)) || (v == -1 && (bytes.back() & 0x80))));
    return op('\x8a').op(static_cast<char>(bytes.size())).raw(bytes);
  }
  Pickler& ints(const std::vector<int64_t>& values) {
    if (values.empty()) return op(')');
    if (values.size() > 3) op('(');
    for (int64_t v : values) integer(v);
    return op(values.size() > 3 ? 't' : static_cast<char>(0x84 + values.size())).put();
  }
  Pickler& ordered_dict() { return global("collections", "OrderedDict").op(')').op('R').put(); }

 private:
  bool memoized(const std::string& key) {
    const auto it = memo_.find(key);
    if (it != memo_.end()) {
      get(it->second);
      return true;
    }
    memo_[key] = next_;
    return false;
  }

  std::string out_;
  int next_ = 0;
  std::map<std::string, int> memo_;
};

struct TensorSpec {
  std::string name, storage_class, key;
  int64_t numel;  // of the storage
  int64_t offset;
  std::vector<int64_t> size, stride;
};

// What torch.save writes for Tensor.__reduce_ex__: _rebuild_tensor_v2(storage, offset, size,
// stride, requires_grad, backward_hooks), the storage as a persistent id.
void save_tensor(Pickler& p, const TensorSpec& t) {
  p.global("torch._utils", "_rebuild_tensor_v2").op('(');
  p.op('(').str("storage").global("torch", t.storage_class).str(t.key).str("cpu").integer(t.numel).op('t').put();
  p.op('Q').integer(t.offset).ints(t.size).ints(t.stride).op('\x89').ordered_dict().op('t').put().op('R').put();
}

// An OrderedDict state dict with its _metadata attribute (module versions), as
// module.state_dict() returns it; `extra` is pickled after the tensors, before SETITEMS.
std::string state_dict(
    const std::vector<TensorSpec>& tensors, const std::function<void(Pickler&)>& extra = [](Pickler&) {}) {
  Pickler p;
  p.ordered_dict().op('(');
  for (const auto& t : tensors) {
    p.str(t.name);
    save_tensor(p, t);
  }
  extra(p);
  p.op('u');
  p.op('}').put().str("_metadata").ordered_dict().op('(');
  for (const char* module : {"", "fc"}) p.str(module).op('}').put().str("version").integer(1).op('s');
  p.op('u').op('s').op('b').op('.');
  return p.bytes();
}

struct ZipOptions {
  bool zip64_extra = false;  // 32-bit fields 0xffffffff with the values in zip64 extra fields
  bool zip64_end = true;     // zip64 end records, which torch's writer always adds
  uint16_t method = 0;
};

void fields(std::string& out, std::initializer_list<std::pair<uint64_t, int>> values) {
  for (const auto& [v, n] : values) put_le(out, v, n);
}

uint32_t crc32(const std::string& data) {
  uint32_t crc = 0xffffffff;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320 & (0 - (crc & 1)));
  }
  return ~crc;
}

// A zip as torch's writer lays it out: records under one folder, stored, each with an "FB" extra
// field that pads its data to a 64-byte boundary.
std::string zip(const std::vector<std::pair<std::string, std::string>>& records, const ZipOptions& o = {}) {
  std::string out, central;
  for (const auto& [name, data] : records) {
    const uint64_t local = out.size();
    const uint64_t pad = (64 - (local + 30 + name.size() + 4) % 64) % 64;
    const uint32_t crc = crc32(data);
    fields(out,
           {{0x04034b50, 4}, {45, 2}, {0, 2}, {o.method, 2}, {0, 4}, {crc, 4}, {data.size(), 4}, {data.size(), 4}});
    fields(out, {{name.size(), 2}, {4 + pad, 2}});
    out += name + "FB";
    fields(out, {{pad, 2}});
    out += std::string(pad, 'Z') + data;

    const uint64_t marker = 0xffffffff;
    std::string extra;
    if (o.zip64_extra) fields(extra, {{1, 2}, {24, 2}, {data.size(), 8}, {data.size(), 8}, {local, 8}});
    fields(central, {{0x02014b50, 4}, {45, 2}, {45, 2}, {0, 2}, {o.method, 2}, {0, 4}, {crc, 4}});
    fields(central, {{o.zip64_extra ? marker : data.size(), 4}, {o.zip64_extra ? marker : data.size(), 4}});
    fields(central, {{name.size(), 2}, {extra.size(), 2}, {0, 2}, {0, 2}, {0, 2}, {0, 4}});
    fields(central, {{o.zip64_extra ? marker : local, 4}});
    central += name + extra;
  }
  const uint64_t cd_offset = out.size(), n = records.size();
  out += central;
  if (o.zip64_end) {
    const uint64_t record = out.size();
    fields(out, {{0x06064b50, 4}, {44, 8}, {45, 2}, {45, 2}, {0, 8}, {n, 8}, {n, 8}});
    fields(out, {{central.size(), 8}, {cd_offset, 8}, {0x07064b50, 4}, {0, 4}, {record, 8}, {1, 4}});
  }
  fields(out, {{0x06054b50, 4}, {0, 4}, {n, 2}, {n, 2}, {central.size(), 4}, {cd_offset, 4}, {0, 2}});
  return out;
}

std::string floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

std::string halves(const std::vector<uint16_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 2);
}

// A whole torch.save archive: data.pkl, byteorder, data/<key> for each storage, version.
std::string archive(const std::string& pickle, const std::map<std::string, std::string>& storages,
                    const ZipOptions& o = {}) {
  std::vector<std::pair<std::string, std::string>> records = {{"archive/data.pkl", pickle},
                                                              {"archive/byteorder", "little"}};
  for (const auto& [key, bytes] : storages) records.emplace_back("archive/data/" + key, bytes);
  records.emplace_back("archive/version", "3\n");
  records.emplace_back("archive/.data/serialization_id", "1234567890");
  return zip(records, o);
}

std::span<const uint8_t> span_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string error_of(const std::string& file) {
  return test::error_message([&] { TorchCheckpointFile::from_bytes(span_of(file), "t.bin"); });
}

#define EXPECT_ERROR(file, text) EXPECT_NE(error_of(file).find(text), std::string::npos) << error_of(file)

// w: 2x3 F32; b: F16 [3]; wt: w's storage viewed transposed; row: w[1] (an offset view);
// s: a BF16 scalar.
const std::vector<TensorSpec> kTensors = {
    {"w", "FloatStorage", "0", 6, 0, {2, 3}, {3, 1}},  {"b", "HalfStorage", "1", 3, 0, {3}, {1}},
    {"wt", "FloatStorage", "0", 6, 0, {3, 2}, {1, 3}}, {"row", "FloatStorage", "0", 6, 3, {3}, {1}},
    {"s", "BFloat16Storage", "2", 1, 0, {}, {}},
};
// F16 1.0, -2.0, 65504 and BF16 1.0 as bit patterns.
const std::map<std::string, std::string> kStorages = {
    {"0", floats({1, 2, 3, 4, 5, 6})}, {"1", halves({0x3C00, 0xC000, 0x7BFF})}, {"2", halves({0x3F80})}};

void expect_state_dict(const TorchCheckpointFile& f) {
  ASSERT_EQ(f.tensors().size(), 5u);
  EXPECT_EQ(f.info("w").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.info("w").dtype, StDtype::F32);
  EXPECT_EQ(f.info("b").dtype, StDtype::F16);
  EXPECT_EQ(f.info("s").dtype, StDtype::BF16);
  EXPECT_EQ(f.info("wt").stride, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(f.info("row").offset, 3u);
  EXPECT_EQ(f.info("row").storage, "0");
  EXPECT_EQ(f.to_float("w").data, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(f.to_float("b").data, (std::vector<float>{1.0f, -2.0f, 65504.0f}));
  EXPECT_EQ(f.to_float("wt").data, (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(f.to_float("wt").shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(f.to_float("row").data, (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(f.to_float("s").data, (std::vector<float>{1.0f}));
  EXPECT_TRUE(f.to_float("s").shape.empty());
}

TEST(TorchPickle, ReadsStateDictAsTorchSaveWritesIt) {
  const std::string file = archive(state_dict(kTensors), kStorages);
  expect_state_dict(TorchCheckpointFile::from_bytes(span_of(file), "t.bin"));
}

TEST(TorchPickle, ReadsZip64FieldsAndPlainEndRecords) {
  const std::string pickle = state_dict(kTensors);
  expect_state_dict(
      TorchCheckpointFile::from_bytes(span_of(archive(pickle, kStorages, {.zip64_extra = true})), "t.bin"));
  expect_state_dict(
      TorchCheckpointFile::from_bytes(span_of(archive(pickle, kStorages, {.zip64_end = false})), "t.bin"));
}

TEST(TorchPickle, OpensFile) {
  const std::string path = test::binary_dir() + "/torch-pickle-test.bin";
  std::ofstream(path, std::ios::binary) << archive(state_dict(kTensors), kStorages);
  TorchCheckpointFile f(path);
  expect_state_dict(f);
  EXPECT_EQ(f.path(), path);
  EXPECT_NE(test::error_message([&] { TorchCheckpointFile(path + ".missing"); }).find("cannot open"),
            std::string::npos);
}

TEST(TorchPickle, ConvertsDoubleRefusesIntegersAndSkipsOtherValues) {
  const std::vector<TensorSpec> tensors = {{"d", "DoubleStorage", "0", 2, 0, {2}, {1}},
                                           {"n", "LongStorage", "1", 1, 0, {1}, {1}}};
  const double d[2] = {0.5, -3.0};
  const std::string doubles(reinterpret_cast<const char*>(d), sizeof d);
  const auto pickle = state_dict(
      tensors, [](Pickler& p) { p.str("epoch").integer(7).str("lr").op('G').raw("\x3f\x50\x62\x4d\xd2\xf1\xa9\xfc"); });
  const std::string file = archive(pickle, {{"0", doubles}, {"1", std::string(8, '\0')}});
  const auto f = TorchCheckpointFile::from_bytes(span_of(file), "t.bin");
  EXPECT_EQ(f.tensors().size(), 2u);  // epoch and lr are skipped
  EXPECT_EQ(f.to_float("d").data, (std::vector<float>{0.5f, -3.0f}));
  EXPECT_EQ(f.info("n").dtype, StDtype::I64);
  EXPECT_NE(test::error_message([&] { f.to_float("n"); }).find("tensor 'n' is I64, not floating point"),
            std::string::npos);
  EXPECT_NE(test::error_message([&] { f.info("missing"); }).find("no tensor named 'missing'"), std::string::npos);
}

// nn.Parameter pickles as _rebuild_parameter(tensor, requires_grad, backward_hooks); a plain dict
// works as well as an OrderedDict.
std::string parameter_dict(const TensorSpec& t) {
  Pickler p;
  p.op('}').put().str(t.name).global("torch._utils", "_rebuild_parameter");
  save_tensor(p, t);
  p.op('\x88').ordered_dict().op('\x87').put().op('R').put().op('s').op('.');
  return p.bytes();
}

TEST(TorchPickle, ReadsParametersAndLargeIntegers) {
  const std::string file =
      archive(parameter_dict({"p", "FloatStorage", "0", 3, 1, {2}, {1}}), {{"0", floats({7, 8, 9})}});
  const auto f = TorchCheckpointFile::from_bytes(span_of(file), "t.bin");
  EXPECT_EQ(f.to_float("p").data, (std::vector<float>{8, 9}));
  // Counts past 32 bits come as LONG1; the storage's size is then checked against its record.
  const int64_t big = (int64_t{1} << 33) + 2;
  EXPECT_ERROR(archive(parameter_dict({"p", "FloatStorage", "0", big, 0, {2}, {1}}), {{"0", floats({1, 2})}}),
               "storage '0' has 8 bytes but 8589934594 F32 elements need 34359738376");
}

std::string with_pickle(const std::string& pickle) { return archive(pickle, kStorages); }

// PROTO 2, then the opcodes under test (kept apart: a hex escape would swallow a following 'c').
std::string proto2(const std::string& rest) { return "\x80\x02"s + rest; }

TEST(TorchPickle, RefusesCodeExecution) {
  // The classic payloads: GLOBAL of a callable, then REDUCE with a command.
  EXPECT_ERROR(with_pickle(proto2("cos\nsystem\nX\x02\x00\x00\x00ls\x85R."s)), "refers to os.system");
  EXPECT_ERROR(with_pickle(proto2("cposix\nsystem\nX\x02\x00\x00\x00ls\x85R."s)), "refers to posix.system");
  EXPECT_ERROR(with_pickle(proto2("cbuiltins\neval\nX\x01\x00\x00\x00"
                                  "1\x85R."s)),
               "refers to builtins.eval");
  EXPECT_ERROR(with_pickle(proto2("c__builtin__\ngetattr\n.")), "__builtin__.getattr");
  // The legacy storage path and other rebuild functions are not state-dict tensors.
  EXPECT_ERROR(with_pickle(proto2("ctorch.storage\n_load_from_bytes\n.")), "torch.storage._load_from_bytes");
  EXPECT_ERROR(with_pickle(proto2("ctorch._utils\n_rebuild_tensor\n.")), "torch._utils._rebuild_tensor,");
  EXPECT_ERROR(with_pickle(proto2("ctorch\nComplexFloatStorage\n.")), "torch.ComplexFloatStorage is not supported");
  // Allowed globals used the wrong way.
  EXPECT_ERROR(with_pickle(proto2("ctorch\nFloatStorage\n)R.")), "calls the storage class torch.FloatStorage");
  EXPECT_ERROR(with_pickle(proto2("ccollections\nOrderedDict\nK\x01\x85R.")), "OrderedDict with arguments");
  EXPECT_ERROR(with_pickle(proto2("K\x01)R.")), "calls an object of type int");
  EXPECT_ERROR(with_pickle(proto2("]}b.")), "sets the state of a list");
  // Opcodes a state dict does not use (here INST), and other protocols (4, with its FRAME).
  EXPECT_ERROR(with_pickle(proto2("ios\nsystem\n.")), "opcode 0x69 at byte 2");
  EXPECT_ERROR(with_pickle("\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00."s), "pickle protocol 4");
}

TEST(TorchPickle, RefusesBadTensors) {
  const auto with = [](const TensorSpec& t, const std::string& storage) {
    return archive(state_dict({t}), {{t.key, storage}});
  };
  const std::string six = floats({1, 2, 3, 4, 5, 6}), two = floats({1, 2});
  EXPECT_ERROR(archive(state_dict(kTensors), {{"0", six}, {"1", halves({1, 2, 3})}}),
               "storage '2' is missing from the archive");
  EXPECT_ERROR(with({"w", "FloatStorage", "0", 4, 0, {2, 3}, {3, 1}}, floats({1, 2, 3, 4})),
               "reads element 5 of storage '0', which has 4");
  EXPECT_ERROR(with({"w", "FloatStorage", "0", 6, 1, {2, 3}, {3, 1}}, six), "reads element 6");
  EXPECT_ERROR(with({"w", "FloatStorage", "0", 6, 0, {3, 2}, {1, 4}}, six), "reads element 6");
  EXPECT_ERROR(with({"w", "FloatStorage", "0", 6, 0, {2, 3}, {3, 1}}, floats({1, 2, 3})), "has 12 bytes but 6 F32");
  EXPECT_ERROR(with({"w", "FloatStorage", "0", 2, -1, {2}, {1}}, two), "bad storage offset");
  EXPECT_ERROR(with({"w", "FloatStorage", "0", 2, 0, {-2}, {1}}, two), "negative");
  EXPECT_ERROR(with({"w", "FloatStorage", "0", 2, 0, {2}, {-1}}, two), "negative");
  EXPECT_ERROR(with({"w", "FloatStorage", "0", 2, 0, {2}, {1, 1}}, two), "1 sizes and 2 strides");
  EXPECT_ERROR(with({"w", "FloatStorage", "0", 2, 0, std::vector<int64_t>(9, 1), std::vector<int64_t>(9, 1)}, two),
               "at most 8");
  // Element counts that overflow, and zero strides that would expand a tiny storage hugely.
  const int64_t huge = int64_t{1} << 40;
  EXPECT_ERROR(with({"w", "FloatStorage", "0", 2, 0, {huge, huge}, {0, 0}}, two), "overflow");
  EXPECT_ERROR(with({"w", "FloatStorage", "0", 2, 0, {huge}, {0}}, two), "more elements than its storage");
  EXPECT_ERROR(with({"w", "FloatStorage", "0", 2, huge, {1}, {1}}, two), "reads element 1099511627776");
  // A broadcast within the bound is a legitimate expanded view.
  const std::string expanded = with({"w", "FloatStorage", "0", 1, 0, {2, 2}, {0, 0}}, floats({3}));
  const auto f = TorchCheckpointFile::from_bytes(span_of(expanded), "t.bin");
  EXPECT_EQ(f.to_float("w").data, (std::vector<float>{3, 3, 3, 3}));
}

TEST(TorchPickle, RefusesCorruptPickles) {
  const std::string good = state_dict(kTensors);
  EXPECT_EQ(error_of(with_pickle(good)), "");
  EXPECT_ERROR(with_pickle(good.substr(0, good.size() / 2)), "data.pkl is truncated");
  EXPECT_ERROR(with_pickle(good.substr(0, good.size() - 1)), "data.pkl is truncated");  // no STOP
  EXPECT_ERROR(with_pickle(proto2("h\x05.")), "memo entry 5 that was never stored");
  EXPECT_ERROR(with_pickle(proto2("j\xff\xff\xff\x7f.")), "memo entry 2147483647");
  EXPECT_ERROR(with_pickle(proto2(".")), "empty pickle stack");
  EXPECT_ERROR(with_pickle(proto2("}(s.")), "empty pickle stack");  // SETITEM may not reach below a MARK
  EXPECT_ERROR(with_pickle(proto2("t.")), "never opened");
  EXPECT_ERROR(with_pickle(proto2("}(K\x01u.")), "odd number");
  EXPECT_ERROR(with_pickle(proto2(")K\x01K\x02s.")), "adds items to a tuple");
  EXPECT_ERROR(with_pickle(proto2("\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09.")), "9-byte integer");
  EXPECT_ERROR(with_pickle(proto2("X\xff\xff\xff\xff.")), "truncated");
  EXPECT_ERROR(with_pickle(proto2("c" + std::string(1000, 'a'))), "longer than 256 bytes");
  EXPECT_ERROR(with_pickle(proto2("].")), "holds a list, not a state dict");
  EXPECT_ERROR(with_pickle(proto2("}X\x01\x00\x00\x00m}s."s)), "only nested dicts");
  EXPECT_ERROR(with_pickle(proto2("K\x01Q.")), "persistent id is not");
  EXPECT_ERROR(with_pickle(proto2("(X\x07\x00\x00\x00storageK\x01K\x01K\x01K\x01tQ."s)),
               "persistent id names int rather than a storage class");
}

TEST(TorchPickle, BoundsNestingAndSize) {
  EXPECT_ERROR(with_pickle(proto2(std::string(100000, '('))), "nests more than 64 MARKs");
  EXPECT_ERROR(with_pickle(proto2(std::string(100000, ']'))), "more than 65536 values");
  // Lists inside lists, 50000 deep: built without recursion, then refused as not a dict.
  EXPECT_ERROR(with_pickle(proto2(std::string(50000, ']') + std::string(49999, 'a') + ".")), "holds a list");
  // Over a million small objects appended to one list.
  std::string many = "]";
  for (int i = 0; i < 600000; ++i) many += ")a";
  EXPECT_ERROR(with_pickle(proto2(many + ".")), "builds more than");
}

TEST(TorchPickle, RefusesOtherFormatsAndCorruptArchives) {
  // The legacy format starts with a pickled magic number; the preview format with PYTORCH1.
  EXPECT_ERROR("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19."s, "legacy torch.save format");
  EXPECT_ERROR("PYTORCH1"s, "not a torch.save zip archive");
  EXPECT_ERROR(""s, "not a torch.save zip archive");
  const std::string good = archive(state_dict(kTensors), kStorages);
  EXPECT_ERROR(good.substr(0, good.size() - 10), "end-of-central-directory");
  EXPECT_ERROR(good.substr(0, good.size() / 2), "end-of-central-directory");
  EXPECT_ERROR(archive(state_dict(kTensors), kStorages, {.method = 8}), "is compressed (zip method 8)");
  EXPECT_ERROR(zip({{"data.pkl", state_dict(kTensors)}}), "not inside an archive folder");
  EXPECT_ERROR(zip({{"a/data.pkl", state_dict(kTensors)}, {"b/byteorder", "little"}}), "outside the archive folder");
  EXPECT_ERROR(zip({{"a/data.pkl", "x"}, {"a/data.pkl", "y"}}), "appears twice");
  EXPECT_ERROR(zip({{"a/version", "3\n"}}), "no data.pkl");
  EXPECT_ERROR(zip({{"a/data.pkl", "x"}, {"a/constants.pkl", "y"}}), "TorchScript");
  EXPECT_ERROR(zip({{"a/data.pkl", state_dict(kTensors)}, {"a/byteorder", "big"}}), "byte order is 'big'");
  // Directory offsets and sizes that point outside the file or across records.
  std::string plain = archive(state_dict(kTensors), kStorages, {.zip64_end = false});
  plain[plain.size() - 22 + 19] = '\x7f';  // the directory's offset
  EXPECT_ERROR(plain, "central directory lies outside");
  std::string bad64 = good;
  bad64[bad64.size() - 22 - 20 + 15] = '\x7f';  // the locator's offset of the zip64 record
  EXPECT_ERROR(bad64, "zip64 end record is missing or corrupt");
  std::string bad_size = zip({{"a/data.pkl", "x"}});
  const size_t size_field = bad_size.find("PK\x01\x02"s) + 20;
  bad_size[size_field] = bad_size[size_field + 4] = '\x7f';
  EXPECT_ERROR(bad_size, "runs into the zip central directory");
  std::string bad_local = zip({{"a/data.pkl", "x"}, {"a/byteorder", "little"}});
  bad_local[bad_local.find("PK\x03\x04"s, 1) + 3] = '\x05';
  EXPECT_ERROR(bad_local, "record 'a/byteorder' has no local header");
  std::string renamed = zip({{"a/data.pkl", "x"}});
  renamed[30 + 2] = 'D';  // the local header's copy of the name
  EXPECT_ERROR(renamed, "record 'a/data.pkl' has another name in its local header");
  std::string count = zip({{"a/data.pkl", "x"}}, {.zip64_end = false});
  count[count.size() - 22 + 10] = count[count.size() - 22 + 8] = '\x09';
  EXPECT_ERROR(count, "claims 9 entries");
}

}  // namespace
}  // namespace kiln
