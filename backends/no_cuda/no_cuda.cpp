// Compiled instead of backends/cuda/ when CMake finds no CUDA compiler.
#include "backends/backend.h"
#include "core/error.h"

namespace kiln {

bool cuda_backend_available() { return false; }

std::shared_ptr<Backend> make_cuda_backend(const std::string&) { fail("[engine] this kiln was built without CUDA"); }

}  // namespace kiln
