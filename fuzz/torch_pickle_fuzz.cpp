// libFuzzer target for the torch.save checkpoint reader: parse, then convert every tensor it
// accepted (integer tensors are refused by name, which is an Error too).
#include <cstdint>

#include "checkpoints/torch_pickle.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto f = kiln::TorchCheckpointFile::from_bytes({data, size}, "fuzz.bin");
    for (const auto& [name, info] : f.tensors()) {
      try {
        f.to_float(name);
      } catch (const kiln::Error&) {
      }
    }
  } catch (const kiln::Error&) {
  }
  return 0;
}
