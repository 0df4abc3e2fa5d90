// The C++ API in a few lines: load a bundle, classify image files, print the top-3.
//   classify_example model.bundle cat.jpg [more images...]
#include <cstdio>

#include "kiln/kiln.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s BUNDLE IMAGE...\n", argv[0]);
    return 2;
  }
  std::unique_ptr<kiln::Classifier> model;
  kiln::Status status = kiln::Classifier::load(argv[1], &model);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    return 1;
  }
  std::vector<std::string> images(argv + 2, argv + argc);
  std::vector<kiln::Classification> results;
  status = model->classify_files(images, 3, &results);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    return 1;
  }
  const kiln::ModelInfo& info = model->info();
  std::printf("%s (%s), input %dx%d\n", info.architecture.c_str(), info.model_id.c_str(), info.width, info.height);
  for (size_t i = 0; i < results.size(); ++i) {
    std::printf("%s\n", images[i].c_str());
    for (const auto& p : results[i].top) std::printf("  %.4f %s\n", p.probability, p.label.c_str());
  }
  return 0;
}
