// A transformer encoder layer and a decoder step with a KV cache, built through the graph API
// (tests/transformer_graphs.h), on the CPU reference: any sequence length from 1 to 256, padding
// that changes nothing it should not, and a cached decoder that reproduces the full one.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backends/engine.h"
#include "tests/test_support.h"
#include "tests/transformer_graphs.h"

namespace kiln {
namespace {

std::vector<int64_t> token_ids(int batch, int seq, int vocab, int salt) {
  std::vector<int64_t> ids(static_cast<size_t>(batch) * seq);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7 + salt * 13 + 3) % vocab);
  return ids;
}

std::vector<int64_t> iota(int n) {
  std::vector<int64_t> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

std::vector<HostTensor> encoder_inputs(const std::vector<int64_t>& ids, int batch, int seq,
                                       const std::vector<float>& mask) {
  return {HostTensor::from_i64("ids", {batch, seq}, ids), HostTensor::from_i64("positions", {seq}, iota(seq)),
          HostTensor::from_f32("mask", {batch, seq}, mask)};
}

TEST(Transformer, EncoderRunsEverySequenceLengthAndIgnoresPadding) {
  const auto def = test::tiny_transformer();
  Engine e(def.graph("encoder"), def.constants(), EngineOptions{"cpu"});
  const float inf = std::numeric_limits<float>::infinity();
  for (int seq : {1, 7, 256}) {
    const auto ids = token_ids(2, seq, 50, seq);
    const auto out = e.run(encoder_inputs(ids, 2, seq, std::vector<float>(2 * seq, 0.0f)));
    ASSERT_EQ(out[0].shape, (std::vector<int64_t>{2, seq, 32}));
    for (float v : out[0].to_f32()) ASSERT_TRUE(std::isfinite(v)) << seq;
  }
  // Three more tokens, masked out: the first five positions come out the same.
  const int valid = 5, padded = 8;
  const auto ids = token_ids(1, padded, 50, 1);
  std::vector<float> mask(padded, 0.0f);
  for (int i = valid; i < padded; ++i) mask[i] = -inf;
  const auto a = e.run(encoder_inputs({ids.begin(), ids.begin() + valid}, 1, valid, std::vector<float>(valid, 0.0f)));
  const auto b = e.run(encoder_inputs(ids, 1, padded, mask));
  const auto fa = a[0].to_f32(), fb = b[0].to_f32();
  EXPECT_LT(test::max_abs_diff(fa.data(), fb.data(), fa.size()), 1e-5);
  // Not masked, the extra tokens change the first five.
  const auto c = e.run(encoder_inputs(ids, 1, padded, std::vector<float>(padded, 0.0f)))[0].to_f32();
  EXPECT_GT(test::max_abs_diff(fa.data(), c.data(), fa.size()), 1e-2);
}

// Step t (position t, cache length t + 1) gives what the causal decoder gives at position t.
TEST(Transformer, DecoderStepsWithAKvCacheMatchTheFullDecoder) {
  const auto def = test::tiny_transformer();
  const int batch = 2, steps = 12, vocab = 50;
  const auto ids = token_ids(batch, steps, vocab, 5);
  Engine full(def.graph("decoder"), def.constants(), EngineOptions{"cpu"});
  const auto want = full.run({HostTensor::from_i64("ids", {batch, steps}, ids),
                              HostTensor::from_i64("positions", {steps}, iota(steps))})[0]
                        .to_f32();
  Engine step(def.graph("decoder_step"), def.constants(), EngineOptions{"cpu"});
  for (int t = 0; t < steps; ++t) {
    const std::vector<int64_t> token = {ids[t], ids[steps + t]};
    const auto got =
        step.run({HostTensor::from_i64("ids", {batch, 1}, token), HostTensor::from_i64("position", {1}, {t}),
                  HostTensor::from_i64("length", {batch}, {t + 1, t + 1})})[0]
            .to_f32();
    for (int b = 0; b < batch; ++b)
      EXPECT_LT(test::max_abs_diff(got.data() + b * vocab, want.data() + (b * steps + t) * vocab, vocab), 1e-4)
          << "step " << t << " sequence " << b;
  }
  // A fresh cache forgets: step 0 again gives step 0's logits, not a continuation.
  step.reset_states();
  const auto again =
      step.run({HostTensor::from_i64("ids", {batch, 1}, {ids[0], ids[steps]}),
                HostTensor::from_i64("position", {1}, {0}), HostTensor::from_i64("length", {batch}, {1, 1})})[0]
          .to_f32();
  EXPECT_LT(test::max_abs_diff(again.data(), want.data(), vocab), 1e-4);
  // A length past what was written reads zeros from the cache: the answer changes.
  const auto stale =
      step.run({HostTensor::from_i64("ids", {batch, 1}, {ids[1], ids[steps + 1]}),
                HostTensor::from_i64("position", {1}, {1}), HostTensor::from_i64("length", {batch}, {5, 5})})[0]
          .to_f32();
  EXPECT_GT(test::max_abs_diff(stale.data(), want.data() + vocab, vocab), 1e-3);
}

TEST(Transformer, CacheOffsetsAndLengthsOutOfRangeAreErrors) {
  const auto def = test::tiny_transformer();
  Engine step(def.graph("decoder_step"), def.constants(), EngineOptions{"cpu"});
  auto run = [&](int64_t position, int64_t length) {
    return test::error_message([&] {
      step.run({HostTensor::from_i64("ids", {1, 1}, {3}), HostTensor::from_i64("position", {1}, {position}),
                HostTensor::from_i64("length", {1}, {length})});
    });
  };
  EXPECT_EQ(run(255, 256), "");
  EXPECT_NE(run(256, 256), "");  // the cache holds 256 positions
  EXPECT_NE(run(0, 257), "");
  EXPECT_NE(test::error_message([&] {
              step.run({HostTensor::from_i64("ids", {1, 1}, {50}), HostTensor::from_i64("position", {1}, {0}),
                        HostTensor::from_i64("length", {1}, {1})});
            }).find("out of range"),
            std::string::npos);  // token id 50 of a 50-word vocabulary
}

}  // namespace
}  // namespace kiln
