#pragma once
// `kiln hipcheck`: what still blocks a CUDA → HIP/ROCm port. This header is the module's entry:
// find the sources, scan them in parallel, resolve macros across files, apply a baseline, and
// decide the exit code. Output formats are in report.h, baselines in baseline.h.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/hipcheck/scanner.h"
#include "kiln/hipcheck/walk.h"

namespace kiln::hipcheck {

// Which findings make the check fail (exit code 1). A ladder: each level includes the ones
// before it, so `hazard` fails on unsupported uses too and `any` on every finding.
enum class FailOn : std::uint8_t { none, unsupported, hazard, any };
std::optional<FailOn> parse_fail_on(std::string_view text);
std::string_view fail_on_name(FailOn fail_on);
// Default: `any` — a port is done when no CUDA is left; accept known findings with a baseline.
inline constexpr FailOn k_default_fail_on = FailOn::any;

// Whether `finding` is of a kind that `fail_on` fails on (baseline not considered; a guarded
// finding, in a branch only CUDA builds compile, never fails).
bool fails_on(const Finding& finding, FailOn fail_on);

struct Options {
  std::vector<std::string> paths{"."};
  std::vector<std::string> extensions = default_extensions();
  unsigned jobs = 0;  // threads; 0: one per hardware thread
  ScanOptions scan;   // the ROCm release judged for, the project's HIP macros
};

struct Summary {
  std::uint64_t files = 0;
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;
  std::uint64_t code_lines = 0;
  std::uint64_t references = 0;  // convertible + unsupported
  std::uint64_t convertible = 0;
  std::uint64_t unsupported = 0;
  std::uint64_t deprecated = 0;  // cuda_api findings the tables mark deprecated
  std::uint64_t removed = 0;     // ... or removed
  std::uint64_t hazards = 0;
  std::uint64_t baselined = 0;  // findings accepted by the baseline
  std::uint64_t guarded = 0;    // findings in CUDA-only branches of dual-platform code
};

struct Report {
  std::vector<FileScan> files;  // sorted by path; each file's findings by line and column
  Summary summary;
  RocmVersion rocm;  // the ROCm release support was judged for
};

// Counts of one file's findings, in the summary's terms.
Summary count(const FileScan& file);
// Recomputes report.summary from report.files (after a baseline was applied).
void summarize(Report& report);

// Scans in-memory sources (path, text) as one project: the parallel scan and the cross-file
// macro pass. Used by run_check and by tests and benchmarks that generate their input.
Report scan_sources(const std::vector<std::pair<std::string, std::string>>& sources,
                    unsigned jobs = 0, const ScanOptions& options = default_scan_options());

// Finds and reads the files named by `options` and scans them.
Result<Report> run_check(const Options& options);

// The exit code of a run: 1 when a finding not accepted by the baseline is of a kind
// `fail_on` fails on, else 0.
int exit_code(const Report& report, FailOn fail_on);

}  // namespace kiln::hipcheck
