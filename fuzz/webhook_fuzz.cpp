// parse_webhook on arbitrary bytes under each event name kiln reads: an event or an
// invalid_input error, never a crash or an escaped exception; an accepted push or pull_request
// always names a repository and a 40-character commit; an accepted workflow_dispatch a
// repository, a full ref, string inputs and a workflow path under .github/workflows/.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kiln/server/webhook.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  for (const char* name : {"push", "pull_request", "workflow_dispatch", "ping"}) {
    auto event = kiln::server::parse_webhook(name, body);
    if (!event) {
      if (event.error().code != kiln::ErrorCode::invalid_input) std::abort();
      continue;
    }
    if (std::string_view(name) == "workflow_dispatch") {
      if (event->repository.empty() || !event->ref.starts_with("refs/")) std::abort();
      const auto& payload = event->payload;
      if (auto inputs = payload.find("inputs"); inputs != payload.end() && inputs->is_object())
        for (const auto& [key, value] : inputs->items())
          if (!value.is_string()) std::abort();
      if (auto workflow = payload.find("workflow");
          workflow != payload.end() &&
          (!workflow->is_string() ||
           !workflow->get<std::string>().starts_with(".github/workflows/") ||
           workflow->get<std::string>().find("..") != std::string::npos))
        std::abort();
      continue;
    }
    if (std::string_view(name) != "ping" && event->ignored.empty() &&
        (event->repository.empty() || event->sha.size() != 40))
      std::abort();
  }
  return 0;
}
