#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "cli/commands.h"
#include "kiln/kiln.h"
#include "tasks/detection/draw.h"
#include "tasks/image/encode.h"

namespace kiln::cli {

Command add_detect(CLI::App& app) {
  auto* cmd = app.add_subcommand("detect", "Detect objects in images (JPEG, PNG, WebP) with a detector bundle");
  struct Args {
    std::string bundle;
    std::vector<std::string> images;
    DetectionOptions options;
    std::string device = "auto", draw;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "Bundle file")->required();
  cmd->add_option("images", args->images, "Image files")->required();
  cmd->add_option("--conf", args->options.conf, "Keep detections scoring above this")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--max-det", args->options.max_det, "At most this many detections per image")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--imgsz", args->options.imgsz, "Letterbox size (a multiple of 32; default: the bundle's)")
      ->check(CLI::Range(32, 8192));
  cmd->add_flag("--square", args->options.square, "Pad every image to imgsz x imgsz (batches mixed shapes)");
  cmd->add_flag("--json", args->json, "One JSON object per image on stdout");
  cmd->add_option("--draw", args->draw, "Also write each image with its boxes drawn to DIR/<name>.jpg");
  add_device_option(cmd, args->device);
  return [args] {
    std::unique_ptr<Detector> model;
    Status s = Detector::load(args->bundle, &model, args->device);
    if (!s.ok()) throw std::runtime_error(s.message());
    std::vector<std::vector<DetectedObject>> results;
    s = model->detect_files(args->images, args->options, &results);
    if (!s.ok()) throw std::runtime_error(s.message());
    if (!args->draw.empty()) std::filesystem::create_directories(args->draw);
    for (size_t i = 0; i < results.size(); ++i) {
      if (!args->draw.empty()) {
        Image image = load_image(args->images[i], /*exif_orientation=*/true);
        std::vector<detection::Detection> boxes;
        for (const auto& d : results[i]) boxes.push_back({d.x1, d.y1, d.x2, d.y2, d.score, d.class_id});
        detection::draw_detections(image, boxes);
        write_jpeg(image, (std::filesystem::path(args->draw) / std::filesystem::path(args->images[i]).stem()).string() +
                              ".jpg");
      }
      if (args->json) {
        nlohmann::json j = {{"image", args->images[i]}, {"detections", nlohmann::json::array()}};
        for (const auto& d : results[i])
          j["detections"].push_back(
              {{"box", {d.x1, d.y1, d.x2, d.y2}}, {"score", d.score}, {"class", d.class_id}, {"label", d.label}});
        fmt::print("{}\n", j.dump());
      } else {
        fmt::print("{}: {} detection{}\n", args->images[i], results[i].size(), results[i].size() == 1 ? "" : "s");
        for (const auto& d : results[i])
          fmt::print("  {:5.3f}  {:<16} [{:7.1f} {:7.1f} {:7.1f} {:7.1f}]\n", d.score, d.label, d.x1, d.y1, d.x2, d.y2);
      }
    }
    return 0;
  };
}

}  // namespace kiln::cli
