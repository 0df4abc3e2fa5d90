#include "core/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace kiln {

namespace {

struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

}  // namespace

std::string read_file(const std::string& path, uint64_t max_bytes) {
  const Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  KILN_CHECK(f.fd >= 0, "[file] cannot open {}: {}", path, std::strerror(errno));
  struct stat st {};
  KILN_CHECK(::fstat(f.fd, &st) == 0, "[file] cannot read {}: {}", path, std::strerror(errno));
  KILN_CHECK(!S_ISDIR(st.st_mode), "[file] {} is a folder, not a file", path);
  const auto too_large = [&] {
    fail("[file] {} holds more than the {} bytes kiln reads from such a file", path, max_bytes);
  };
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) too_large();
  // A regular file's size is known (one byte more finds its end); a pipe or device is read in
  // growing chunks until it ends, one byte past max_bytes at most.
  std::string bytes(S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) + 1 : size_t{1} << 16, '\0');
  size_t done = 0;
  while (true) {
    if (done == bytes.size()) {
      if (done > max_bytes) too_large();
      bytes.resize(static_cast<size_t>(std::min<uint64_t>(uint64_t{bytes.size()} * 2, max_bytes + 1)));
    }
    const ssize_t n = ::read(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    KILN_CHECK(n >= 0, "[file] cannot read {}: {}", path, std::strerror(errno));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  if (done > max_bytes) too_large();
  bytes.resize(done);
  return bytes;
}

}  // namespace kiln
