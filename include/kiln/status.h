// kiln::Status: what every public call returns. ok() or a one-line message that names the
// component and the file or argument at fault.
#pragma once

#include <string>
#include <utility>

namespace kiln {

class Status {
 public:
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }
  bool ok() const { return message_.empty(); }
  const std::string& message() const { return message_; }

 private:
  Status() = default;
  explicit Status(std::string m) : message_(m.empty() ? "unknown error" : std::move(m)) {}
  std::string message_;
};

}  // namespace kiln
