// Compiled instead of backends/cuda/ when CMake finds no CUDA compiler.
#include "backends/engine.h"
#include "core/error.h"

namespace kiln {

bool cuda_backend_available() { return false; }

std::unique_ptr<Engine> make_cuda_engine(const Graph&, const WeightLookup&, const nlohmann::json&) {
  fail("[engine] this kiln was built without CUDA");
}

}  // namespace kiln
