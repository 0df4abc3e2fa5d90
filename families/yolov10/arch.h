// YOLOv10 n/s/m/b/l/x as data: the layer table of THU-MIG/yolov10's yolov10{n,s,m,b,l,x}.yaml
// (which modules, from where, with which arguments) and the scaling rules its parse_model
// applies (channels: min(c, max_channels) * width rounded up to a multiple of 8; repeats:
// max(round(n * depth), 1)), resolved to concrete channel counts.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kiln::yolov10 {

enum class Module { Conv, C2f, C2fCIB, SCDown, SPPF, PSA, Upsample, Concat, Detect };

struct LayerSpec {
  Module module = Module::Conv;
  std::vector<int> from;  // layer indices; -1 is the previous layer
  int in_ch = 0, out_ch = 0;
  int repeats = 1;  // C2f / C2fCIB bottlenecks
  int kernel = 1, stride = 1;
  bool shortcut = false;      // C2f / C2fCIB residual bottlenecks
  bool large_kernel = false;  // C2fCIB: RepVGGDW (7x7 + 3x3 depthwise) in place of a 3x3 depthwise
};

struct ArchSpec {
  std::string name;  // "yolov10n"
  double depth = 1, width = 1;
  int max_channels = 1024;
  std::vector<LayerSpec> layers;  // the last one is the detect head
  std::vector<int> detect_from;   // its inputs (P3, P4, P5)
  std::vector<int> detect_ch;     // their channels
  std::vector<int> strides = {8, 16, 32};
  int reg_max = 16;      // DFL bins per box side
  double bn_eps = 1e-3;  // Ultralytics' BatchNorm2d(eps=1e-3) is not in the checkpoint
};

std::vector<std::string> supported_architectures();
std::optional<ArchSpec> make_arch(const std::string& name);

// Channels of the head's two branches for `num_classes`, as v10Detect computes them.
int box_channels(const ArchSpec& arch);
int class_channels(const ArchSpec& arch, int num_classes);

}  // namespace kiln::yolov10
