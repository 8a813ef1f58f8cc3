// A hipcheck baseline (`kiln hipcheck --baseline FILE`, the file --write-baseline writes) on
// arbitrary bytes: a baseline or an invalid_input error at the file, never a crash or an escaped
// nlohmann::json exception. A baseline that parsed applies to a report without a crash, and the
// baseline written for that report parses again, accepting as many findings.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kiln/hipcheck/baseline.h"
#include "kiln/hipcheck/scanner.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::hipcheck;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto baseline = Baseline::parse(text, "hipcheck-baseline.json");
  if (!baseline) {
    if (baseline.error().code != kiln::ErrorCode::invalid_input) std::abort();
    if (baseline.error().where.file != "hipcheck-baseline.json") std::abort();
    return 0;
  }
  // The input as a source file too, so that the report has findings to match.
  Report report;
  report.files.push_back(scan_source("fuzz.cu", text));
  baseline->apply(report);
  auto written = Baseline::parse(baseline_json(report), "written.json");
  if (!written) std::abort();
  std::size_t findings = 0;
  for (const auto& file : report.files) findings += file.findings.size();
  if (written->size() != findings) std::abort();
  return 0;
}
