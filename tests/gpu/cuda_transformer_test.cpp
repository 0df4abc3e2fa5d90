// The tiny transformer (tests/transformer_graphs.h) on CUDA against the CPU reference: the
// encoder at sequence lengths 1 to 256, and the decoder step by step with its KV cache kept in
// states on the GPU, in fp32 and in fp16. Every node must run on the GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "backends/engine.h"
#include "tests/test_graphs.h"
#include "tests/transformer_graphs.h"

namespace kiln {
namespace {

std::vector<int64_t> iota(int n) {
  std::vector<int64_t> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST(CudaTransformer, EncoderMatchesCpu) {
  REQUIRE_GPU();
  const auto def = test::tiny_transformer();
  Engine cpu(def.graph("encoder"), def.constants(), EngineOptions{"cpu"});
  for (const char* precision : {"fp32", "fp16"}) {
    Engine gpu(def.graph("encoder"), def.constants(), EngineOptions{"cuda", precision});
    EXPECT_EQ(gpu.cpu_fallback_nodes(), 0) << precision;
    for (int seq : {1, 13, 256}) {
      std::vector<int64_t> ids(2 * seq);
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 11 + 5) % 50);
      std::vector<float> mask(2 * seq, 0.0f);
      for (int i = seq / 2 + 1; i < seq; ++i) mask[seq + i] = -std::numeric_limits<float>::infinity();  // padding
      const std::vector<HostTensor> in = {HostTensor::from_i64("ids", {2, seq}, ids),
                                          HostTensor::from_i64("positions", {seq}, iota(seq)),
                                          HostTensor::from_f32("mask", {2, seq}, mask)};
      const auto a = cpu.run(in)[0].to_f32(), b = gpu.run(in)[0].to_f32();
      EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), std::string(precision) == "fp32" ? 1e-5 : 1e-2)
          << precision << " seq " << seq;
    }
  }
}

// A second engine (as in a second process) with the timing cache the first one wrote times no
// kernel, takes the first one's choices and computes the same outputs.
TEST(CudaTransformer, ATimingCacheSparesTheSecondEngineItsTimings) {
  REQUIRE_GPU();
  const auto def = test::tiny_transformer();
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("kiln-gpu-timing-cache-test-{}.json", ::getpid())).string();
  std::filesystem::remove(path);
  const int seq = 48;
  std::vector<int64_t> ids(2 * seq);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7 + 3) % 50);
  const std::vector<HostTensor> in = {HostTensor::from_i64("ids", {2, seq}, ids),
                                      HostTensor::from_i64("positions", {seq}, iota(seq)),
                                      HostTensor::from_f32("mask", {2, seq}, std::vector<float>(2 * seq, 0.0f))};
  struct Run {
    Engine::Planning planning;
    nlohmann::json plans;
    std::vector<float> out;
  };
  auto run = [&] {
    EngineOptions o{"cuda", "fp16"};
    o.timing_cache = std::make_shared<TimingCache>(path, "test");
    Engine e(def.graph("encoder"), def.constants(), o);
    std::vector<float> out = e.run(in)[0].to_f32();
    return Run{e.planning(), e.export_plans(), std::move(out)};
  };
  const Run first = run(), second = run();
  EXPECT_GE(first.planning.timed, 2) << "the encoder's GEMMs";
  EXPECT_EQ(first.planning.cached, 0);
  EXPECT_EQ(second.planning.timed, 0);
  EXPECT_EQ(second.planning.cached, first.planning.timed);
  EXPECT_EQ(second.plans, first.plans);
  EXPECT_EQ(second.out, first.out);
  std::filesystem::remove(path);
}

