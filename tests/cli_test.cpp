// The `kiln` command line on good and bad input. Bad input must give exactly one line on stderr,
// "kiln: error: ...", and a non-zero exit status: never a crash, never a wrong answer.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backends/engine.h"
#include "bundle/bundle.h"
#include "checkpoints/safetensors.h"
#include "tests/test_support.h"
#include "tests/token_graph.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string kiln_bin() { return test::binary_dir() + "/bin/kiln"; }
std::string transplant() { return test::data_path("checkpoints/efficientnet_b0.tfhub-transplant"); }

std::string work_dir() { return test::process_dir("cli-test"); }

// Builds the transplant checkpoint once for all tests.
std::string good_bundle() {
  static std::string path = [] {
    std::string p = work_dir() + "/b0.bundle";
    std::string out;
    EXPECT_EQ(test::run_command(kiln_bin() + " build " + transplant() + " -o " + p + " --batch 1,4", &out), 0) << out;
    return p;
  }();
  return path;
}

void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A safetensors file with the tensors of `src` as `edit` leaves their bytes (it returns false
// to leave a tensor out).
void write_safetensors_edited(const std::string& src, const std::string& dst,
                              const std::function<bool(const std::string& name, std::string& raw)>& edit) {
  SafetensorsFile f(src);
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, info] : f.tensors()) {
    const auto bytes = f.raw(name);
    std::string raw(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (!edit(name, raw)) continue;
    const char* dtype = info.dtype == StDtype::F32 ? "F32" : "I64";
    header[name] = {{"dtype", dtype}, {"shape", info.shape}, {"data_offsets", {data.size(), data.size() + raw.size()}}};
    data += raw;
  }
  std::string h = header.dump();
  uint64_t n = h.size();
  write_bytes(dst, std::string(reinterpret_cast<const char*>(&n), 8) + h + data);
}

// Runs kiln and expects failure with a single "kiln: error:" line that contains `needle`.
void expect_clean_failure(const std::string& args, const std::string& needle) {
  std::string out;
  int rc = test::run_command(kiln_bin() + " " + args, &out);
  EXPECT_NE(rc, 0) << args;
  EXPECT_LT(rc, 128) << "killed by a signal: " << args;
  EXPECT_EQ(out.rfind("kiln: error: ", 0), 0u) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_NE(out.find(needle), std::string::npos) << "expected '" << needle << "' in: " << out;
}

TEST(Cli, ClassifiesAndPrintsJson) {
  std::string out;
  std::string images = test::source_dir() + "/samples/cat.png " + test::source_dir() + "/samples/coffee.webp";
  ASSERT_EQ(
      test::run_command(
          kiln_bin() + " classify " + good_bundle() + " " + images + " --json --logits --top 3 2>/dev/null", &out),
      0);
  std::istringstream lines(out);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["top"].size(), 3u);
    EXPECT_EQ(j["logits"].size(), 1000u);
    EXPECT_GT(j["top"][0]["prob"].get<double>(), j["top"][1]["prob"].get<double>());
    ++count;
  }
  EXPECT_EQ(count, 2);
  ASSERT_EQ(test::run_command(kiln_bin() + " inspect --json " + good_bundle(), &out), 0);
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["model"]["architecture"], "efficientnet_b0");
  EXPECT_EQ(j["build"]["batch_sizes"], nlohmann::json({1, 4}));
  EXPECT_EQ(j["graphs"]["main"]["inputs"],
            nlohmann::json::parse(R"([{"name": "pixels", "dtype": "f32", "shape": ["batch", 3, 224, 224]}])"));
  EXPECT_EQ(j["graphs"]["main"]["outputs"], nlohmann::json::parse(R"([{"name": "logits", "dtype": "f32"}])"));
  EXPECT_EQ(j["summary"]["parameters"], 5267540);
  // Built here, the bundle holds the CPU's choices for both batch sizes and the CPU they hold for.
  EXPECT_NE(j["plans"]["cpu"]["device"].get<std::string>().find("oneDNN"), std::string::npos) << j["plans"];
  EXPECT_EQ(j["plans"]["cpu"]["plans"].size(), 2u);
  EXPECT_EQ(j["plans"]["cpu"]["plans"]["batch=4"].size(), 49u);  // every conv
}

