#include "tasks/classification/study.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "bundle/bundle.h"
#include "core/error.h"
#include "kiln/kiln.h"
#include "tasks/classification/classifier.h"
#include "tasks/classification/evaluate.h"
#include "tasks/classification/stress_images.h"

namespace kiln::classification {

namespace fs = std::filesystem;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[v.size() / 2];
}

// Builds one recipe's bundle; "fp32" and "fp16" are plain precisions, anything else FP8.
nlohmann::json build_recipe(const StudyOptions& o, const std::string& recipe, const std::string& path) {
  BuildOptions b;
  b.batch_sizes = o.batches;
  if (recipe == "fp32" || recipe == "fp16") {
    b.precision = recipe;
  } else {
    b.precision = "fp8";
    b.recipe = recipe;
    b.calib = o.calib;
    b.calib_samples = o.calib_samples;
    KILN_CHECK(!o.calib.empty(), "[study] recipe {} needs calibration images: --calib SRC", recipe);
  }
  BuildResult r;
  Status s = build(o.source, path, b, &r);
  KILN_CHECK(s.ok(), "{}", s.message());
  return {{"precision", b.precision},
          {"build_s", r.seconds},
          {"bundle_bytes", r.bundle_bytes},
          {"fp8_layers", r.fp8_layers},
          {"planned_on", r.planned_on}};
}

// Speed at every batch size on the study's device; an engine that cannot run the bundle there
// (no FP8 CUDA kernels, say) is reported, not replaced.
nlohmann::json measure_speed(const StudyOptions& o, const std::shared_ptr<Bundle>& bundle, std::string* device_used) {
  nlohmann::json speed = {{"ms", nlohmann::json::object()}};
  try {
    ImageClassifier model(bundle, o.device);
    *device_used = model.engine().device();
    const bool gpu = *device_used != "cpu";
    for (int batch : o.batches) {
      model.engine().prepare(model.bindings(batch));
      auto ms = model.engine().benchmark(model.bindings(batch), gpu ? 100 : 1, gpu ? o.iters : 3, gpu ? 20 : 1);
      speed["ms"][std::to_string(batch)] = median(ms);
    }
    auto profile = model.engine().profile(model.bindings(o.batches.back()), 10);
    if (!profile.empty()) speed["profile_ms"] = profile;
  } catch (const Error& e) {
    speed["error"] = e.what();
    *device_used = "cpu";
  }
  return speed;
}

nlohmann::json run_stress(const std::shared_ptr<Bundle>& bundle, const std::string& device) {
  ImageClassifier model(bundle, device);
  auto images = stress_images();
  size_t nonfinite = 0;
  for (const auto& [name, image] : images) {
    auto logits = model.classify({&image});
    if (!std::all_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); })) ++nonfinite;
  }
  return {{"images", images.size()}, {"nonfinite", nonfinite}};
}

std::string cell(const nlohmann::json& j, const char* fmt_spec, double scale = 1.0) {
  if (!j.is_number()) return "-";
  return fmt::format(fmt::runtime(fmt_spec), j.get<double>() * scale);
}

void write_markdown(const StudyOptions& o, const nlohmann::json& study, const std::string& path) {
  std::ofstream md(path);
  md << "# Study: " << o.source << "\n\n";
  md << "Held-out data: " << o.data << (o.limit ? fmt::format(" (first {})", o.limit) : std::string())
     << "; calibration: " << (o.calib.empty() ? "-" : o.calib) << "; reference: fp32 on the CPU.\n\n";
  md << "| recipe | device | FP8 layers | bundle MiB | build s |";
  for (int b : o.batches) md << " ms @" << b << " |";
  md << " top-1 | agreement | max / mean abs logit diff | non-finite (data + stress) |\n|";
  for (size_t i = 0; i < 9 + o.batches.size(); ++i) md << " --- |";
  md << "\n";
  for (const auto& row : study["rows"]) {
    md << "| " << row["recipe"].get<std::string>() << " | " << row["device"].get<std::string>() << " | "
       << row["build"]["fp8_layers"] << " | " << cell(row["build"]["bundle_bytes"], "{:.1f}", 1.0 / 1048576) << " | "
       << cell(row["build"]["build_s"], "{:.1f}") << " |";
    for (int b : o.batches)
      md << " " << cell(row["speed"]["ms"].value(std::to_string(b), nlohmann::json()), "{:.3f}") << " |";
    const auto& e = row["eval"];
    md << " " << cell(e["top1"], "{:.2f}%") << " | " << cell(e["agreement"], "{:.2f}%") << " | "
       << cell(e["max_abs_logit_diff"], "{:.3f}") << " / " << cell(e["mean_abs_logit_diff"], "{:.4f}") << " | "
       << e["nonfinite"] << " + " << row["stress"]["nonfinite"] << " of " << row["stress"]["images"] << " |\n";
  }
  for (const auto& row : study["rows"])
    if (row["speed"].contains("error"))
      md << "\n"
         << row["recipe"].get<std::string>()
         << ": not timed on the requested device: " << row["speed"]["error"].get<std::string>()
         << " (accuracy measured with the CPU backend).\n";
  for (const auto& row : study["rows"]) {
    if (!row["speed"].contains("profile_ms")) continue;
    md << "\nKernel time per layer group, " << row["recipe"].get<std::string>() << ", batch " << o.batches.back()
       << ":";
    for (auto& [g, ms] : row["speed"]["profile_ms"].items()) md << fmt::format(" {} {:.3f} ms;", g, ms.get<double>());
    md << "\n";
  }
}

}  // namespace

nlohmann::json run_study(const StudyOptions& o) {
  KILN_CHECK(!o.recipes.empty() && !o.batches.empty(), "[study] no recipes or batch sizes");
  KILN_CHECK(!o.out_dir.empty(), "[study] no output folder");
  fs::create_directories(o.out_dir);
  // The reference: fp32 on the CPU, its logits saved for every recipe's comparison.
  const std::string ref_bundle = o.out_dir + "/reference-fp32.bundle",
                    ref_logits = o.out_dir + "/reference_logits.safetensors";
  StudyOptions ref_options = o;
  ref_options.batches = {1};
  build_recipe(ref_options, "fp32", ref_bundle);
  EvalOptions ref_eval{o.data, o.limit, "", ref_logits, "cpu"};
  EvalReport reference = evaluate(ref_bundle, ref_eval);
  nlohmann::json study = {{"source", o.source},
                          {"data", o.data},
                          {"limit", o.limit},
                          {"calib", o.calib},
                          {"calib_samples", o.calib_samples},
                          {"batches", o.batches},
                          {"reference", reference.to_json()},
                          {"rows", nlohmann::json::array()}};
  for (const auto& recipe : o.recipes) {
    std::string name = fs::path(recipe).stem().string();
    std::string path = o.out_dir + "/" + name + ".bundle";
    nlohmann::json row = {{"recipe", name}};
    row["build"] = build_recipe(o, recipe, path);
    auto bundle = Bundle::open(path);
    std::string device;
    row["speed"] = measure_speed(o, bundle, &device);
    row["device"] = device;
    EvalOptions e{o.data, o.limit, ref_logits, "", device == "cpu" ? "cpu" : "cuda"};
    row["eval"] = evaluate(path, e).to_json();
    row["stress"] = run_stress(bundle, device == "cpu" ? "cpu" : "cuda");
    study["rows"].push_back(row);
  }
  std::ofstream(o.out_dir + "/study.json") << study.dump(2) << "\n";
  write_markdown(o, study, o.out_dir + "/study.md");
  return study;
}

}  // namespace kiln::classification
