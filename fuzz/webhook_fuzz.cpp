// parse_webhook on arbitrary bytes under each event name kiln reads: an event or an
// invalid_input error, never a crash or an escaped exception; an accepted push or pull_request
// always names a repository and a 40-character commit.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kiln/server/webhook.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  for (const char* name : {"push", "pull_request", "ping"}) {
    auto event = kiln::server::parse_webhook(name, body);
    if (!event) {
      if (event.error().code != kiln::ErrorCode::invalid_input) std::abort();
      continue;
    }
    if (std::string_view(name) != "ping" && event->ignored.empty() &&
        (event->repository.empty() || event->sha.size() != 40))
      std::abort();
  }
  return 0;
}
