// kiln's decode + resize + crop + normalise against timm's `inputs` tensor for the first 8
// validation images. Pillow's fixed-point bicubic is reproduced exactly, so the bound is tight.
#include <gtest/gtest.h>

#include "checkpoints/safetensors.h"
#include "datasets/webdataset.h"
#include "tasks/classification/preprocess.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

nlohmann::json timm_b0_cfg() {
  return {{"input_size", {3, 224, 224}}, {"interpolation", "bicubic"},    {"crop_pct", 0.875},
          {"crop_mode", "center"},       {"mean", {0.485, 0.456, 0.406}}, {"std", {0.229, 0.224, 0.225}}};
}

TEST(Preprocess, ReproducesTimmEvalTransform) {
  SafetensorsFile ref(test::data_path("reference/efficientnet_b0_timm_reference.safetensors"));
  Tensor expect = ref.to_float("inputs");
  auto cfg = classification::PreprocessConfig::from_json(timm_b0_cfg());
  std::vector<std::string> keys;
  std::vector<float> got(expect.data.size());
  const size_t per = 3 * 224 * 224;
  for_each_sample(test::data_path("data/imagenet-val-1300/shard-000000.tar"), [&](Sample& s) {
    Image img = decode_image(s.parts.at("jpg"), s.key);
    classification::preprocess(img, cfg, got.data() + keys.size() * per);
    keys.push_back(s.key);
    return keys.size() < 8;
  });
  ASSERT_EQ(keys.size(), 8u);
  EXPECT_NE(keys[0].find("ILSVRC2012_val_00000347"), std::string::npos);
  for (size_t i = 0; i < 8; ++i)
    EXPECT_LT(test::max_abs_diff(got.data() + i * per, expect.data.data() + i * per, per), 1e-5) << keys[i];
}

TEST(Preprocess, ResizesShorterSideAndCropsCentre) {
  // A 300x200 image: shorter side 200 -> 256, longer int(256 * 300 / 200) = 384, crop 224 at (80, 16).
  Image img{300, 200, std::vector<uint8_t>(300 * 200 * 3)};
  for (size_t i = 0; i < img.rgb.size(); ++i) img.rgb[i] = static_cast<uint8_t>((i * 7) % 251);
  Image resized = resize_pil(img, 384, 256, ResampleFilter::Bicubic);
  EXPECT_EQ(resized.width, 384);
  EXPECT_EQ(resized.height, 256);
  auto cfg = classification::PreprocessConfig::from_json(timm_b0_cfg());
  std::vector<float> out(3 * 224 * 224);
  classification::preprocess(img, cfg, out.data());
  const uint8_t* px = resized.rgb.data() + (16 * 384 + 80) * 3;
  EXPECT_FLOAT_EQ(out[0], (px[0] / 255.0f - 0.485f) / 0.229f);
}

TEST(Preprocess, AWindowOfAResizeIsThatPartOfTheFullResize) {
  Image img{301, 197, std::vector<uint8_t>(301 * 197 * 3)};
  for (size_t i = 0; i < img.rgb.size(); ++i) img.rgb[i] = static_cast<uint8_t>((i * 7 + i / 613) % 251);
  struct Case {
    int w, h;
    ImageWindow window;
  };
  // Down, up, one side unchanged (one pass only), both unchanged (a plain crop), windows at the edges.
  const Case cases[] = {{384, 256, {80, 16, 224, 224}}, {600, 400, {0, 0, 37, 400}},  {301, 120, {3, 100, 298, 20}},
                        {150, 197, {149, 0, 1, 197}},   {301, 197, {10, 20, 30, 40}}, {64, 64, {0, 63, 64, 1}}};
  for (ResampleFilter f : {ResampleFilter::Bilinear, ResampleFilter::Bicubic, ResampleFilter::Lanczos})
    for (const Case& c : cases) {
      Image full = resize_pil(img, c.w, c.h, f);
      Image part = resize_pil(img, c.w, c.h, f, c.window);
      ASSERT_EQ(part.width, c.window.width);
      ASSERT_EQ(part.height, c.window.height);
      for (int y = 0; y < part.height; ++y)
        for (int x = 0; x < part.width * 3; ++x)
          ASSERT_EQ(part.rgb[(static_cast<size_t>(y) * part.width * 3) + x],
                    full.rgb[(static_cast<size_t>(y + c.window.top) * full.width + c.window.left) * 3 + x])
              << c.w << "x" << c.h << " at " << x << "," << y;
    }
  EXPECT_THROW(resize_pil(img, 384, 256, ResampleFilter::Bicubic, {200, 0, 200, 10}), Error);
  EXPECT_THROW(resize_pil(img, 384, 256, ResampleFilter::Bicubic, {0, 0, 0, 10}), Error);
}

TEST(Preprocess, RejectsBadConfig) {
  auto cfg = timm_b0_cfg();
  cfg["input_size"] = {3, 0, 224};
  EXPECT_THROW(classification::PreprocessConfig::from_json(cfg), Error);
  cfg = timm_b0_cfg();
  cfg["interpolation"] = "hamming";
  EXPECT_THROW(classification::PreprocessConfig::from_json(cfg), Error);
}

}  // namespace
}  // namespace kiln