TEST(Cli, CorruptAndTruncatedBundles) {
  std::string bytes = read_bytes(good_bundle());
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x01;
  write_bytes(work_dir() + "/flipped.bundle", flipped);
  expect_clean_failure("classify " + work_dir() + "/flipped.bundle " + test::source_dir() + "/samples/cat.png",
                       "checksum mismatch");
  write_bytes(work_dir() + "/truncated.bundle", bytes.substr(0, bytes.size() / 3));
  expect_clean_failure("inspect " + work_dir() + "/truncated.bundle", "truncated");
  write_bytes(work_dir() + "/empty.bundle", "");
  expect_clean_failure("inspect " + work_dir() + "/empty.bundle", "not a kiln bundle");
  expect_clean_failure("inspect " + work_dir() + "/no-such.bundle", "cannot open");
}

TEST(Cli, BadCheckpoints) {
  std::string base = work_dir() + "/ckpt-";
  // Truncated safetensors.
  fs::create_directories(base + "truncated");
  fs::copy_file(transplant() + "/config.json", base + "truncated/config.json", fs::copy_options::overwrite_existing);
  std::string weights = read_bytes(transplant() + "/model.safetensors");
  write_bytes(base + "truncated/model.safetensors", weights.substr(0, weights.size() - 1000));
  expect_clean_failure("build " + base + "truncated -o " + base + "x.bundle", "truncated");
  // Unknown architecture.
  fs::create_directories(base + "unknown");
  auto config = nlohmann::json::parse(read_bytes(transplant() + "/config.json"));
  config["architecture"] = "resnet50";
  write_bytes(base + "unknown/config.json", config.dump());
  fs::copy_file(transplant() + "/model.safetensors", base + "unknown/model.safetensors",
                fs::copy_options::overwrite_existing);
  expect_clean_failure("build " + base + "unknown -o " + base + "x.bundle", "unknown architecture 'resnet50'");
  // A preprocessing size that is not an integer.
  fs::create_directories(base + "float-size");
  config = nlohmann::json::parse(read_bytes(transplant() + "/config.json"));
  config["pretrained_cfg"]["input_size"] = {3, 1e300, 224};
  write_bytes(base + "float-size/config.json", config.dump());
  fs::copy_file(transplant() + "/model.safetensors", base + "float-size/model.safetensors",
                fs::copy_options::overwrite_existing);
  expect_clean_failure("build " + base + "float-size -o " + base + "x.bundle", "input_size must be an integer");
  // A missing tensor.
  fs::create_directories(base + "missing");
  fs::copy_file(transplant() + "/config.json", base + "missing/config.json", fs::copy_options::overwrite_existing);
  write_safetensors_edited(transplant() + "/model.safetensors", base + "missing/model.safetensors",
                           [](const std::string& name, std::string&) { return name != "blocks.3.1.bn2.running_var"; });
  expect_clean_failure("build " + base + "missing -o " + base + "x.bundle",
                       "missing tensor 'blocks.3.1.bn2.running_var'");
  // A NaN and an infinity in the weights (a damaged file), named with where they are.
  fs::create_directories(base + "nan");
  fs::copy_file(transplant() + "/config.json", base + "nan/config.json", fs::copy_options::overwrite_existing);
  write_safetensors_edited(transplant() + "/model.safetensors", base + "nan/model.safetensors",
                           [](const std::string& name, std::string& raw) {
                             if (name != "blocks.2.0.conv_pw.weight") return true;
                             const float nan = std::nanf(""), inf = -INFINITY;
                             std::memcpy(raw.data() + 5 * sizeof(float), &nan, sizeof(float));
                             std::memcpy(raw.data() + 9 * sizeof(float), &inf, sizeof(float));
                             return true;
                           });
  expect_clean_failure("build " + base + "nan -o " + base + "x.bundle",
                       "tensor 'blocks.2.0.conv_pw.weight' holds 2 NaN or infinite values (the first at element 5");
  // Not a checkpoint at all, and neither a folder nor a Hub id.
  fs::create_directories(base + "empty");
  expect_clean_failure("build " + base + "empty -o " + base + "x.bundle", "not a Hugging Face checkpoint");
  expect_clean_failure("build ./no/such/place -o " + base + "x.bundle", "no such folder");
  // Config values of the wrong type.
  fs::create_directories(base + "arch-number");
  config = nlohmann::json::parse(read_bytes(transplant() + "/config.json"));
  config["architecture"] = 5;
  write_bytes(base + "arch-number/config.json", config.dump());
  fs::copy_file(transplant() + "/model.safetensors", base + "arch-number/model.safetensors",
                fs::copy_options::overwrite_existing);
  expect_clean_failure("build " + base + "arch-number -o " + base + "x.bundle", "'architecture' is not a name");
  config.erase("architecture");
  config["architectures"] = "efficientnet_b0";
  write_bytes(base + "arch-number/config.json", config.dump());
  expect_clean_failure("build " + base + "arch-number -o " + base + "x.bundle",
                       "'architectures' is not a list of names");
  EXPECT_FALSE(fs::exists(base + "x.bundle"));
  // A labels file that is not UTF-8 (it would go into the bundle's JSON manifest), and a folder.
  write_bytes(base + "labels.txt", "tench\ngold\xff fish\n");
  expect_clean_failure("build " + transplant() + " -o " + base + "x.bundle --no-plan --labels " + base + "labels.txt",
                       "byte 10 is not UTF-8");
  expect_clean_failure("build " + transplant() + " -o " + base + "x.bundle --no-plan --labels " + work_dir(),
                       "is a folder, not a file");
  // An existing folder as the output: refused before anything is written.
  expect_clean_failure("build " + transplant() + " -o " + work_dir() + " --no-plan", "is a folder");
}

