#include "backends/cuda/launch.cuh"

#include <cstdlib>
#include <cstring>

namespace kiln::cuda {

namespace {

// An attribute of the current device, asked once per attribute by the callers' statics.
int device_attribute(cudaDeviceAttr attribute) {
  int device = 0, value = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&value, attribute, device);
  return value;
}

bool hopper_or_newer() { return device_attribute(cudaDevAttrComputeCapabilityMajor) >= 9; }

}  // namespace

// KILN_CUDA_PDL=0 turns it off (to tell a missing dependency from a kernel bug).
bool programmatic_launch_supported() {
  static const bool supported = [] {
    const char* env = std::getenv("KILN_CUDA_PDL");
    if (env && std::strcmp(env, "0") == 0) return false;
    return hopper_or_newer();
  }();
  return supported;
}

bool clusters_supported() {
  static const bool supported = hopper_or_newer();
  return supported;
}

int multiprocessor_count() {
  static const int count = [] {
    const int n = device_attribute(cudaDevAttrMultiProcessorCount);
    return n > 0 ? n : 1;
  }();
  return count;
}

}  // namespace kiln::cuda