// Each of the cuBLASLt heuristic's algorithms that a linear layer may be planned with, forced
// on every layer that takes it (bias epilogues; the residual as cuBLASLt's C), against the CPU.
TEST(CudaTransformer, EveryCublasLtAlgorithmMatchesCpu) {
  REQUIRE_GPU();
  const auto def = test::tiny_transformer();
  const int batch = 2, seq = 37;
  const Bindings sizes = {{"batch", batch}, {"seq", seq}};
  const test::ForcedVariants forced(def, sizes, "cuda", "encoder");
  std::vector<int64_t> ids(batch * seq);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7 + 3) % 50);
  std::vector<float> mask(batch * seq, 0.0f);
  for (int i = 30; i < seq; ++i) mask[seq + i] = -std::numeric_limits<float>::infinity();
  const std::vector<HostTensor> in = {HostTensor::from_i64("ids", {batch, seq}, ids),
                                      HostTensor::from_i64("positions", {seq}, iota(seq)),
                                      HostTensor::from_f32("mask", {batch, seq}, mask)};
  const auto a = test::engine(def, "cpu", nlohmann::json::object(), "encoder")->run(in)[0].to_f32();
  int algorithms = 0;
  for (const std::string variant : {"cublaslt", "cublaslt_2", "cublaslt_3", "cublaslt_4"}) {
    auto gpu = forced.forced(variant);
    const auto b = gpu->run(in)[0].to_f32();
    const int taken = test::ForcedVariants::taken(*gpu, sizes, variant);
    algorithms += taken > 0;
    if (variant == std::string("cublaslt")) {
      EXPECT_GE(taken, 4) << "the forced plan was not used";
    }
    EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 1e-2) << variant;
  }
  // How many the heuristic offers depends on the library and the GPU (four on an H100).
  std::printf("[cuda transformer] %d cuBLASLt algorithms taken\n", algorithms);
  EXPECT_GE(algorithms, 1);
}

// The vocabulary projection (50 outputs, padded to 56) through cuBLASLt into padded rows, the
// valid columns copied out: forced, against the CPU.
TEST(CudaTransformer, PaddedCublasLtProjectionMatchesCpu) {
  REQUIRE_GPU();
  const auto def = test::tiny_transformer();
  const int batch = 3, seq = 21;
  const Bindings sizes = {{"batch", batch}, {"seq", seq}};
  const test::ForcedVariants forced(def, sizes, "cuda", "decoder");
  std::vector<int64_t> ids(batch * seq);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 5 + 1) % 50);
  const std::vector<HostTensor> in = {HostTensor::from_i64("ids", {batch, seq}, ids),
                                      HostTensor::from_i64("positions", {seq}, iota(seq))};
  const auto a = test::engine(def, "cpu", nlohmann::json::object(), "decoder")->run(in)[0].to_f32();
  auto gpu = forced.forced("cublaslt_padded");
  const auto b = gpu->run(in)[0].to_f32();
  EXPECT_EQ(test::ForcedVariants::taken(*gpu, sizes, "cublaslt_padded"), 1) << "the forced plan was not used";
  ASSERT_EQ(a.size(), b.size());
  EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 1e-2);
}

// norm_linear's one-kernel form (the few-rows kernel normalising its input rows) forced on every
// layer that takes it, and linear's few-rows kernel after layer_norm's forced the same way, at 1,
// 9 (two groups of rows) and 40 rows, against the CPU; the vocabulary projection (50 outputs,
// padded to 56) is one of them.
TEST(CudaTransformer, NormLinearInOneKernelMatchesCpu) {
  REQUIRE_GPU();
  const auto def = test::tiny_transformer();
  for (const auto& [batch, seq] : {std::pair{1, 1}, std::pair{3, 3}, std::pair{2, 20}}) {
    const Bindings sizes = {{"batch", batch}, {"seq", seq}};
    const test::ForcedVariants forced(def, sizes, "cuda", "decoder");
    std::vector<int64_t> ids(batch * seq);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 13 + 2) % 50);
    const std::vector<HostTensor> in = {HostTensor::from_i64("ids", {batch, seq}, ids),
                                        HostTensor::from_i64("positions", {seq}, iota(seq))};
    const auto a = test::engine(def, "cpu", nlohmann::json::object(), "decoder")->run(in)[0].to_f32();
    for (const std::string variant : {"gemv_norm", "gemv"}) {
      auto gpu = forced.forced(variant);
      const auto b = gpu->run(in)[0].to_f32();  // prepares the plan that `taken` reads
      const int taken = test::ForcedVariants::taken(*gpu, sizes, variant);
      if (variant == "gemv_norm")
        EXPECT_EQ(taken, 4) << "rows " << batch * seq;  // two norms in each of 2 layers
      else
        EXPECT_GE(taken, 4) << "rows " << batch * seq;
      ASSERT_EQ(a.size(), b.size());
      EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 1e-2) << variant << " rows " << batch * seq;
    }
  }
}