// Command-line mistakes: one line each, exit status 2.
TEST(Cli, UsageErrorsAreOneLine) {
  for (const std::string& args :
       {std::string("frobnicate"), "classify " + good_bundle() + " --top 0 x.jpg",
        "classify --no-such-flag " + good_bundle() + " x.jpg", std::string(""),
        "classify " + good_bundle() + " --logits x.jpg", "eval " + good_bundle() + " --data x --limit -1"}) {
    std::string out;
    EXPECT_EQ(test::run_command(kiln_bin() + " " + args, &out), 2) << args << ": " << out;
    EXPECT_EQ(out.rfind("kiln: error: ", 0), 0u) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  }
  std::string out;
  test::run_command(kiln_bin() + " frobnicate", &out);
  EXPECT_NE(out.find("unknown command 'frobnicate'"), std::string::npos) << out;
  test::run_command(kiln_bin() + " --threads 2 frobnicate", &out);
  EXPECT_NE(out.find("unknown command 'frobnicate'"), std::string::npos) << out;
  EXPECT_EQ(test::run_command(kiln_bin() + " --help", &out), 0);
  EXPECT_NE(out.find("Subcommands:"), std::string::npos) << out;
}

// OMP_NUM_THREADS beyond what kiln runs: refused (libgomp crashed creating 100000 threads).
TEST(Cli, TooManyThreadsAreRefused) {
  const std::string classify =
      kiln_bin() + " classify " + good_bundle() + " " + test::source_dir() + "/samples/cat.png";
  std::string out;
  for (const char* n : {"100000", "99999999999999999999"}) {
    const int rc = test::run_command(std::string("OMP_NUM_THREADS=") + n + " " + classify, &out);
    EXPECT_EQ(rc, 1) << out;
    // Past a long, libgomp warns first, when it loads.
    EXPECT_TRUE(out.ends_with(
        fmt::format("kiln: error: [cpu] OMP_NUM_THREADS={} is more threads than kiln runs (1 to 4096)\n", n)))
        << out;
  }
  EXPECT_EQ(test::run_command("OMP_NUM_THREADS=100000 " + classify, &out), 1);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(test::run_command("OMP_NUM_THREADS=2,1 " + classify, &out), 0) << out;
}

