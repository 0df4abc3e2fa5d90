#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "kiln/kiln.h"

namespace kiln::cli {

Command add_classify(CLI::App& app) {
  auto* cmd = app.add_subcommand("classify", "Classify images (JPEG, PNG, WebP) with a bundle");
  struct Args {
    std::string bundle;
    std::vector<std::string> images;
    int top = 5;
    std::string device = "auto";
    bool json = false, logits = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "Bundle file")->required();
  cmd->add_option("images", args->images, "Image files")->required();
  cmd->add_option("--top", args->top, "How many classes to show")->check(CLI::Range(1, 1000000));
  auto* json = cmd->add_flag("--json", args->json, "One JSON object per image on stdout");
  add_device_option(cmd, args->device);
  cmd->add_flag("--logits", args->logits, "With --json: include every class's logit")->needs(json);
  return [args] {
    std::unique_ptr<Classifier> model;
    Status s = Classifier::load(args->bundle, &model, args->device);
    if (!s.ok()) throw std::runtime_error(s.message());
    std::vector<Classification> results;
    s = model->classify_files(args->images, args->top, &results);
    if (!s.ok()) throw std::runtime_error(s.message());
    for (size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      if (args->json) {
        nlohmann::json j = {{"image", args->images[i]}, {"top", nlohmann::json::array()}};
        for (const auto& p : r.top)
          j["top"].push_back({{"index", p.index}, {"label", p.label}, {"prob", p.probability}});
        if (args->logits) j["logits"] = r.logits;
        fmt::print("{}\n", j.dump());
      } else {
        fmt::print("{}\n", args->images[i]);
        for (const auto& p : r.top) fmt::print("  {:6.2f}%  {:4d}  {}\n", p.probability * 100, p.index, p.label);
      }
    }
    return 0;
  };
}

}  // namespace kiln::cli
