// libFuzzer target for quantisation recipes (quantize/recipe.h), which `kiln build --recipe
// FILE.json` reads from the user: any bytes as JSON, then as a recipe; a parsed recipe's name
// patterns are matched against layer names as the layer selection does.
#include <fnmatch.h>

#include <cstdint>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "quantize/recipe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const kiln::QuantRecipe r = kiln::parse_recipe(j, "fuzz.json");
    if (r.layers.empty()) std::abort();  // the parser requires at least one
    for (const auto& rule : r.layers)
      for (const char* name : {"model.decoder.layers.11.encoder_attn.out_proj", "blocks.6.0.conv_pwl", ""})
        fnmatch(rule.match.c_str(), name, 0);
  } catch (const kiln::Error&) {
  }
  return 0;
}
