#include "families/yolov10/arch.h"

#include <algorithm>
#include <cmath>

namespace kiln::yolov10 {

namespace {

// One row of the yaml files before scaling.
struct Row {
  std::vector<int> from;
  int repeats;
  Module module;
  int channels, kernel, stride;
  bool shortcut;
};

// The rows every size shares (yolov10n.yaml); make_arch applies each size's C2fCIB swaps.
const std::vector<Row>& base_rows() {
  static const std::vector<Row> rows = {
      {{-1}, 1, Module::Conv, 64, 3, 2, false},          // 0  P1/2
      {{-1}, 1, Module::Conv, 128, 3, 2, false},         // 1  P2/4
      {{-1}, 3, Module::C2f, 128, 0, 0, true},           // 2
      {{-1}, 1, Module::Conv, 256, 3, 2, false},         // 3  P3/8
      {{-1}, 6, Module::C2f, 256, 0, 0, true},           // 4
      {{-1}, 1, Module::SCDown, 512, 3, 2, false},       // 5  P4/16
      {{-1}, 6, Module::C2f, 512, 0, 0, true},           // 6
      {{-1}, 1, Module::SCDown, 1024, 3, 2, false},      // 7  P5/32
      {{-1}, 3, Module::C2f, 1024, 0, 0, true},          // 8
      {{-1}, 1, Module::SPPF, 1024, 5, 1, false},        // 9
      {{-1}, 1, Module::PSA, 1024, 0, 0, false},         // 10
      {{-1}, 1, Module::Upsample, 0, 0, 2, false},       // 11
      {{-1, 6}, 1, Module::Concat, 0, 0, 0, false},      // 12
      {{-1}, 3, Module::C2f, 512, 0, 0, false},          // 13
      {{-1}, 1, Module::Upsample, 0, 0, 2, false},       // 14
      {{-1, 4}, 1, Module::Concat, 0, 0, 0, false},      // 15
      {{-1}, 3, Module::C2f, 256, 0, 0, false},          // 16 P3/8 out
      {{-1}, 1, Module::Conv, 256, 3, 2, false},         // 17
      {{-1, 13}, 1, Module::Concat, 0, 0, 0, false},     // 18
      {{-1}, 3, Module::C2f, 512, 0, 0, false},          // 19 P4/16 out
      {{-1}, 1, Module::SCDown, 512, 3, 2, false},       // 20
      {{-1, 10}, 1, Module::Concat, 0, 0, 0, false},     // 21
      {{-1}, 3, Module::C2fCIB, 1024, 0, 0, true},       // 22 P5/32 out
      {{16, 19, 22}, 1, Module::Detect, 0, 0, 0, false}  // 23
  };
  return rows;
}

struct Size {
  const char* name;
  double depth, width;
  int max_channels;
  std::vector<int> cib;           // rows that are C2fCIB(shortcut=True)
  std::vector<int> large_kernel;  // of those, the ones with RepVGGDW (C2fCIB's lk=True)
};

const std::vector<Size>& sizes() {
  static const std::vector<Size> s = {
      {"yolov10n", 0.33, 0.25, 1024, {22}, {22}},         {"yolov10s", 0.33, 0.50, 1024, {8, 22}, {8, 22}},
      {"yolov10m", 0.67, 0.75, 768, {8, 19, 22}, {}},     {"yolov10b", 0.67, 1.00, 512, {8, 13, 19, 22}, {}},
      {"yolov10l", 1.00, 1.00, 512, {8, 13, 19, 22}, {}}, {"yolov10x", 1.00, 1.25, 512, {6, 8, 13, 19, 22}, {}},
  };
  return s;
}

int make_divisible(double x, int divisor) { return static_cast<int>(std::ceil(x / divisor)) * divisor; }

}  // namespace

std::vector<std::string> supported_architectures() {
  std::vector<std::string> out;
  for (const auto& s : sizes()) out.push_back(s.name);
  return out;
}

std::optional<ArchSpec> make_arch(const std::string& name) {
  auto it = std::find_if(sizes().begin(), sizes().end(), [&](const Size& s) { return name == s.name; });
  if (it == sizes().end()) return std::nullopt;
  const Size& size = *it;
  ArchSpec a;
  a.name = size.name;
  a.depth = size.depth;
  a.width = size.width;
  a.max_channels = size.max_channels;
  std::vector<int> ch;  // each layer's output channels
  const auto& rows = base_rows();
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    LayerSpec l;
    l.module = r.module;
    l.from = r.from;
    l.kernel = r.kernel;
    l.stride = r.stride;
    l.shortcut = r.shortcut;
    const int prev = ch.empty() ? 3 : ch.back();
    auto at = [&](int f) { return f < 0 ? prev : ch[f]; };
    auto listed = [&](const std::vector<int>& v) { return std::find(v.begin(), v.end(), int(i)) != v.end(); };
    if (listed(size.cib)) {
      l.module = Module::C2fCIB;
      l.shortcut = true;
      l.large_kernel = listed(size.large_kernel);
    }
    // Python's round() (half to even) as parse_model uses it; nearbyint rounds the same way.
    l.repeats = r.repeats > 1 ? std::max(static_cast<int>(std::nearbyint(r.repeats * a.depth)), 1) : r.repeats;
    l.in_ch = at(r.from[0]);
    switch (r.module) {
      case Module::Concat:
        l.out_ch = 0;
        for (int f : r.from) l.out_ch += at(f);
        break;
      case Module::Upsample:
        l.out_ch = l.in_ch;
        break;
      case Module::Detect:
        for (int f : r.from) a.detect_ch.push_back(at(f));
        a.detect_from = r.from;
        l.out_ch = 0;
        break;
      default:
        l.out_ch = make_divisible(std::min(r.channels, a.max_channels) * a.width, 8);
    }
    ch.push_back(l.out_ch);
    a.layers.push_back(l);
  }
  return a;
}

int box_channels(const ArchSpec& arch) { return std::max({16, arch.detect_ch[0] / 4, arch.reg_max * 4}); }

int class_channels(const ArchSpec& arch, int num_classes) {
  return std::max(arch.detect_ch[0], std::min(num_classes, 100));
}

}  // namespace kiln::yolov10
