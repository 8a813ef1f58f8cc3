// A simulated GPU inventory (`--simulate-gpus SPEC.json`) on arbitrary bytes: an inventory or an
// invalid_input error at the file, never a crash or an escaped nlohmann::json exception (a number
// too large for a double once escaped as json::out_of_range).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kiln/gpu/simulated_provider.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto inventory = kiln::gpu::parse_simulated_inventory(text, "gpus.json");
  if (!inventory) {
    if (inventory.error().code != kiln::ErrorCode::invalid_input) std::abort();
    if (inventory.error().where.file != "gpus.json") std::abort();
  }
  return 0;
}
