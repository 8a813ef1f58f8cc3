// Fuzz target for the JUnit XML reader (report/junit.h): any input must parse or fail with an
// error naming the file; never crash, hang or throw. What parses must keep its invariants:
// a known status, a finite non-negative time, texts within their limits.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kiln/report/junit.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = kiln::report::parse_junit(text, "fuzz/junit.xml");
  if (!parsed) {
    if (parsed.error().to_string().find("fuzz/junit.xml") == std::string::npos) std::abort();
    return 0;
  }
  for (const auto& c : parsed->cases) {
    if (c.status != "passed" && c.status != "failed" && c.status != "error" &&
        c.status != "skipped")
      std::abort();
    if (!std::isfinite(c.seconds) || c.seconds < 0) std::abort();
    if (c.name.empty()) std::abort();
    if (c.details.size() > kiln::report::k_max_test_text + 64) std::abort();
    if (c.output.size() > kiln::report::k_max_test_text + 64) std::abort();
  }
  return 0;
}
