// Fuzz target for the DRM fdinfo parser (gpu/amd_fdinfo.h): any text must parse or be rejected
// without crashing, hanging or throwing. What parses keeps its invariants: a non-empty driver
// and a lower-case PCI address.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kiln/gpu/amd_fdinfo.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto client = kiln::gpu::parse_drm_fdinfo(text);
  if (!client) return 0;
  if (client->driver.empty()) std::abort();
  for (char c : client->pdev)
    if (std::isupper(static_cast<unsigned char>(c))) std::abort();
  return 0;
}
