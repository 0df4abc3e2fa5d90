#include <sstream>
#include <stdexcept>

#include "cli/commands.h"

namespace kiln::cli {

std::vector<int> parse_batch_list(const std::string& text, const char* command) {
  std::vector<int> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 1 || v > 4096)
      throw std::runtime_error(std::string("[") + command +
                               "] --batch takes a comma-separated list of integers from 1 to 4096, got '" + text + "'");
    out.push_back(v);
  }
  if (out.empty()) throw std::runtime_error(std::string("[") + command + "] --batch is empty");
  return out;
}

}  // namespace kiln::cli
