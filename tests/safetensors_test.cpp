// The safetensors reader on real checkpoints and on malformed files: each must fail with one
// clear message, never crash or read out of bounds.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "checkpoints/checkpoint.h"
#include "checkpoints/safetensors.h"
#include "core/error.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

std::vector<uint8_t> make_file(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0);
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  for (size_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = static_cast<uint8_t>(i);
  return out;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  return test::error_message([&] { SafetensorsFile::from_bytes(bytes, "t.safetensors"); });
}

TEST(Safetensors, ReadsRealCheckpoint) {
  SafetensorsFile f(test::data_path("checkpoints/efficientnet_b0.tfhub-transplant/model.safetensors"));
  EXPECT_EQ(f.tensors().size(), 360u);
  EXPECT_EQ(f.info("conv_stem.weight").shape, (std::vector<int64_t>{32, 3, 3, 3}));
  Tensor w = f.to_float("classifier.bias");
  EXPECT_EQ(w.numel(), 1000);
}

TEST(Safetensors, ConvertsHalfAndBfloat16) {
  // 1.0, -2.0, 65504 in F16; 1.0, -2.0 in BF16
  std::string h =
      R"({"a":{"dtype":"F16","shape":[3],"data_offsets":[0,6]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[6,10]}})";
  auto bytes = make_file(h, 10);
  uint16_t vals[5] = {0x3C00, 0xC000, 0x7BFF, 0x3F80, 0xC000};
  std::memcpy(bytes.data() + 8 + h.size(), vals, 10);
  auto f = SafetensorsFile::from_bytes(bytes, "t");
  EXPECT_EQ(f.to_float("a").data, (std::vector<float>{1.0f, -2.0f, 65504.0f}));
  EXPECT_EQ(f.to_float("b").data, (std::vector<float>{1.0f, -2.0f}));
}

TEST(Safetensors, RejectsMalformedFiles) {
  const std::string good = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  EXPECT_EQ(error_of(make_file(good, 16)), "");
  EXPECT_NE(error_of({1, 2, 3}).find("too short"), std::string::npos);
  auto truncated = make_file(good, 16);
  truncated.resize(truncated.size() - 4);
  EXPECT_NE(error_of(truncated).find("truncated"), std::string::npos);
  auto huge = make_file(good, 16);
  uint64_t big = 1ull << 40;
  std::memcpy(huge.data(), &big, 8);
  EXPECT_NE(error_of(huge).find("limit"), std::string::npos);
  auto past = make_file(good, 16);
  uint64_t over = past.size();
  std::memcpy(past.data(), &over, 8);
  EXPECT_NE(error_of(past).find("past the end"), std::string::npos);
  EXPECT_NE(error_of(make_file("{not json", 0)).find("not a JSON"), std::string::npos);
  EXPECT_NE(error_of(make_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", 16)).find("need"),
            std::string::npos);
  EXPECT_NE(error_of(make_file(R"({"w":{"dtype":"Q4","shape":[4],"data_offsets":[0,16]}})", 16)).find("unsupported"),
            std::string::npos);
  EXPECT_NE(error_of(make_file(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[8,4]}})", 16)).find("before"),
            std::string::npos);
  EXPECT_NE(
      error_of(
          make_file(
              R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
              16))
          .find("overlap"),
      std::string::npos);
  // A shape whose element count overflows 64 bits.
  EXPECT_NE(error_of(make_file(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,16]}})", 16))
                .find("overflow"),
            std::string::npos);
  EXPECT_NE(
      error_of(make_file(R"({"w":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", 16)).find("bad dimension"),
      std::string::npos);
}

}  // namespace
}  // namespace kiln
