// parse_host_config on arbitrary bytes: a HostConfig or an invalid_input error with a location,
// never a crash, a hang or an escaped yaml-cpp exception.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kiln/config/host_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = kiln::config::parse_host_config(text, "/etc/kiln/kiln.yml");
  if (!config) {
    if (config.error().code != kiln::ErrorCode::invalid_input) std::abort();
    if (config.error().where.file != "/etc/kiln/kiln.yml") std::abort();
  }
  return 0;
}
