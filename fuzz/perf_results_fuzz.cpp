// Fuzz target for the benchmark result parsers: any input goes through format detection and
// whichever parser it picks (Google Benchmark, pytest-benchmark, go test, Criterion, custom).
// Must never crash, hang or throw; errors are fine, and an error must name the file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kiln/perf/compare.h"
#include "kiln/perf/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // A path whose side files (Criterion's benchmark.json, sample.json) do not exist.
  auto parsed = kiln::perf::parse_results(text, "/nonexistent/kiln-fuzz/new/estimates.json");
  if (!parsed) {
    if (parsed.error().to_string().find("/nonexistent/kiln-fuzz") == std::string::npos)
      std::abort();
    return 0;
  }
  // Whatever parses must be usable by the decision without trouble.
  for (const auto& m : parsed->measurements) {
    kiln::perf::Baseline baseline{.samples = m.samples,
                                  .history = {m.value, m.value, m.value},
                                  .value = m.value,
                                  .history_samples = {}};
    (void)kiln::perf::compare(baseline, m.samples, m.value, m.direction, {});
    // And as a run history (five runs of the same samples): the run-history rule.
    baseline.history.assign(5, m.value);
    baseline.history_samples.assign(5, m.samples);
    (void)kiln::perf::compare(baseline, m.samples, m.value, m.direction, {});
  }
  return 0;
}
