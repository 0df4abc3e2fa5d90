// safetensors reader. The file is untrusted: the header length, the JSON, every tensor's dtype,
// shape and byte range are checked against the file before anything is read through them.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"
#include "kiln/tensor.h"

namespace kiln {

enum class StDtype { F32, F16, BF16, F64, I64, I32, U8, I8, BOOL };

struct StTensorInfo {
  StDtype dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets inside the data section
  uint64_t end = 0;
};

class SafetensorsFile {
 public:
  // Maps and validates the file; throws kiln::Error with a one-line reason if it is malformed.
  explicit SafetensorsFile(const std::string& path);
  // Parses an in-memory image (used by the fuzz target; `bytes` must outlive the object).
  static SafetensorsFile from_bytes(std::span<const uint8_t> bytes, const std::string& name);

  const std::map<std::string, StTensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const StTensorInfo& info(const std::string& name) const;
  std::span<const uint8_t> raw(const std::string& name) const;
  // Converts a floating-point tensor (F32/F16/BF16/F64) to fp32.
  Tensor to_float(const std::string& name) const;
  // A tensor as it is stored, for the element types kiln computes with (F32, F16, BF16, I32,
  // I64, BOOL; F64 and 8-bit integers are refused by name).
  HostTensor to_host(const std::string& name) const;
  const std::string& path() const { return name_; }

 private:
  SafetensorsFile() = default;
  void parse(std::span<const uint8_t> bytes);

  std::string name_;
  std::unique_ptr<MappedFile> file_;
  std::span<const uint8_t> data_;  // the data section
  std::map<std::string, StTensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace kiln

namespace kiln {

// Writes fp32 tensors as a safetensors file (e.g. logits saved by `kiln eval --save-logits`).
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors);
// Writes tensors of any kiln element type, named by HostTensor::name (`kiln run`'s outputs).
void write_safetensors(const std::string& path, const std::vector<HostTensor>& tensors);

}  // namespace kiln
