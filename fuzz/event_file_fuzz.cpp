// An event file (`kiln run --event-file`) on arbitrary bytes: parse_event_file gives a payload
// whose members kiln fills in have their shape, or an invalid_input error at the file; the
// payload then becomes an event of each kind kiln runs, or an invalid_input error. Never a crash
// or an escaped nlohmann::json exception.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kiln/engine/plan/repository.h"
#include "kiln/plan/event.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto payload = kiln::engine::parse_event_file(text, "event.json");
  if (!payload) {
    if (payload.error().code != kiln::ErrorCode::invalid_input) std::abort();
    if (payload.error().where.file != "event.json") std::abort();
    return 0;
  }
  if (!payload->is_object()) std::abort();
  for (const char* name :
       {"push", "pull_request", "pull_request_target", "workflow_dispatch", "schedule"}) {
    auto event = kiln::plan::event_from_payload(name, *payload);
    if (!event && event.error().code != kiln::ErrorCode::invalid_input) std::abort();
  }
  return 0;
}
