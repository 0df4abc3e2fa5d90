// `kiln build` and `kiln detect` on a deterministic yolov10n: JSON output, --max-det, --square,
// --draw, images of odd shapes and colour types (correct output), and bad files (one clean error
// line, never a crash).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "families/yolov10/tests/deterministic_checkpoint.h"
#include "families/yolov10/tests/reference.h"
#include "tasks/image/encode.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string kiln_bin() { return test::binary_dir() + "/bin/kiln"; }
std::string work() {
  static const std::string dir = test::process_dir("yolov10-cli");
  return dir;
}

const std::string& bundle() {
  static const std::string path = [] {
    test::write_deterministic_checkpoint(work() + "/yolov10n", "yolov10n",
                                         test::random_reference().at("models").at("yolov10n"));
    const std::string p = work() + "/yolov10n.bundle";
    std::string out;
    EXPECT_EQ(test::run_command(kiln_bin() + " build " + work() + "/yolov10n -o " + p, &out), 0) << out;
    return p;
  }();
  return path;
}

std::string image(const std::string& name, int w, int h, bool gray = false) {
  Image im{w, h, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3)};
  for (size_t i = 0; i < im.rgb.size(); ++i) im.rgb[i] = static_cast<uint8_t>((i * 37) % 251);
  const std::string path = work() + "/" + name;
  write_jpeg(im, path, 90, gray);
  return path;
}

// Colour types write_jpeg does not make, as files: a 3x2 RGBA PNG (its first column fully transparent)
// and a 2x2 CMYK JPEG with Adobe's marker, both made with libpng / libjpeg.
std::string file(const std::string& name, const std::string& bytes) {
  const std::string path = work() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}
const std::string kRgbaPng(
    "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x03\x00\x00\x00\x02"
    "\x08\x06\x00\x00\x00\x9d\x74\x66\x1a\x00\x00\x00\x1d\x49\x44\x41\x54\x78\x9c\x63\x60\x60\x38\xc1"
    "\x10\xc0\x70\xe2\xff\x02\x20\x66\x60\xa8\x00\x72\x2a\x80\x1c\x20\x06\x00\x80\x94\x0b\xf5\x45\x03"
    "\x7d\x8e\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82",
    86);
const std::string kCmykJpeg(
    "\xff\xd8\xff\xee\x00\x0e\x41\x64\x6f\x62\x65\x00\x64\x00\x00\x00\x00\x00\xff\xdb\x00\x43\x00\x03"
    "\x02\x02\x03\x02\x02\x03\x03\x03\x03\x04\x03\x03\x04\x05\x08\x05\x05\x04\x04\x05\x0a\x07\x07\x06"
    "\x08\x0c\x0a\x0c\x0c\x0b\x0a\x0b\x0b\x0d\x0e\x12\x10\x0d\x0e\x11\x0e\x0b\x0b\x10\x16\x10\x11\x13"
    "\x14\x15\x15\x15\x0c\x0f\x17\x18\x16\x14\x18\x12\x14\x15\x14\xff\xc0\x00\x14\x08\x00\x02\x00\x02"
    "\x04\x43\x11\x00\x4d\x11\x00\x59\x11\x00\x4b\x11\x00\xff\xc4\x00\x15\x00\x01\x01\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x09\x08\xff\xc4\x00\x21\x10\x00\x00\x04\x05\x05\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x05\x07\x01\x08\x38\x76\xb4\x02\x04\x35\x73\xb2\xff"
    "\xda\x00\x0e\x04\x43\x00\x4d\x00\x59\x00\x4b\x00\x00\x3f\x00\xbf\xa5\x3a\x96\x19\xbb\x31\x1b\x04"
    "\x90\x76\x4c\x5d\x41\xb9\xd7\x42\xa6\x59\xa0\xec\x98\xba\x83\x73\xae\x85\x4c\xb3\x41\x68\xab\xca"
    "\x6f\x3b\xb5\xfa\x88\xff\xd9",
    223);

// One JSON line per image; every box inside its image.
std::vector<nlohmann::json> detect(const std::string& args, const std::vector<std::pair<int, int>>& sizes) {
  std::string out;
  EXPECT_EQ(test::run_command(kiln_bin() + " detect " + bundle() + " --device cpu --json " + args, &out), 0) << out;
  std::vector<nlohmann::json> lines;
  std::istringstream s(out);
  for (std::string line; std::getline(s, line);) lines.push_back(nlohmann::json::parse(line));
  EXPECT_EQ(lines.size(), sizes.size()) << out;
  for (size_t i = 0; i < std::min(lines.size(), sizes.size()); ++i)
    for (const auto& d : lines[i].at("detections")) {
      const auto b = d.at("box").get<std::vector<double>>();
      EXPECT_TRUE(b[0] >= 0 && b[0] <= b[2] && b[2] <= sizes[i].first && b[1] >= 0 && b[1] <= b[3] &&
                  b[3] <= sizes[i].second)
          << d.dump();
      // The names of config.json: a model made from a yaml file names its classes "0", "1", ...
      EXPECT_EQ(d.at("label"), std::to_string(d.at("class").get<int>()));
    }
  return lines;
}

