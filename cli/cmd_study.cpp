#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "tasks/classification/study.h"

namespace kiln::cli {

Command add_study(CLI::App& app) {
  auto* cmd = app.add_subcommand("study", "Build a checkpoint with several recipes and compare speed and accuracy");
  auto o = std::make_shared<classification::StudyOptions>();
  auto recipes = std::make_shared<std::string>("fp16,fp8-pointwise");
  auto batches = std::make_shared<std::string>("1,32,128");
  cmd->add_option("source", o->source, "Checkpoint folder or Hub id")->required();
  cmd->add_option("--recipes", *recipes, "fp32, fp16, FP8 recipe names or .json files, comma-separated");
  cmd->add_option("--data", o->data, "Held-out images (never the calibration set)")->required();
  cmd->add_option("--calib", o->calib, "Calibration images for FP8 recipes");
  cmd->add_option("--calib-samples", o->calib_samples, "How many calibration images")->check(CLI::Range(1, 1000000));
  cmd->add_option("--limit", o->limit, "Evaluate only the first N held-out images")
      ->check(CLI::Range(size_t{1}, size_t{1} << 40));
  cmd->add_option("--batch", *batches, "Batch sizes to time");
  cmd->add_option("--iters", o->iters, "Timed samples per batch size on a GPU")->check(CLI::Range(1, 100000));
  cmd->add_option("--device", o->device, "cpu, cuda, or auto")->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  cmd->add_option("-o,--out", o->out_dir, "Folder for the bundles, study.md and study.json")->required();
  return [o, recipes, batches] {
    std::stringstream rs(*recipes);
    for (std::string r; std::getline(rs, r, ',');)
      if (!r.empty()) o->recipes.push_back(r);
    o->batches = parse_batch_list(*batches, "study");
    classification::run_study(*o);
    std::ifstream md(o->out_dir + "/study.md");
    fmt::print("{}", std::string(std::istreambuf_iterator<char>(md), std::istreambuf_iterator<char>()));
    return 0;
  };
}

}  // namespace kiln::cli
