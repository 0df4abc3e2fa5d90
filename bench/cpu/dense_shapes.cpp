// The dense layers of a transformer on the CPU, four ways, for the row counts a batch of beams
// or an encoder gives: oneDNN's matmul on the weights as stored ([N, K] read as "ba"), oneDNN's
// matmul on weights reordered into the layout it picks for those rows, the same on the layout it
// picks for 9 rows (what the kernel keeps), and OpenBLAS's sgemm split over the
// threads by output columns (what the reference kernels do, backends/cpu/gemm.cpp). Prints the
// median ms of each per shape. Not part of the build: it decides backends/cpu/fast/linear.cpp's
// choice and is kept to repeat that measurement.
//
//   g++ -O3 -fopenmp -std=c++20 bench/cpu/dense_shapes.cpp -o dense_shapes -ldnnl \
//     -I/usr/include/x86_64-linux-gnu/openblas-pthread -lopenblas
//   OMP_NUM_THREADS=2 ./dense_shapes
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <vector>

using dnnl::memory;
using Tag = memory::format_tag;
using dt = memory::data_type;

namespace {

double median_ms(const std::function<void()>& f, int iters) {
  f();
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void openblas_xwt(const float* x, const float* w, float* y, int rows, int in, int out) {
  const int threads = std::clamp(out / 64, 1, omp_get_max_threads());
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    const int begin = static_cast<int>(static_cast<int64_t>(out) * t / threads);
    const int end = static_cast<int>(static_cast<int64_t>(out) * (t + 1) / threads);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, end - begin, in, 1.0f, x, in,
                w + static_cast<int64_t>(begin) * in, in, 0.0f, y + begin, out);
  }
}

}  // namespace

int main() {
  openblas_set_num_threads(1);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::printf("threads %d\n%6s %6s %6s %10s %10s %10s %10s\n", omp_get_max_threads(), "rows", "in", "out", "dnnl_ba",
              "dnnl_pack", "pack_at_9", "openblas");
  const int shapes[][2] = {{512, 512}, {512, 2048}, {2048, 512}, {768, 768}, {768, 3072}, {512, 58101}};
  for (const auto& s : shapes) {
    const int in = s[0], out = s[1];
    std::vector<float> w(static_cast<size_t>(in) * out);
    for (float& v : w) v = u(rng);
    memory::desc layout_at_9;  // the layout oneDNN picks for 9 rows, used for every row count
    for (int rows : {9, 16, 32, 64, 128, 256, 512}) {
      std::vector<float> x(static_cast<size_t>(rows) * in), y(static_cast<size_t>(rows) * out);
      for (float& v : x) v = u(rng);
      const memory::desc src({rows, in}, dt::f32, Tag::ab), dst({rows, out}, dt::f32, Tag::ab);
      const memory::desc w_ba({in, out}, dt::f32, Tag::ba), w_any({in, out}, dt::f32, Tag::any);
      memory xm(src, engine, x.data()), ym(dst, engine, y.data()), wm(w_ba, engine, w.data());
      const dnnl::matmul::primitive_desc pd_ba(dnnl::matmul::desc(src, w_ba, dst), engine);
      dnnl::matmul mm_ba(pd_ba);
      const dnnl::matmul::primitive_desc pd_any(dnnl::matmul::desc(src, w_any, dst), engine);
      dnnl::matmul mm_any(pd_any);
      memory packed(pd_any.weights_desc(), engine);
      dnnl::reorder(wm, packed).execute(stream, wm, packed);
      stream.wait();
      if (rows == 9) layout_at_9 = pd_any.weights_desc();
      const dnnl::matmul::primitive_desc pd_9(dnnl::matmul::desc(src, layout_at_9, dst), engine);
      dnnl::matmul mm_9(pd_9);
      memory packed_9(layout_at_9, engine);
      dnnl::reorder(wm, packed_9).execute(stream, wm, packed_9);
      stream.wait();
      const int iters = rows * static_cast<int64_t>(in) * out > 500'000'000 ? 10 : 50;
      const double a = median_ms(
          [&] {
            mm_ba.execute(stream, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, ym}});
            stream.wait();
          },
          iters);
      const double b = median_ms(
          [&] {
            mm_any.execute(stream, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, packed}, {DNNL_ARG_DST, ym}});
            stream.wait();
          },
          iters);
      const double c9 = median_ms(
          [&] {
            mm_9.execute(stream, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, packed_9}, {DNNL_ARG_DST, ym}});
            stream.wait();
          },
          iters);
      const double c = median_ms([&] { openblas_xwt(x.data(), w.data(), y.data(), rows, in, out); }, iters);
      std::printf("%6d %6d %6d %10.3f %10.3f %10.3f %10.3f  %s\n", rows, in, out, a, b, c9, c, pd_9.impl_info_str());
      std::fflush(stdout);
    }
  }
}
