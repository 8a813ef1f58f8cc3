#pragma once
// `kiln hipcheck`: what still blocks a CUDA → HIP/ROCm port. This header is the module's entry:
// find the sources, scan them in parallel, resolve macros across files, apply a baseline, and
// decide the exit code. Output formats are in report.h, baselines in baseline.h.

#include <cstdint>
#include <functional>
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
  // Findings neither baselined nor guarded, by category: what --fail-on decides on.
  std::uint64_t open_convertible = 0;
  std::uint64_t open_unsupported = 0;
  std::uint64_t open_hazards = 0;
};

struct Report {
  std::vector<FileScan> files;  // sorted by path; each file's findings by line and column
  Summary summary;
  RocmVersion rocm;  // the ROCm release support was judged for
};

// Counts of one file's findings, in the summary's terms.
Summary count(const FileScan& file);
// Adds one file's counts to a total.
void add_counts(Summary& total, const Summary& file);
// Recomputes report.summary from report.files (after a baseline was applied).
void summarize(Report& report);

// The sources of one run, sorted by path, and what was skipped while finding and reading them.
struct Project {
  std::vector<std::string> paths;
  std::vector<std::string> texts;
  std::vector<std::string> warnings;  // "PATH: warning: ..." (FIFOs, devices, binary files, ...)
};
// Finds and reads the files named by `options`; a file that cannot be read is an error.
Result<Project> read_project(const Options& options);
Project make_project(std::vector<std::pair<std::string, std::string>> sources);

// Marks what a baseline accepts in one file's findings (Baseline::mark).
using FileFilter = std::function<void(FileScan&)>;
// Receives each file's scan, in path order, with its counts; the scan is gone after the call.
using FileSink = std::function<void(const FileScan& file, const Summary& counts)>;

// Scans a project: every file once, in parallel, with the CUDA macros and shims of the files it
// includes (directly or through other includes of the project), and hands the files to `sink`
// in path order. Only a window of files' findings is in memory at a time, so memory does not
// grow with the number of findings. Returns the totals.
Summary scan_project(const Project& project, unsigned jobs, const ScanOptions& options,
                     const FileFilter& filter, const FileSink& sink);

// scan_project into a Report that keeps every finding: for tests and benchmarks that generate
// their input (`sources` are (path, text)).
Report scan_sources(const std::vector<std::pair<std::string, std::string>>& sources,
                    unsigned jobs = 0, const ScanOptions& options = default_scan_options());
// Finds, reads and scans the files named by `options` into a Report.
Result<Report> run_check(const Options& options);

// The exit code of a run: 1 when a finding not accepted by the baseline (and not guarded) is of
// a kind `fail_on` fails on, else 0.
int exit_code(const Summary& summary, FailOn fail_on);
int exit_code(const Report& report, FailOn fail_on);

}  // namespace kiln::hipcheck
