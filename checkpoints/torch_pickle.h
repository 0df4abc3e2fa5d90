// PyTorch checkpoint reader (pytorch_model.bin, *.pt, *.pth) for the format torch.save has
// written since 1.6: a zip archive of <archive>/data.pkl, a pickle of the state dict whose
// tensors refer to storages by key, and one uncompressed record <archive>/data/<key> per
// storage. The file is untrusted. data.pkl is read by a restricted unpickler that runs nothing:
// it knows the few opcodes and globals a state dict of tensors needs (OrderedDict,
// torch._utils._rebuild_tensor_v2 / _rebuild_parameter and the typed storage classes) and
// refuses everything else by name. Every size, offset and stride is checked against the archive
// before anything is read through it. The pre-1.6 format (a bare pickle stream) is refused.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "checkpoints/safetensors.h"
#include "core/mapped_file.h"
#include "core/tensor.h"

namespace kiln {

struct TorchTensorInfo {
  StDtype dtype;  // F32, F16, BF16, F64, I64, I32, U8, I8 or BOOL
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;  // in elements; views of a larger storage need not be contiguous
  uint64_t offset = 0;          // in elements from the start of the storage
  std::string storage;          // key of the storage: the record data/<key> holds its bytes
};

class TorchCheckpointFile {
 public:
  // Maps and validates the file; throws kiln::Error with a one-line reason if it is malformed
  // or holds anything but tensors that a state dict needs.
  explicit TorchCheckpointFile(const std::string& path);
  // Parses an in-memory image (used by tests and the fuzz target; `bytes` must outlive the object).
  static TorchCheckpointFile from_bytes(std::span<const uint8_t> bytes, const std::string& name);

  // The tensors at the top level of the saved dict, by name. Values that are not tensors (e.g.
  // an epoch counter) are skipped.
  const std::map<std::string, TorchTensorInfo>& tensors() const { return tensors_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const TorchTensorInfo& info(const std::string& name) const;
  // Converts a floating-point tensor (F32/F16/BF16/F64) to contiguous fp32; integer and bool
  // tensors are refused by name.
  Tensor to_float(const std::string& name) const;
  const std::string& path() const { return name_; }

 private:
  TorchCheckpointFile() = default;
  void parse(std::span<const uint8_t> bytes);

  std::string name_;
  std::unique_ptr<MappedFile> file_;
  std::map<std::string, std::span<const uint8_t>> storages_;  // key -> its record's bytes
  std::map<std::string, TorchTensorInfo> tensors_;
};

}  // namespace kiln