// A label past the model's classes is a mistake in the data, not a wrong answer to count.
TEST(Cli, EvalRefusesClassesTheModelDoesNotHave) {
  const std::string dir = work_dir() + "/labels-out-of-range";
  fs::create_directories(dir);
  fs::copy_file(test::source_dir() + "/samples/cat.png", dir + "/cat.png", fs::copy_options::overwrite_existing);
  write_bytes(dir + "/labels.tsv", "cat.png\t1000\n");
  expect_clean_failure("eval " + good_bundle() + " --data " + dir, "class 1000 is not one of the model's 1000 classes");
  write_bytes(dir + "/labels.tsv", "cat.png\t999\n");
  std::string out;
  EXPECT_EQ(test::run_command(kiln_bin() + " eval " + good_bundle() + " --data " + dir, &out), 0) << out;
}

// Files that are not files: a folder or a device as an image or a text input.
TEST(Cli, FoldersAndDevicesAreNotFiles) {
  expect_clean_failure("classify " + good_bundle() + " " + work_dir(), "is a folder, not a file");
  expect_clean_failure("classify " + good_bundle() + " /dev/zero", "/dev/zero holds more than the 268435456 bytes");
}

TEST(Cli, BadImages) {
  expect_clean_failure("classify " + good_bundle() + " " + work_dir() + "/missing.jpg", "cannot open");
  write_bytes(work_dir() + "/garbage.jpg", std::string("\xff\xd8\xff\xe0 this is not really a jpeg", 30));
  expect_clean_failure("classify " + good_bundle() + " " + work_dir() + "/garbage.jpg", "JPEG decode failed");
  write_bytes(work_dir() + "/text.png", "hello");
  expect_clean_failure("classify " + good_bundle() + " " + work_dir() + "/text.png", "not a JPEG, PNG or WebP");
  std::string jpeg = read_bytes(test::source_dir() + "/samples/rocket.jpg");
  write_bytes(work_dir() + "/cut.jpg", jpeg.substr(0, jpeg.size() / 2));
  expect_clean_failure("classify " + good_bundle() + " " + work_dir() + "/cut.jpg", "Premature end");
  std::string png = read_bytes(test::source_dir() + "/samples/cat.png");
  write_bytes(work_dir() + "/cut.png", png.substr(0, png.size() / 2));
  expect_clean_failure("classify " + good_bundle() + " " + work_dir() + "/cut.png", "PNG decode failed");
}

// --no-plan: a bundle without kernel choices, which inspect says, and which runs (oneDNN's picks).
TEST(Cli, BuildsWithoutPlans) {
  std::string out, path = work_dir() + "/b0-unplanned.bundle";
  ASSERT_EQ(test::run_command(kiln_bin() + " build " + transplant() + " -o " + path + " --batch 4 --no-plan", &out), 0)
      << out;
  EXPECT_NE(out.find("not planned (--no-plan)"), std::string::npos) << out;
  ASSERT_EQ(test::run_command(kiln_bin() + " inspect --json " + path, &out), 0);
  EXPECT_TRUE(nlohmann::json::parse(out).at("plans").empty()) << out;
  ASSERT_EQ(test::run_command(kiln_bin() + " inspect " + path, &out), 0);
  EXPECT_NE(out.find("planned      nothing"), std::string::npos) << out;
  ASSERT_EQ(test::run_command(kiln_bin() + " classify --device cpu --json " + path + " " + test::source_dir() +
                                  "/samples/coffee.webp 2>/dev/null",
                              &out),
            0);
  EXPECT_EQ(nlohmann::json::parse(out)["top"][0]["index"], 967) << out;  // espresso
}

