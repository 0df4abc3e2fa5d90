#include "families/timm_efficientnet/arch.h"

#include <fmt/format.h>
#include <cmath>

namespace kiln::timm_efficientnet {

namespace {

// timm.layers.make_divisible / round_channels with divisor 8, round_limit 0.9.
int round_channels(double channels, double multiplier) {
  const int divisor = 8;
  double v = channels * multiplier;
  int new_v = std::max(divisor, static_cast<int>(v + divisor / 2.0) / divisor * divisor);
  if (new_v < 0.9 * v) new_v += divisor;
  return new_v;
}

// One row of timm's arch_def: 'ds_r1_k3_s1_e1_c16_se0.25', 'ir_r2_k3_s2_e6_c24_se0.25', ...
struct StageDef {
  bool ir;
  int repeats, kernel, stride, expand, channels;
};
constexpr StageDef kStages[] = {
    {false, 1, 3, 1, 1, 16}, {true, 2, 3, 2, 6, 24},  {true, 2, 5, 2, 6, 40},  {true, 3, 3, 2, 6, 80},
    {true, 3, 5, 1, 6, 112}, {true, 4, 5, 2, 6, 192}, {true, 1, 3, 1, 6, 320},
};
constexpr double kSeRatio = 0.25;

struct Variant {
  const char* name;
  double width, depth;
  int input_size;      // timm default cfg input size
  double crop_pct;     // timm default cfg crop_pct
  double tf_crop_pct;  // the tf_ port's crop_pct
  int tf_input_size;
};
constexpr Variant kVariants[] = {
    {"b0", 1.0, 1.0, 224, 0.875, 0.875, 224}, {"b1", 1.0, 1.1, 240, 1.0, 0.882, 240},
    {"b2", 1.1, 1.2, 256, 1.0, 0.890, 260},   {"b3", 1.2, 1.4, 288, 1.0, 0.904, 300},
    {"b4", 1.4, 1.8, 320, 1.0, 0.922, 380},
};

}  // namespace

std::vector<std::string> supported_architectures() {
  std::vector<std::string> out;
  for (const auto& v : kVariants) {
    out.push_back(fmt::format("efficientnet_{}", v.name));
    out.push_back(fmt::format("tf_efficientnet_{}", v.name));
  }
  return out;
}

std::optional<ArchSpec> make_arch(const std::string& name) {
  for (const auto& v : kVariants) {
    bool tf = name == fmt::format("tf_efficientnet_{}", v.name);
    if (!tf && name != fmt::format("efficientnet_{}", v.name)) continue;
    ArchSpec a;
    a.name = name;
    a.tf_same_padding = tf;
    a.bn_eps = tf ? 1e-3 : 1e-5;
    a.stem_ch = round_channels(32, v.width);
    a.num_features = round_channels(1280, v.width);
    a.input_size = tf ? v.tf_input_size : v.input_size;
    a.crop_pct = tf ? v.tf_crop_pct : v.crop_pct;
    int in_ch = a.stem_ch;
    for (size_t s = 0; s < std::size(kStages); ++s) {
      const StageDef& d = kStages[s];
      int repeats = static_cast<int>(std::ceil(d.repeats * v.depth));  // depth_trunc='ceil'
      int out_ch = round_channels(d.channels, v.width);
      std::vector<BlockSpec> stage;
      for (int i = 0; i < repeats; ++i) {
        BlockSpec b;
        b.inverted_residual = d.ir;
        b.kernel = d.kernel;
        b.stride = i == 0 ? d.stride : 1;
        b.in_ch = in_ch;
        b.mid_ch = d.ir ? round_channels(in_ch * d.expand, 1.0) : in_ch;
        b.out_ch = out_ch;
        // timm: se_ratio / exp_ratio applied to the mid channels, rounded half-to-even like Python's round().
        b.se_ch = static_cast<int>(std::nearbyint(b.mid_ch * (kSeRatio / d.expand)));
        b.skip = b.stride == 1 && b.in_ch == b.out_ch;
        b.prefix = fmt::format("blocks.{}.{}", s, i);
        stage.push_back(b);
        in_ch = out_ch;
      }
      a.stages.push_back(std::move(stage));
    }
    return a;
  }
  return std::nullopt;
}

}  // namespace kiln::timm_efficientnet
