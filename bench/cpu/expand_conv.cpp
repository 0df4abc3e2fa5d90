// One oneDNN convolution outside kiln: efficientnet_b0's first expand layer (1x1, 16 -> 96
// channels at 112 x 112, NHWC, SiLU fused, the primitive kiln's fast kernels create), on made-up
// data, its own tensors in one buffer. Prints the median ms of 30 calls. Not part of the build:
// it is the standalone side of two measurements in bench/results/2026-12-03-cpu-denormals.md
// (this layer inside kiln against outside it; denormal outputs with and without FTZ/DAZ).
//
//   g++ -O2 -fopenmp -std=c++20 bench/cpu/expand_conv.cpp -o expand_conv -ldnnl
//   OMP_NUM_THREADS=2 ./expand_conv BATCH [WEIGHT_SCALE] [ftz]
// WEIGHT_SCALE (default 0.25) scales the weights; at 40 many outputs fall where SiLU makes
// denormals. "ftz" sets the FTZ and DAZ bits on every thread first.
#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

using dnnl::memory;
using Tag = memory::format_tag;
using dt = memory::data_type;

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 8;
  const float weight_scale = argc > 2 ? std::strtof(argv[2], nullptr) : 0.25f;
  if (argc > 3 && std::strcmp(argv[3], "ftz") == 0) {
#pragma omp parallel
    _mm_setcsr(_mm_getcsr() | 0x8040);
  }
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc src({n, 16, 112, 112}, dt::f32, Tag::nhwc), dst({n, 96, 112, 112}, dt::f32, Tag::nhwc);
  const memory::desc weights({96, 16, 1, 1}, dt::f32, Tag::any), bias({96}, dt::f32, Tag::a);
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                             src, weights, bias, dst, {1, 1}, {0, 0}, {0, 0}, {0, 0});
  const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
  const dnnl::convolution_forward conv(pd);

  // src and dst in one buffer (as in kiln's arena), made-up values in [-1, 1).
  const size_t src_bytes = (src.get_size() + 4095) / 4096 * 4096, total = src_bytes + dst.get_size();
  float* buffer = static_cast<float*>(std::aligned_alloc(4096, total));
  for (size_t i = 0; i < total / 4; ++i) buffer[i] = static_cast<float>((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  memory w(pd.weights_desc(), engine), b(bias, engine);
  for (memory* m : {&w, &b}) {
    float* f = static_cast<float*>(m->get_data_handle());
    for (size_t i = 0; i < m->get_desc().get_size() / 4; ++i)
      f[i] = (static_cast<float>((i * 7919u) % 1000) / 500.0f - 1.0f) * weight_scale;
  }
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(src, engine, buffer)},
      {DNNL_ARG_WEIGHTS, w},
      {DNNL_ARG_BIAS, b},
      {DNNL_ARG_DST, memory(dst, engine, reinterpret_cast<char*>(buffer) + src_bytes)}};
  std::vector<double> ms;
  for (int i = 0; i < 33; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    conv.execute(stream, args);
    stream.wait();
    if (i >= 3) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("batch %d, weight scale %g, %d threads%s: %.3f ms (%s)\n", n, weight_scale, omp_get_max_threads(),
              argc > 3 ? ", FTZ/DAZ" : "", ms[ms.size() / 2], pd.impl_info_str());
  std::free(buffer);
}
