// A yolov10n bundle behind kiln serve's detector servable: two requests merged into one batch give
// each image the detections kiln::Detector gives it, padded to the request's most, with the
// request's conf and max_det; requests with other settings never share a batch.
#include <gtest/gtest.h>

#include <fstream>

#include "families/yolov10/tests/deterministic_checkpoint.h"
#include "families/yolov10/tests/reference.h"
#include "serve/batcher.h"
#include "tasks/image/encode.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

std::string work() {
  static const std::string dir = test::process_dir("yolov10-serve");
  return dir;
}

const std::string& bundle() {
  static const std::string path = [] {
    test::write_deterministic_checkpoint(work() + "/yolov10n", "yolov10n",
                                         test::random_reference().at("models").at("yolov10n"));
    const std::string p = work() + "/yolov10n.bundle";
    BuildResult r;
    const Status s = build(work() + "/yolov10n", p, BuildOptions{}, &r);
    EXPECT_TRUE(s.ok()) << s.message();
    return p;
  }();
  return path;
}

// A JPEG of a pattern, as its bytes and as a file.
std::string jpeg(const std::string& name, int w, int h, int seed) {
  Image im{w, h, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3)};
  for (size_t i = 0; i < im.rgb.size(); ++i) im.rgb[i] = static_cast<uint8_t>((i * seed + i / (3 * w) * 11) % 251);
  const std::string path = work() + "/" + name;
  write_jpeg(im, path, 90, false);
  return path;
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::shared_ptr<serve::InferRequest> request(const std::vector<std::string>& paths, double conf, int max_det) {
  auto r = std::make_shared<serve::InferRequest>();
  std::vector<std::string> bytes;
  for (const auto& p : paths) bytes.push_back(read(p));
  r->inputs.push_back(serve::bytes_tensor("image", {static_cast<int64_t>(paths.size())}, bytes));
  r->parameters = {{"conf", conf}, {"max_det", max_det}};
  return r;
}

template <typename T>
const T* as(const serve::InferTensor& t) {
  return reinterpret_cast<const T*>(t.data.data());
}

TEST(Yolov10Serve, MergedRequestsDetectLikeTheDetector) {
  const std::vector<std::string> images = {jpeg("a.jpg", 320, 240, 37), jpeg("b.jpg", 200, 260, 53),
                                           jpeg("c.jpg", 256, 256, 71)};
  std::vector<std::unique_ptr<serve::Servable>> instances;
  instances.push_back(serve::load_servable(bundle(), {"cpu", 40'000'000}));
  EXPECT_EQ(instances[0]->platform(), "kiln_object_detection");
  serve::Metrics metrics;
  serve::BatchingConfig config;
  config.max_batch_size = 8;
  config.max_queue_delay_us = 2'000'000;
  serve::Batcher batcher(std::move(instances), config, &metrics, "yolo", "1");
  auto first = batcher.submit(request({images[0], images[1]}, 0.01, 7));
  auto second = batcher.submit(request({images[2]}, 0.01, 7));
  auto other = batcher.submit(request({images[2]}, 0.2, 7));  // other settings: a batch of its own
  std::vector<std::vector<serve::InferTensor>> answers = {first.get(), second.get(), other.get()};
  EXPECT_NE(metrics.render().find("kiln_batch_size_sum{model=\"yolo\",version=\"1\"} 4"), std::string::npos);
  EXPECT_NE(metrics.render().find("kiln_batch_size_count{model=\"yolo\",version=\"1\"} 2"), std::string::npos);

  std::unique_ptr<Detector> detector;
  ASSERT_TRUE(Detector::load(bundle(), &detector, "cpu").ok());
  DetectionOptions o;
  o.max_det = 7;
  for (float conf : {0.01f, 0.2f}) {
    o.conf = conf;
    std::vector<std::vector<DetectedObject>> expected;
    ASSERT_TRUE(detector->detect_files(conf == 0.2f ? std::vector<std::string>{images[2]} : images, o, &expected).ok());
    // Which answer holds which image: (answer, row) per expected image.
    std::vector<std::pair<int, int>> where = conf == 0.2f ? std::vector<std::pair<int, int>>{{2, 0}}
                                                          : std::vector<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 0}};
    for (size_t i = 0; i < expected.size(); ++i) {
      const auto& out = answers[where[i].first];
      ASSERT_EQ(out.size(), 5u);  // boxes, scores, classes, labels, counts
      const int64_t row = where[i].second, n = out[1].shape[1];
      ASSERT_EQ(as<int32_t>(out[4])[row], static_cast<int32_t>(expected[i].size()));
      EXPECT_LE(static_cast<int64_t>(expected[i].size()), 7);
      for (size_t j = 0; j < expected[i].size(); ++j) {
        const DetectedObject& d = expected[i][j];
        const float* box = as<float>(out[0]) + (row * n + j) * 4;
        EXPECT_EQ(box[0], d.x1);
        EXPECT_EQ(box[1], d.y1);
        EXPECT_EQ(box[2], d.x2);
        EXPECT_EQ(box[3], d.y2);
        EXPECT_EQ(as<float>(out[1])[row * n + j], d.score);
        EXPECT_EQ(as<int32_t>(out[2])[row * n + j], d.class_id);
        EXPECT_EQ(out[3].strings[row * n + j], d.label);
      }
      for (int64_t j = static_cast<int64_t>(expected[i].size()); j < n; ++j)  // padding
        EXPECT_EQ(as<int32_t>(out[2])[row * n + j], -1);
    }
  }
}

TEST(Yolov10Serve, BadSettingsAndImagesAreRefusedWhenAdmitted) {
  auto servable = serve::load_servable(bundle(), {"cpu", 100'000});
  const std::string image = jpeg("d.jpg", 320, 320, 13);  // 102400 pixels: over this servable's cap
  auto refusal = [&](const serve::InferRequest& r) {
    try {
      servable->admit(r);
    } catch (const serve::ServeError& e) {
      EXPECT_EQ(e.kind(), serve::ErrorKind::BadRequest);
      return std::string(e.what());
    }
    return std::string("admitted");
  };
  EXPECT_EQ(refusal(*request({image}, 1.5, 7)), "parameter 'conf' must be between 0 and 1");
  EXPECT_EQ(refusal(*request({image}, 0.2, 0)), "parameter 'max_det' must be an integer from 1 to 10000");
  EXPECT_NE(refusal(*request({image}, 0.2, 7)).find("out of range (at most 100000 pixels)"), std::string::npos);
}

}  // namespace
}  // namespace kiln
