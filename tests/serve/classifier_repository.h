// What kiln serve's classifier tests share: a model repository holding one classifier (the
// EfficientNet-B0 checkpoint of the test data, built once per process as ROOT/b0/1/model.bundle),
// the sample images, and file reading.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "tests/test_support.h"

namespace kiln::serve::test_repository {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline const std::vector<std::string> kImages = {"samples/cat.png", "samples/coffee.webp", "samples/rocket.jpg"};

inline const std::string& root() {
  static std::string r = [] {
    std::string dir = test::process_dir("serve-test");
    std::filesystem::create_directories(dir + "/b0/1");
    BuildOptions o;
    o.batch_sizes = {1, 4};
    BuildResult result;
    Status s =
        build(test::data_path("checkpoints/efficientnet_b0.tfhub-transplant"), dir + "/b0/1/model.bundle", o, &result);
    EXPECT_TRUE(s.ok()) << s.message();
    return dir;
  }();
  return r;
}

}  // namespace kiln::serve::test_repository