// A token id outside the table is flagged by the GPU's gather and read back with the run's
// outputs: the call throws, and the next call with valid ids is clean and right.
TEST(CudaTransformer, AnIdOutOfRangeFailsTheCallAndOnlyThatCall) {
  REQUIRE_GPU();
  const auto def = test::tiny_transformer();
  Engine cpu(def.graph("encoder"), def.constants(), EngineOptions{"cpu"});
  Engine gpu(def.graph("encoder"), def.constants(), EngineOptions{"cuda", "fp32"});
  auto inputs = [](int64_t first_id) {
    return std::vector<HostTensor>{HostTensor::from_i64("ids", {1, 3}, {first_id, 7, 9}),
                                   HostTensor::from_i64("positions", {3}, iota(3)),
                                   HostTensor::from_f32("mask", {1, 3}, {0, 0, 0})};
  };
  for (int round = 0; round < 2; ++round) {
    try {
      gpu.run(inputs(1000000));
      ADD_FAILURE() << "an id past the vocabulary was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
    const auto a = cpu.run(inputs(3))[0].to_f32(), b = gpu.run(inputs(3))[0].to_f32();
    EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 1e-5) << "round " << round;
  }
}

// The default model's heads are 8 wide; heads of 64 with caches of 32, 64 and 256 positions
// give the GPU's step kernel 1, 2 and 4 warps a row (its fp16 form reads the cached keys and
// values of its first chunk before it waits, and writes the new position last), over caches that
// fill step by step; 3 rows of 2 heads leave rows past the last in the second block of one-warp
// rows (4 a block).
TEST(CudaTransformer, DecoderStepsWithAKvCacheMatchCpu) {
  REQUIRE_GPU();
  const std::vector<test::TinyTransformer> models = {
      {}, {50, 128, 2, 64, 2, 32}, {50, 128, 2, 64, 2, 64}, {50, 128, 2, 64, 2, 256}};
  for (const test::TinyTransformer& m : models) {
    const auto def = test::tiny_transformer(m);
    const int batch = 3, steps = std::min(40, m.capacity);
    for (const char* precision : {"fp32", "fp16"}) {
      Engine cpu(def.graph("decoder_step"), def.constants(), EngineOptions{"cpu"});
      Engine gpu(def.graph("decoder_step"), def.constants(), EngineOptions{"cuda", precision});
      EXPECT_EQ(gpu.cpu_fallback_nodes(), 0) << precision;
      double worst = 0;
      for (int t = 0; t < steps; ++t) {
        const std::vector<HostTensor> in = {
            HostTensor::from_i64("ids", {batch, 1}, {(t * 7 + 1) % 50, (t * 3 + 2) % 50, (t * 5 + 3) % 50}),
            HostTensor::from_i64("position", {1}, {t}), HostTensor::from_i64("length", {batch}, {t + 1, t + 1, t + 1})};
        const auto a = cpu.run(in)[0].to_f32(), b = gpu.run(in)[0].to_f32();
        worst = std::max(worst, test::rel_l2(b.data(), a.data(), a.size()));
      }
      EXPECT_LT(worst, std::string(precision) == "fp32" ? 1e-5 : 2e-2) << precision << " d " << m.d;
      std::printf("[cuda transformer] d %d, %d heads, %d positions, %s: worst step rel L2 %.2e over %d steps\n", m.d,
                  m.heads, m.capacity, precision, worst, steps);
    }
  }
}

}  // namespace
}  // namespace kiln
