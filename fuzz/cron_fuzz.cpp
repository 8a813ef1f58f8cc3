// Fuzz target for cron expressions (on.schedule[].cron): parse anything; when it parses, ask
// for the next time it fires and check that the schedule matches that minute. Must never crash.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <string_view>

#include "kiln/workflow/cron.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto schedule = kiln::workflow::parse_cron(text);
  if (!schedule) return 0;
  std::chrono::sys_seconds from{std::chrono::seconds(1700000000)};
  auto next = schedule->next_after(from);
  if (!next) return 0;
  if (*next <= from) std::abort();
  std::time_t raw = std::chrono::system_clock::to_time_t(*next);
  std::tm utc{};
  gmtime_r(&raw, &utc);
  if (!schedule->matches(utc)) std::abort();
  return 0;
}
