// libFuzzer target for the safetensors reader: parse, then read every tensor it accepted.
#include <cstdint>

#include "checkpoints/safetensors.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto f = kiln::SafetensorsFile::from_bytes({data, size}, "fuzz.safetensors");
    for (const auto& [name, info] : f.tensors()) {
      auto raw = f.raw(name);
      if (info.dtype == kiln::StDtype::F32 || info.dtype == kiln::StDtype::F16 || info.dtype == kiln::StDtype::BF16)
        if (raw.size() < (1 << 20)) f.to_float(name);
    }
  } catch (const kiln::Error&) {
  }
  return 0;
}
