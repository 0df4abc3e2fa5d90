// The detection task's own parts, on hand-worked cases: letterbox sizes (Ultralytics' rounding
// and border split), the OpenCV-style resize, the anchor grid, boxes mapped back, COCO mAP and
// YOLO label files. Parity with Ultralytics on real images is in families/yolov10/tests.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/sha256.h"
#include "tasks/detection/coco_map.h"
#include "tasks/detection/detector.h"
#include "tasks/detection/evaluate.h"
#include "tasks/detection/letterbox.h"
#include "tasks/image/encode.h"
#include "tasks/image/exif.h"
#include "tasks/image/resize_cv.h"
#include "tests/test_support.h"

namespace kiln::detection {
namespace {

TEST(Letterbox, PadsToAMultipleOfTheStrideAroundTheCentre) {
  LetterboxConfig c;  // 640, stride 32
  // 640x427 stays 640x427 and pads 21 rows to 448: 10 above (round(10.4)), 11 below.
  auto s = letterbox_shape(640, 427, c);
  EXPECT_EQ(s.new_width, 640);
  EXPECT_EQ(s.new_height, 427);
  EXPECT_EQ(s.width, 640);
  EXPECT_EQ(s.height, 448);
  EXPECT_EQ(s.top, 10);
  EXPECT_EQ(s.left, 0);
  // 500x375 scales by 1.28 to 640x480, already a multiple of 32.
  s = letterbox_shape(500, 375, c);
  EXPECT_EQ(s.new_width, 640);
  EXPECT_EQ(s.new_height, 480);
  EXPECT_EQ(s.height, 480);
  // Square mode pads 480 rows to 640: 80 on each side.
  c.square = true;
  s = letterbox_shape(500, 375, c);
  EXPECT_EQ(s.height, 640);
  EXPECT_EQ(s.top, 80);
}

TEST(Letterbox, OddShapesGiveValidInputs) {
  LetterboxConfig c;
  auto s = letterbox_shape(1, 1, c);  // scaled up to 640x640
  EXPECT_EQ(s.width, 640);
  EXPECT_EQ(s.height, 640);
  s = letterbox_shape(10000, 50, c);  // 640 x round(3.2) = 3 rows, padded to 32: 14 above, 15 below
  EXPECT_EQ(s.new_height, 3);
  EXPECT_EQ(s.height, 32);
  EXPECT_EQ(s.top, 14);
  s = letterbox_shape(100000, 1, c);  // would be 0 rows: one is kept
  EXPECT_EQ(s.new_height, 1);
  EXPECT_EQ(s.height, 32);
  Image tiny{1, 1, {10, 20, 30}};
  const Image lb = letterbox(tiny, c);
  ASSERT_EQ(lb.rgb.size(), 640u * 640 * 3);
  EXPECT_EQ(lb.rgb[0], 10);  // the one pixel fills the whole input
  EXPECT_EQ(lb.rgb[lb.rgb.size() - 1], 30);
}

TEST(ResizeCv, HalvingIsTheRoundedBlockMean) {
  Image src{4, 2, std::vector<uint8_t>(4 * 2 * 3)};
  for (size_t i = 0; i < src.rgb.size(); ++i) src.rgb[i] = static_cast<uint8_t>(i * 10);
  const Image out = resize_bilinear_cv(src, 2, 1);
  // Pixel 0, channel 0: (0 + 30 + 120 + 150 + 2) >> 2 = 75.
  EXPECT_EQ(out.rgb[0], 75);
  EXPECT_EQ(out.rgb[3], (60 + 90 + 180 + 210 + 2) >> 2);
}

TEST(ResizeCv, UpscalingInterpolatesAndKeepsConstants) {
  Image flat{3, 3, std::vector<uint8_t>(27, 200)};
  for (uint8_t v : resize_bilinear_cv(flat, 7, 5).rgb) EXPECT_EQ(v, 200);
  // A 2-pixel ramp 0 -> 255 at 4x: centres map to (x + 0.5) / 4 - 0.5; x = 3 -> 0.375 -> 96.
  Image ramp{2, 1, {0, 0, 0, 255, 255, 255}};
  const Image up = resize_bilinear_cv(ramp, 8, 1);
  EXPECT_EQ(up.rgb[0], 0);  // clamped at the left border
  EXPECT_EQ(up.rgb[3 * 3], 96);
  EXPECT_EQ(up.rgb[3 * 7], 255);
}

// cv2.resize(img, (w, h), interpolation=cv2.INTER_LINEAR) with OpenCV 5.0.0 (x86-64, AVX2) of
// a synthetic image, pixel (x, y, channel c) = (7x + 13y + 101c + (xy mod 17)) mod 256: the SHA-256
// of its output, for shrinking, enlarging, both, and row lengths that leave vector tails.
TEST(ResizeCv, MatchesOpenCvBitForBit) {
  struct Case {
    int h, w, nh, nw;
    const char* sha256;
  };
  const Case cases[] = {
      {375, 500, 480, 640, "9a1ad0b8445cf5ee0cebe2c2f4d908b055100b8660748b54fb51bc919c65f591"},
      {500, 375, 640, 480, "31570963bb8880fa513dc5031c40be80b04b69bedf3912e6a105e790bbfa9990"},
      {17, 33, 45, 70, "9d8628d2607e14ac9dea1d0b41533e766cfea40ebfd848ab7a587216ae3d25a1"},
      {427, 640, 213, 320, "1e8c18f494822fed4c1b7f83c9b7d3f9ad95648499f2c27cc2b89f869fbf6ec5"},
      {480, 640, 640, 853, "adfd23ab4647c2420f6d600b1f167eaef7a4966acd13229c28f32fe27086cfd2"},
      {586, 640, 320, 349, "b8db36ddd8ac16a35c73d9d924a14a6d623a7a8da7182ba1d57d762e9d8dd2f0"},
  };
  for (const Case& c : cases) {
    Image im{c.w, c.h, std::vector<uint8_t>(static_cast<size_t>(c.w) * c.h * 3)};
    for (int y = 0; y < c.h; ++y)
      for (int x = 0; x < c.w; ++x)
        for (int k = 0; k < 3; ++k)
          im.rgb[(static_cast<size_t>(y) * c.w + x) * 3 + k] =
              static_cast<uint8_t>((x * 7 + y * 13 + k * 101 + (x * y) % 17) % 256);
    EXPECT_EQ(sha256_hex(resize_bilinear_cv(im, c.nw, c.nh).rgb), c.sha256)
        << c.w << "x" << c.h << " -> " << c.nw << "x" << c.nh;
  }
}

// A JPEG with an APP1 "Exif" segment holding only IFD0's orientation tag, spliced in after SOI.
std::vector<uint8_t> with_orientation(const std::vector<uint8_t>& jpeg, int orientation, bool little_endian) {
  std::vector<uint8_t> tiff =
      little_endian ? std::vector<uint8_t>{'I',
                                           'I',
                                           42,
                                           0,
                                           8,
                                           0,
                                           0,
                                           0,
                                           1,
                                           0,
                                           0x12,
                                           0x01,
                                           3,
                                           0,
                                           1,
                                           0,
                                           0,
                                           0,
                                           static_cast<uint8_t>(orientation),
                                           0,
                                           0,
                                           0}
                    : std::vector<uint8_t>{'M',  'M',  0, 42, 0, 0, 0, 8, 0, 1,
                                           0x01, 0x12, 0, 3,  0, 0, 0, 1, 0, static_cast<uint8_t>(orientation),
                                           0,    0};
  tiff.insert(tiff.end(), {0, 0, 0, 0});  // no next IFD
  std::vector<uint8_t> app1 = {0xFF, 0xE1, 0, 0, 'E', 'x', 'i', 'f', 0, 0};
  app1.insert(app1.end(), tiff.begin(), tiff.end());
  const size_t length = app1.size() - 2;
  app1[2] = static_cast<uint8_t>(length >> 8);
  app1[3] = static_cast<uint8_t>(length & 0xFF);
  std::vector<uint8_t> out(jpeg.begin(), jpeg.begin() + 2);
  out.insert(out.end(), app1.begin(), app1.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

TEST(Exif, OrientationTurnsTheImageAsOpenCvDoes) {
  // A 3x2 image whose pixels are all different, written as a high-quality JPEG; each
  // orientation must give the stored image turned or mirrored (compared through the decoder's
  // own output of the plain file, so JPEG's loss does not matter).
  Image im{3, 2, {}};
  for (int i = 0; i < 6; ++i) im.rgb.insert(im.rgb.end(), {uint8_t(40 * i), uint8_t(250 - 40 * i), uint8_t(100)});
  const std::string path = test::binary_dir() + "/exif.jpg";
  write_jpeg(im, path, 100);
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> jpeg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Image stored = decode_image(jpeg, "plain");
  EXPECT_EQ(jpeg_exif_orientation(jpeg), 1);
  auto at = [](const Image& m, int x, int y) { return m.rgb[(static_cast<size_t>(y) * m.width + x) * 3]; };
  for (bool little : {true, false})
    for (int o = 1; o <= 8; ++o) {
      const auto tagged = with_orientation(jpeg, o, little);
      ASSERT_EQ(jpeg_exif_orientation(tagged), o);
      EXPECT_EQ(decode_image(tagged, "tagged").rgb, stored.rgb);  // without the option: as stored
      const Image up = decode_image(tagged, "tagged", /*exif_orientation=*/true);
      ASSERT_EQ(up.width, o >= 5 ? 2 : 3) << o;
      // Where the stored top-left pixel goes.
      const int tx = (o == 2 || o == 3 || o == 6 || o == 7) ? up.width - 1 : 0;
      const int ty = (o == 3 || o == 4 || o == 7 || o == 8) ? up.height - 1 : 0;
      EXPECT_EQ(at(up, tx, ty), at(stored, 0, 0)) << "orientation " << o;
    }
  // Malformed EXIF reads as "as stored".
  auto broken = with_orientation(jpeg, 6, true);
  broken[2 + 4 + 6 + 4] = 0xFF;  // the IFD offset points far outside
  EXPECT_EQ(jpeg_exif_orientation(broken), 1);
  auto cut = with_orientation(jpeg, 6, true);
  cut[3] = 0xF0;  // the segment claims more bytes than it has... and than the file
  EXPECT_EQ(jpeg_exif_orientation(std::span(cut).first(40)), 1);
  EXPECT_EQ(jpeg_exif_orientation({}), 1);
}

TEST(Anchors, CellCentresLevelByLevel) {
  const auto a = anchor_grid(64, 32, {8, 16, 32});
  ASSERT_EQ(a.size(), 3u * (8 * 4 + 4 * 2 + 2 * 1));
  EXPECT_EQ(std::vector<float>(a.begin(), a.begin() + 6), (std::vector<float>{0.5f, 0.5f, 8, 1.5f, 0.5f, 8}));
  const size_t second = 3 * 32;  // the first cell of stride 16
  EXPECT_EQ(std::vector<float>(a.begin() + second, a.begin() + second + 3), (std::vector<float>{0.5f, 0.5f, 16}));
  EXPECT_NE(test::error_message([] {
              anchor_grid(60, 32, {8, 16, 32});
            }).find("not a multiple of stride"),
            std::string::npos);
}

TEST(ScaleBack, UndoesTheLetterboxAndClamps) {
  // 500x375 letterboxed into 640x480: gain 1.28, no padding.
  float b[8] = {64, 128, 128, 256, -20, 0, 700, 500};
  scale_boxes_back(b, 2, 640, 480, 500, 375);
  EXPECT_FLOAT_EQ(b[0], 50);
  EXPECT_FLOAT_EQ(b[1], 100);
  EXPECT_FLOAT_EQ(b[3], 200);
  EXPECT_FLOAT_EQ(b[4], 0);    // clamped
  EXPECT_FLOAT_EQ(b[6], 500);  // to the width
  EXPECT_FLOAT_EQ(b[7], 375);
  // 640x427 in 640x448: 10 rows of padding above.
  float c[4] = {0, 10, 640, 437};
  scale_boxes_back(c, 1, 640, 448, 640, 427);
  EXPECT_FLOAT_EQ(c[1], 0);
  EXPECT_FLOAT_EQ(c[3], 427);
}

TEST(CocoMap, PerfectDetectionsScoreOne) {
  std::vector<std::vector<Box>> truth = {{{0, 0, 10, 10, 0}, {20, 20, 40, 40, 1}}, {{5, 5, 15, 15, 0}}};
  auto dets = truth;
  for (auto& im : dets)
    for (auto& b : im) b.score = 0.9f;
  const MapResult r = coco_map(truth, dets);
  EXPECT_DOUBLE_EQ(r.map50_95, 1.0);
  EXPECT_EQ(r.classes, 2);
  EXPECT_EQ(r.ground_truth, 3);
}

TEST(CocoMap, HandWorkedPrecisionRecall) {
  // One class, two objects. Detections by score: a hit on object A, a miss, then a hit on B.
  // Precision 1, 1/2, 2/3 at recall 1/2, 1/2, 1 -> monotone 1 up to recall 0.5, 2/3 after:
  // AP = (51 * 1 + 50 * 2/3) / 101 at every IoU threshold (the hits are exact).
  std::vector<std::vector<Box>> truth = {{{0, 0, 10, 10, 0}, {50, 50, 60, 60, 0}}};
  std::vector<std::vector<Box>> dets = {
      {{0, 0, 10, 10, 0, 0.9f}, {100, 100, 110, 110, 0, 0.8f}, {50, 50, 60, 60, 0, 0.7f}}};
  const MapResult r = coco_map(truth, dets);
  EXPECT_NEAR(r.map50_95, (51 + 50 * 2.0 / 3) / 101, 1e-12);
  // A box covering 86% of its object (IoU 0.86) hits at the thresholds 0.50 ... 0.85: 8 of 10.
  dets = {{{0, 0, 8.6f, 10, 0, 0.9f}}};
  const MapResult p = coco_map({{{0, 0, 10, 10, 0}}}, dets);
  EXPECT_NEAR(p.map50, 1.0, 1e-12);
  EXPECT_NEAR(p.map50_95, 0.8, 1e-12);
}

TEST(YoloLabels, ParsesAndRejectsBadLines) {
  const std::string dir = test::binary_dir() + "/detection-labels";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/a.txt") << "0 0.5 0.5 0.5 0.25\n\n3 0.25 0.75 0.1 0.1\n";
  const auto boxes = read_yolo_labels(dir + "/a.txt", 200, 100, 80);
  ASSERT_EQ(boxes.size(), 2u);
  EXPECT_FLOAT_EQ(boxes[0].x1, 50);
  EXPECT_FLOAT_EQ(boxes[0].y2, 62.5f);
  EXPECT_EQ(boxes[1].class_id, 3);
  EXPECT_TRUE(read_yolo_labels(dir + "/missing.txt", 10, 10, 80).empty());
  for (const char* bad : {"80 0.5 0.5 0.1 0.1", "1.5 0.5 0.5 0.1 0.1", "0 0.5 0.5 0.1", "0 0.5 0.5 0.1 0.1 7",
                          "0 nan 0.5 0.1 0.1", "x 1 2 3 4"}) {
    std::ofstream(dir + "/b.txt") << bad << "\n";
    EXPECT_NE(test::error_message([&] { read_yolo_labels(dir + "/b.txt", 10, 10, 80); }).find("b.txt line 1"),
              std::string::npos)
        << bad;
  }
}

}  // namespace
}  // namespace kiln::detection
