// Denormal floats on the CPU backend: flushed to zero while its kernels run, on the calling
// thread and on the threads of its OpenMP team, and the caller's own mode restored after
// (backends/cpu/threads.h says why).
#include <gtest/gtest.h>

#include <vector>

#include "backends/cpu/threads.h"
#include "backends/engine.h"
#include "core/error.h"

namespace kiln {
namespace {

#if defined(__x86_64__) || defined(__i386__)

// A product computed at run time (volatile: the compiler may not fold it under its own rules).
float times_one(float x) {
  volatile float v = x, one = 1.0f;
  return v * one;
}

TEST(CpuDenormals, FlushedInsideTheScopeAndRestoredAfter) {
  constexpr float kDenormal = 1e-40f;
  ASSERT_EQ(times_one(kDenormal), kDenormal);
  {
    const cpu::FlushDenormals flush;
    EXPECT_EQ(times_one(kDenormal), 0.0f);        // read as zero
    EXPECT_EQ(times_one(1e-20f) * 1e-20f, 0.0f);  // a product below the normal range made zero
    EXPECT_EQ(times_one(1e-30f), 1e-30f);         // normal numbers untouched
  }
  EXPECT_EQ(times_one(kDenormal), kDenormal);
}

TEST(CpuDenormals, EveryThreadOfAKernelFlushesThem) {
  const int before = cpu::threads();
  cpu::set_threads(2);  // the multiply below runs on a team of two (256 rows of 256)
  Graph g;
  const int64_t rows = 256, n = rows * rows;
  const int a = g.add_input("a", DType::F32, fixed_shape({rows, rows}));
  const int b = g.add_input("b", DType::F32, fixed_shape({rows, rows}));
  g.add_output("y", g.add_node("mul", "mul", {a, b}, {})[0]);
  for (const char* device : {"cpu", "cpu-reference"}) {
    Engine e(
        g, [](const std::string& name) -> ConstantView { fail("[test] no constant '{}'", name); },
        EngineOptions{device});
    const std::vector<float> y = e.run({HostTensor::from_f32("a", {rows, rows}, std::vector<float>(n, 1e-40f)),
                                        HostTensor::from_f32("b", {rows, rows}, std::vector<float>(n, 1.0f))})[0]
                                     .to_f32();
    int nonzero = 0;
    for (float v : y) nonzero += v != 0.0f;
    EXPECT_EQ(nonzero, 0) << device;
  }
  EXPECT_EQ(times_one(1e-40f), 1e-40f);  // the caller's mode is its own again
  cpu::set_threads(before);
}

#endif

}  // namespace
}  // namespace kiln
