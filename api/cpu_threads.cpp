#include "backends/cpu/threads.h"
#include "kiln/kiln.h"

namespace kiln {

Status set_cpu_threads(int threads) {
  try {
    cpu::set_threads(threads);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

int cpu_threads() { return cpu::threads(); }

}  // namespace kiln