TEST(YoloCli, DetectsAndPrintsJson) {
  const std::string val = test::data_path("data/coco-val2017-128/images/000000000139.jpg");
  const auto lines = detect(val + " --conf 0 --max-det 5 --imgsz 320", {{640, 426}});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("image"), val);
  EXPECT_EQ(lines[0].at("detections").size(), 5u);
  // --square letterboxes to 320x320: other padding, so slightly other scores, the same count.
  EXPECT_EQ(detect(val + " --conf 0 --max-det 7 --imgsz 320 --square", {{640, 426}})[0].at("detections").size(), 7u);
  std::string out;
  ASSERT_EQ(test::run_command(kiln_bin() + " detect " + bundle() + " " + val + " --device cpu --conf 0 --max-det 3 " +
                                  "--imgsz 320 --draw " + work() + "/drawn",
                              &out),
            0)
      << out;
  EXPECT_NE(out.find("3 detections"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(work() + "/drawn/000000000139.jpg"));
}

TEST(YoloCli, OddImagesGiveValidDetections) {
  const std::string tiny = image("tiny.jpg", 1, 1), sliver = image("sliver.jpg", 10000, 50),
                    tall = image("tall.jpg", 7, 3000), gray = image("gray.jpg", 300, 200, true),
                    rgba = file("rgba.png", kRgbaPng);  // alpha dropped, as cv2.imread does
  const auto lines = detect(tiny + " " + sliver + " " + tall + " " + gray + " " + rgba + " --conf 0 --max-det 10",
                            {{1, 1}, {10000, 50}, {7, 3000}, {300, 200}, {3, 2}});
  for (const auto& l : lines) EXPECT_EQ(l.at("detections").size(), 10u) << l.dump();
}

// `kiln eval` on a YOLO folder: batches of images (grouped by letterboxed shape) give what one
// image at a time gives; --square batches them all at one shape.
TEST(YoloCli, EvalBatchesAgreeWithOneImageAtATime) {
  auto eval = [](const std::string& args) {
    std::string out;
    EXPECT_EQ(test::run_command(kiln_bin() + " eval " + bundle() + " --data " +
                                    test::data_path("data/coco-val2017-128") + " --limit 6 --device cpu --json " + args,
                                &out),
              0)
        << out;
    return nlohmann::json::parse(out.substr(out.rfind('{', out.find_last_of('}'))), nullptr, false);
  };
  const nlohmann::json one = eval(""), three = eval("--batch 3"), square_one = eval("--square"),
                       square_three = eval("--batch 3 --square");  // calls of three images each
  for (const auto* r : {&one, &three, &square_one, &square_three}) {
    ASSERT_FALSE(r->is_discarded());
    EXPECT_EQ(r->at("images"), 6);
    EXPECT_GT(r->at("detections").get<int>(), 0);
  }
  auto expect_same = [](const nlohmann::json& a, const nlohmann::json& b) {
    EXPECT_EQ(a.at("detections"), b.at("detections"));
    for (const char* key : {"map50_95", "map50", "map75"})
      EXPECT_NEAR(a.at(key).get<double>(), b.at(key).get<double>(), 1e-9) << key;
  };
  expect_same(one, three);
  expect_same(square_one, square_three);
}

TEST(YoloCli, BadInputFailsCleanly) {
  auto expect_error = [](const std::string& args, const std::string& needle) {
    std::string out;
    const int rc = test::run_command(kiln_bin() + " " + args, &out);
    EXPECT_NE(rc, 0) << args;
    EXPECT_LT(rc, 128) << "killed by a signal: " << args;
    EXPECT_EQ(out.rfind("kiln: error: ", 0), 0u) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_NE(out.find(needle), std::string::npos) << "expected '" << needle << "' in: " << out;
  };
  std::ofstream(work() + "/garbage.jpg", std::ios::binary) << std::string("\xff\xd8\xff\xe0 not a jpeg at all", 24);
  expect_error("detect " + bundle() + " " + work() + "/garbage.jpg", "JPEG decode failed");
  std::ofstream(work() + "/text.png") << "hello";
  expect_error("detect " + bundle() + " " + work() + "/text.png", "not a JPEG, PNG or WebP");
  expect_error("detect " + bundle() + " " + work() + "/missing.jpg", "cannot open");
  expect_error("detect " + bundle() + " " + file("cmyk.jpg", kCmykJpeg), "CMYK JPEGs are not supported");
  // A small --imgsz leaves fewer grid cells than the head's 300 detections.
  expect_error("detect " + bundle() + " " + image("small.jpg", 64, 64) + " --imgsz 64", "fewer than the head's 300");
  // A classifier's command on a detector, and the reverse.
  expect_error("classify " + bundle() + " " + image("c.jpg", 8, 8), "not an image classifier");
  // A checkpoint whose config names an unknown size; one whose weights are cut short.
  fs::create_directories(work() + "/bad-arch");
  fs::copy_file(work() + "/yolov10n/model.safetensors", work() + "/bad-arch/model.safetensors",
                fs::copy_options::overwrite_existing);
  std::ofstream(work() + "/bad-arch/config.json") << R"({"model": "yolov10q.yaml", "task": "detect"})";
  expect_error("build " + work() + "/bad-arch -o " + work() + "/bad.bundle", "unknown architecture 'yolov10q'");
  std::ofstream(work() + "/bad-arch/config.json") << R"({"model": "yolov10s.yaml", "task": "detect"})";
  expect_error("build " + work() + "/bad-arch -o " + work() + "/bad.bundle", "has shape");
  std::ofstream(work() + "/bad-arch/model.safetensors") << "x";
  expect_error("build " + work() + "/bad-arch -o " + work() + "/bad.bundle", "too short for a header");
}

}  // namespace
}  // namespace kiln
