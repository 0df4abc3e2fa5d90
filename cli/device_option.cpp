#include "cli/commands.h"

namespace kiln::cli {

CLI::Option* add_device_option(CLI::App* cmd, std::string& device) {
  return cmd
      ->add_option("--device", device,
                   "cpu, cpu-reference (the reference kernels), cuda, or auto (the GPU when there is one)")
      ->check(CLI::IsMember({"cpu", "cpu-reference", "cuda", "auto"}));
}

}  // namespace kiln::cli
