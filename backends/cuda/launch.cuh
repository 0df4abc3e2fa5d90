// Kernel launches with programmatic dependent launch (Hopper): each kernel is launched while its
// predecessor still runs; its blocks first wait (griddepcontrol.wait) for the predecessor to
// finish and its writes to be visible, then let their own successor launch. At batch 1 the
// network is ~70 short kernels, and this hides most of the gap between them.
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace kiln::cuda {

// Comes before a kernel touches global memory, with one exception: constants that no kernel
// writes (weights) may be read before it, so that their loads overlap the predecessor's tail.
__device__ __forceinline__ void wait_for_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

bool programmatic_launch_supported();  // compute capability 9.0 or newer
bool clusters_supported();             // thread block clusters: compute capability 9.0 or newer
int multiprocessor_count();            // the current GPU's SMs, asked once

// Blocks in clusters of `cluster` along x (grid.x a multiple of it; clusters_supported()), with
// programmatic dependent launch as launch() has it.
template <typename... Params, typename... Args>
void launch_clustered(void (*kernel)(Params...), dim3 grid, dim3 block, unsigned cluster, size_t shared,
                      cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  cudaLaunchAttribute attribute[2];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = programmatic_launch_supported() ? 1 : 0;
  attribute[1].id = cudaLaunchAttributeClusterDimension;
  attribute[1].val.clusterDim.x = cluster;
  attribute[1].val.clusterDim.y = 1;
  attribute[1].val.clusterDim.z = 1;
  config.attrs = attribute;
  config.numAttrs = cluster > 1 ? 2 : 1;
  cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);  // errors surface in cudaGetLastError
}

template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared, cudaStream_t stream, Args&&... args) {
  launch_clustered(kernel, grid, block, 1u, shared, stream, std::forward<Args>(args)...);
}

}  // namespace kiln::cuda
