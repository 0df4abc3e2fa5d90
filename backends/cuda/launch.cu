#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

bool programmatic_launch_supported() {
  static const bool supported = [] {
    int device = 0, major = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    return major >= 9;
  }();
  return supported;
}

}  // namespace kiln::cuda
