// The labelled image sources behind `kiln eval` (and calibration): WebDataset shards, labels.tsv
// folders, ImageFolder trees, and their failures.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "datasets/image_dataset.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string scratch(const std::string& name) {
  std::string d = test::binary_dir() + "/dataset-test/" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

size_t count(const std::string& src, int* first_label = nullptr) {
  auto ds = open_image_dataset(src);
  LabeledImage img;
  size_t n = 0;
  while (ds->next(img)) {
    if (n == 0 && first_label) *first_label = img.label;
    EXPECT_FALSE(img.bytes.empty()) << img.key;
    ++n;
  }
  return n;
}

// A ustar archive written by hand, so that tests can cut or omit members.
void write_tar(const std::string& path, const std::vector<std::pair<std::string, std::string>>& members) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& [name, data] : members) {
    char h[512] = {};
    std::snprintf(h, 100, "%s", name.c_str());
    std::snprintf(h + 100, 8, "%07o", 0644);
    std::snprintf(h + 108, 8, "%07o", 0);
    std::snprintf(h + 116, 8, "%07o", 0);
    std::snprintf(h + 124, 12, "%011o", static_cast<unsigned>(data.size()));
    std::snprintf(h + 136, 12, "%011o", 0);
    h[156] = '0';
    std::memcpy(h + 257, "ustar", 6);
    std::memcpy(h + 263, "00", 2);
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    std::snprintf(h + 148, 8, "%06o", sum);
    out.write(h, 512);
    out.write(data.data(), data.size());
    out.write(std::string((512 - data.size() % 512) % 512, '\0').data(), (512 - data.size() % 512) % 512);
  }
  out.write(std::string(1024, '\0').data(), 1024);
}

std::string sample_jpeg() {
  std::ifstream in(test::source_dir() + "/samples/rocket.jpg", std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(ImageDataset, ReadsEveryShardToTheEnd) {
  const std::string dir = test::data_path("data/imagenet-val-1300");
  int label = -1;
  EXPECT_EQ(count(dir + "/shard-000000.tar", &label), 650u);
  EXPECT_EQ(label, 472);  // ILSVRC2012_val_00000347
  EXPECT_EQ(count(dir), 1300u);
  EXPECT_EQ(count(dir + "/shard-*.tar"), 1300u);
}

TEST(ImageDataset, LabelsTsvAndImageFolder) {
  const std::string calib = test::data_path("data/imagenet-calib-500");
  EXPECT_EQ(count(calib), 500u);
  std::string root = scratch("folders");
  for (const char* cls : {"b_dog", "a_cat"}) {
    fs::create_directories(root + "/" + cls);
    std::ofstream(root + "/" + cls + "/one.jpg", std::ios::binary) << sample_jpeg();
  }
  std::ofstream(root + "/a_cat/notes.txt") << "not an image";
  int label = -1;
  EXPECT_EQ(count(root, &label), 2u);
  EXPECT_EQ(label, 0);  // a_cat sorts first
}

TEST(ImageDataset, RejectsBrokenSources) {
  std::string root = scratch("broken");
  write_tar(root + "/no-cls.tar", {{"x/000.jpg", sample_jpeg()}, {"x/001.jpg", sample_jpeg()}, {"x/001.cls", "3"}});
  EXPECT_THROW(count(root + "/no-cls.tar"), Error);
  const std::string no_cls = test::error_message([&] { count(root + "/no-cls.tar"); });
  EXPECT_NE(no_cls.find("no .cls"), std::string::npos) << no_cls;
  write_tar(root + "/good.tar", {{"x/000.jpg", sample_jpeg()}, {"x/000.cls", "7"}});
  EXPECT_EQ(count(root + "/good.tar"), 1u);
  std::ifstream in(root + "/good.tar", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(root + "/cut.tar", std::ios::binary) << bytes.substr(0, 512 + bytes.size() / 3);
  EXPECT_THROW(count(root + "/cut.tar"), Error);
  write_tar(root + "/bad-cls.tar", {{"x/000.jpg", sample_jpeg()}, {"x/000.cls", "dog"}});
  EXPECT_THROW(count(root + "/bad-cls.tar"), Error);
  std::string tsv = scratch("tsv");
  std::ofstream(tsv + "/labels.tsv") << "../../etc/passwd\t1\n";
  EXPECT_THROW(count(tsv), Error);
  EXPECT_THROW(open_image_dataset(root + "/nothing-here"), Error);
  EXPECT_THROW(open_image_dataset(root + "/*.none"), Error);
}

}  // namespace
}  // namespace kiln
