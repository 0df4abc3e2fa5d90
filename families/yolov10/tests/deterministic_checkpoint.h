// Checkpoints with deterministic "random" weights in the Hub layout of jameslahm/yolov10*, the
// same values scripts/device/yolov10_reference.py gives Ultralytics' model: each tensor's element
// i is splitmix64's finaliser of fnv1a64(name) + i * 0x9E3779B97F4A7C15, mapped to a range by the
// tensor's role. The reference file lists the names and shapes (Ultralytics' state dict), so the
// checkpoint is Ultralytics' own layout, not kiln's idea of it.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoints/safetensors.h"
#include "kiln/tensor.h"

namespace kiln::test {

inline uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

inline double unit_uniform(uint64_t seed, uint64_t i) {
  uint64_t z = seed + i * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
}

inline std::vector<float> deterministic_values(const std::string& name, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  const uint64_t seed = fnv1a64(name);
  std::vector<float> v(count);
  auto ends = [&](const char* s) { return name.ends_with(s); };
  for (int64_t i = 0; i < count; ++i) {
    const double u = unit_uniform(seed, static_cast<uint64_t>(i));
    double x;
    if (ends(".dfl.conv.weight"))
      x = static_cast<double>(i);  // DFL's fixed 0, 1, ..., 15
    else if (ends(".bn.weight") || ends(".bn.running_var"))
      x = 0.5 + u;
    else if (ends(".bn.bias") || ends(".bn.running_mean"))
      x = 0.2 * (2 * u - 1);
    else if (ends(".weight") && shape.size() == 4)
      x = (2 * u - 1) * std::sqrt(3.0 / static_cast<double>(shape[1] * shape[2] * shape[3]));
    else
      x = 2 * u - 1;  // conv biases
    v[i] = static_cast<float>(x);
  }
  return v;
}

// Writes DIR/config.json and DIR/model.safetensors for one model of the reference file.
inline void write_deterministic_checkpoint(const std::string& dir, const std::string& arch,
                                           const nlohmann::json& entry) {
  std::filesystem::create_directories(dir);
  std::vector<HostTensor> tensors;
  for (const auto& item : entry.at("manifest")) {
    const std::string name = item[0].get<std::string>();
    const auto shape = item[1].get<std::vector<int64_t>>();
    tensors.push_back(HostTensor::from_f32(name, shape, deterministic_values(name, shape)));
    if (name.ends_with(".bn.weight")) {
      const std::string tracked = name.substr(0, name.size() - 6) + "num_batches_tracked";
      tensors.push_back(HostTensor::from_i64(tracked, {}, {0}));
    }
  }
  write_safetensors(dir + "/model.safetensors", tensors);
  std::ofstream(dir + "/config.json") << nlohmann::json{
      {"model", arch + ".yaml"},
      {"names", entry.at("names")},
      {"task", "detect"}}.dump();
}

}  // namespace kiln::test