TEST(Cli, Fp16BundleRunsOnTheCpu) {
  std::string out, path = work_dir() + "/b0-fp16.bundle";
  ASSERT_EQ(test::run_command(kiln_bin() + " build " + transplant() + " -o " + path + " --precision fp16", &out), 0)
      << out;
  EXPECT_LT(fs::file_size(path), fs::file_size(good_bundle()) * 0.55);
  ASSERT_EQ(test::run_command(kiln_bin() + " inspect --json " + path, &out), 0);
  EXPECT_EQ(nlohmann::json::parse(out)["precision"], "fp16");
  std::string a, b;
  std::string image = test::source_dir() + "/samples/coffee.webp";
  ASSERT_EQ(test::run_command(
                kiln_bin() + " classify --device cpu --json --logits " + path + " " + image + " 2>/dev/null", &a),
            0);
  ASSERT_EQ(
      test::run_command(
          kiln_bin() + " classify --device cpu --json --logits " + good_bundle() + " " + image + " 2>/dev/null", &b),
      0);
  auto ja = nlohmann::json::parse(a), jb = nlohmann::json::parse(b);
  EXPECT_EQ(ja["top"][0]["index"], jb["top"][0]["index"]);
  double diff = 0;
  for (int i = 0; i < 1000; ++i)
    diff = std::max(diff, std::fabs(ja["logits"][i].get<double>() - jb["logits"][i].get<double>()));
  EXPECT_LT(diff, 0.05) << "fp16 weights moved a logit by " << diff;
  EXPECT_GT(diff, 0.0) << "fp16 weights changed nothing: were they stored in half precision?";
}

TEST(Cli, StudyComparesRecipes) {
  std::string out, dir = work_dir() + "/study";
  fs::remove_all(dir);
  ASSERT_EQ(
      test::run_command(kiln_bin() + " study " + transplant() + " --recipes fp16,fp8-pointwise --device cpu --data " +
                            test::data_path("data/imagenet-val-1300") + " --limit 16 --calib " +
                            test::data_path("data/imagenet-calib-500") + " --calib-samples 8 --batch 1 -o " + dir,
                        &out),
      0)
      << out;
  auto j = nlohmann::json::parse(read_bytes(dir + "/study.json"));
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["reference"]["images"], 16);
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["eval"]["images"], 16);
    EXPECT_EQ(row["eval"]["nonfinite"], 0);
    EXPECT_GE(row["stress"]["images"].get<int>(), 25);
    EXPECT_EQ(row["stress"]["nonfinite"], 0) << row["recipe"];
    EXPECT_GT(row["speed"]["ms"]["1"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["rows"][1]["build"]["fp8_layers"], 32);
  EXPECT_GE(j["rows"][0]["eval"]["agreement"].get<double>(), 90.0);  // fp16 weights, fp32 math
  EXPECT_NE(read_bytes(dir + "/study.md").find("| fp8-pointwise | cpu | 32 |"), std::string::npos);
}

