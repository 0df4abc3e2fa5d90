#include "backends/cuda/launch.cuh"

#include <cstdlib>
#include <cstring>

namespace kiln::cuda {

// KILN_CUDA_PDL=0 turns it off (to tell a missing dependency from a kernel bug).
bool programmatic_launch_supported() {
  static const bool supported = [] {
    const char* env = std::getenv("KILN_CUDA_PDL");
    if (env && std::strcmp(env, "0") == 0) return false;
    int device = 0, major = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    return major >= 9;
  }();
  return supported;
}

bool clusters_supported() {
  static const bool supported = [] {
    int device = 0, major = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    return major >= 9;
  }();
  return supported;
}

int multiprocessor_count() {
  static const int count = [] {
    int device = 0, n = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device);
    return n > 0 ? n : 1;
  }();
  return count;
}

}  // namespace kiln::cuda
