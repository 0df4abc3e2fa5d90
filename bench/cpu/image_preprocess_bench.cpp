// Decoding and classifier preprocessing of the sample images on one core: what `kiln serve` and
// `kiln eval` spend per image before the network runs. The resize cases time Pillow's bicubic
// resize to the whole 384x256 result (what preprocessing did before it resized only the crop)
// and to the 224x224 centre window it keeps.
//
//   build/bench/kiln_image_preprocess_bench [--benchmark_filter=...]   (from the repository root)
#include <benchmark/benchmark.h>

#include <fstream>
#include <iterator>
#include <vector>

#include "tasks/classification/preprocess.h"
#include "tasks/image/image.h"
#include "tasks/image/resize_pil.h"

namespace {

std::vector<uint8_t> read(const char* path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

kiln::classification::PreprocessConfig b0_config() {
  return kiln::classification::PreprocessConfig::from_json({{"input_size", {3, 224, 224}},
                                                            {"interpolation", "bicubic"},
                                                            {"crop_pct", 0.875},
                                                            {"crop_mode", "center"},
                                                            {"mean", {0.485, 0.456, 0.406}},
                                                            {"std", {0.229, 0.224, 0.225}}});
}

void Decode(benchmark::State& state, const char* path) {
  const auto bytes = read(path);
  for (auto _ : state) benchmark::DoNotOptimize(kiln::decode_image(bytes, path));
}
BENCHMARK_CAPTURE(Decode, webp_600x400, "samples/coffee.webp")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Decode, jpeg, "samples/rocket.jpg")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Decode, png, "samples/cat.png")->Unit(benchmark::kMillisecond);

void ResizeWhole(benchmark::State& state) {
  const kiln::Image image = kiln::load_image("samples/coffee.webp");
  for (auto _ : state) benchmark::DoNotOptimize(kiln::resize_pil(image, 384, 256, kiln::ResampleFilter::Bicubic));
}
BENCHMARK(ResizeWhole)->Unit(benchmark::kMillisecond);

void ResizeCentreWindow(benchmark::State& state) {
  const kiln::Image image = kiln::load_image("samples/coffee.webp");
  for (auto _ : state)
    benchmark::DoNotOptimize(kiln::resize_pil(image, 384, 256, kiln::ResampleFilter::Bicubic, {80, 16, 224, 224}));
}
BENCHMARK(ResizeCentreWindow)->Unit(benchmark::kMillisecond);

void Preprocess(benchmark::State& state) {
  const kiln::Image image = kiln::load_image("samples/coffee.webp");
  const auto config = b0_config();
  std::vector<float> out(3 * 224 * 224);
  for (auto _ : state) kiln::classification::preprocess(image, config, out.data());
}
BENCHMARK(Preprocess)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