TEST(Cli, UnsupportedPrecisionIsRefused) {
  expect_clean_failure("build " + transplant() + " -o " + work_dir() + "/fp8.bundle --precision fp8",
                       "needs calibration data");
  expect_clean_failure("build " + transplant() + " -o " + work_dir() +
                           "/fp8.bundle --precision fp8 --recipe nope --calib " +
                           test::data_path("data/imagenet-calib-500"),
                       "no recipe 'nope'");
  expect_clean_failure("build " + transplant() + " -o " + work_dir() + "/b.bundle --batch 1,x", "--batch");
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// A graph with an integer input and two outputs (f32 logits and i64 token ids) end to end
// through `kiln run`: safetensors in, safetensors out, the same numbers as the engine.
TEST(Cli, RunsAnyGraphOnSafetensors) {
  const ModelDefinition def = test::token_model();
  const std::string bundle = work_dir() + "/tokens.bundle", in = work_dir() + "/ids.safetensors",
                    out_path = work_dir() + "/out.safetensors";
  write_bundle(bundle, def, BuildInfo{});
  const HostTensor ids = HostTensor::from_i64("ids", {2, 3}, {0, 6, 3, 1, 1, 5});
  write_safetensors(in, std::vector<HostTensor>{ids});
  std::string out;
  ASSERT_EQ(test::run_command(kiln_bin() + " run " + bundle + " --device cpu --input " + in + " -o " + out_path, &out),
            0)
      << out;
  EXPECT_NE(out.find("batch=2 seq=3"), std::string::npos) << out;
  SafetensorsFile file(out_path);
  const HostTensor logits = file.to_host("logits"), tokens = file.to_host("tokens");
  EXPECT_EQ(tokens.dtype, DType::I64);
  EXPECT_EQ(tokens.shape, (std::vector<int64_t>{2, 3}));
  Engine engine(def.graph(), def.constants(), EngineOptions{"cpu"});
  const auto want = engine.run({ids});
  EXPECT_EQ(logits.data, want[0].data);
  EXPECT_EQ(tokens.data, want[1].data);
  // Ids out of the table's range are refused, not read.
  write_safetensors(in, std::vector<HostTensor>{HostTensor::from_i64("ids", {1, 1}, {7})});
  expect_clean_failure("run " + bundle + " --device cpu --input " + in + " -o " + out_path, "out of range");
  // bench makes up its own inputs, integer ones too.
  ASSERT_EQ(
      test::run_command(kiln_bin() + " bench " + bundle + " --device cpu --sizes seq=16 --batch 1,4 --json", &out), 0)
      << out;
  EXPECT_NE(out.find("\"sizes\":{\"batch\":4,\"seq\":16}"), std::string::npos) << out;
  // The batch comes with --batch only: given in --sizes as well, one of the two would be dropped.
  expect_clean_failure("bench " + bundle + " --device cpu --sizes seq=16,batch=4", "give the batch with --batch");
  // --whole-calls times run() itself, on host inputs.
  ASSERT_EQ(
      test::run_command(kiln_bin() + " bench " + bundle + " --device cpu --sizes seq=16 --whole-calls --json", &out), 0)
      << out;
  EXPECT_NE(out.find("\"whole_calls\":true"), std::string::npos) << out;
  // --values sets integer inputs: an id the table has runs, one past it reaches the kernel's
  // range check (so the value is what ran), an input the graph lacks is named.
  ASSERT_EQ(test::run_command(kiln_bin() + " bench " + bundle + " --device cpu --values ids=6 --json", &out), 0) << out;
  EXPECT_NE(out.find("\"values\":{\"ids\":6}"), std::string::npos) << out;
  expect_clean_failure("bench " + bundle + " --device cpu --values ids=7 --json", "out of range");
  expect_clean_failure("bench " + bundle + " --device cpu --values idz=1", "has no input 'idz'");
  // --spread gives row r of 4 the value r * N / 4: at N = 9 the last row's ids are 6, the table's
  // last; at N = 10 they are 7, past it.
  ASSERT_EQ(test::run_command(kiln_bin() + " bench " + bundle + " --device cpu --batch 4 --spread ids=9 --json", &out),
            0)
      << out;
  EXPECT_NE(out.find("\"spread\":{\"ids\":9}"), std::string::npos) << out;
  expect_clean_failure("bench " + bundle + " --device cpu --batch 4 --spread ids=10 --json", "out of range");
  expect_clean_failure("bench " + bundle + " --device cpu --spread ids=0", "bad number");
  expect_clean_failure("bench " + bundle + " --device cpu --values ids=1 --spread ids=2", "also given in --values");
  // --profile: a time for every node of the plan, named as --plan names it.
  ASSERT_EQ(
      test::run_command(kiln_bin() + " bench " + bundle + " --device cpu --sizes seq=16 --profile --plan --json", &out),
      0)
      << out;
  const size_t brace = out.find('{');  // stdout's JSON line; stderr's size line comes along
  ASSERT_NE(brace, std::string::npos) << out;
  const nlohmann::json j = nlohmann::json::parse(out.substr(brace, out.find('\n', brace) - brace));
  ASSERT_EQ(j.at("profile_nodes").size(), j.at("plan").size()) << out;
  ASSERT_GT(j.at("plan").size(), 0u);
  // Each node's least bytes (its tensors once each), summed per group as the times are.
  double node_bytes = 0, group_bytes = 0;
  bool saw_gather = false;
  for (size_t i = 0; i < j.at("plan").size(); ++i) {
    EXPECT_EQ(j["profile_nodes"][i].at("node"), j["plan"][i]);
    EXPECT_GE(j["profile_nodes"][i].at("ms").get<double>(), 0.0);
    const double bytes = j["profile_nodes"][i].at("bytes").get<double>();
    EXPECT_GT(bytes, 0.0);
    node_bytes += bytes;
    if (j["plan"][i].get<std::string>().rfind("gather embed ", 0) == 0) {
      saw_gather = true;  // the 7 x 4 f32 table, 16 i64 ids, a 16 x 4 f32 output
      EXPECT_EQ(bytes, 7 * 4 * 4 + 16 * 8 + 16 * 4 * 4);
    }
  }
  EXPECT_TRUE(saw_gather) << out;
  for (const auto& [group, bytes] : j.at("profile_bytes").items()) {
    EXPECT_TRUE(j.at("profile_ms").contains(group)) << group;
    group_bytes += bytes.get<double>();
  }
  EXPECT_EQ(group_bytes, node_bytes);
}

// `kiln validate --static` on the shipped manifest with one thing broken: it must fail and say what.
TEST(Cli, ValidateRejectsBadManifests) {
  const std::string shipped =
      read_bytes(test::source_dir() + "/families/timm_efficientnet/manifests/efficientnet_b0.ra_in1k.toml");
  ASSERT_FALSE(shipped.empty());
  auto validate = [&](const std::string& text, std::string* out) {
    const std::string path = work_dir() + "/manifest.toml";
    write_bytes(path, text);
    return test::run_command(kiln_bin() + " validate --static --data " + test::data_dir() + " " + path, out);
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = shipped;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  std::string out;
  EXPECT_EQ(validate(shipped, &out), 0) << out;
  const std::pair<std::string, std::string> broken[] = {
      {replaced("1b5383e5f79cc0f7fc067e372f8f26a5fa73f26a", "main"), "revision 'main' is not pinned"},
      {replaced("architecture = \"efficientnet_b0\"", "architecture = \"efficientnet_b9\""),
       "unknown architecture 'efficientnet_b9'"},
      {replaced("build = \"fp16\"", "build = \"fp32\""), "the fp16 build has no gate"},
      {replaced("max_abs_diff = 2e-3\nmin_top1_agreement = 1.0\n", ""), "gate 'cpu-fp32-parity': no threshold"},
      {replaced("family = \"timm_efficientnet\"", "family = \"nope\""), "unknown family 'nope'"},
      {replaced("recipe = \"fp8-pointwise\"", "recipe = \"fp8-everything\""), "recipe 'fp8-everything'"},
      {replaced("name = \"cpu-fp32-top1\"", "name = \"cpu-fp32-top1\"\ncolour = 3"), "unknown key 'colour'"},
  };
  for (const auto& [text, needle] : broken) {
    EXPECT_EQ(validate(text, &out), 1) << needle;
    EXPECT_NE(out.find(needle), std::string::npos) << "expected '" << needle << "' in: " << out;
    EXPECT_NE(out.find("kiln: error: [validate] 1 invalid manifest(s)"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace kiln
