#pragma once
// Baselines: a file of accepted findings, so that a check fails only on new ones. A finding is
// matched by its path and fingerprint (rule, name and the text of its line), not by line
// number, so edits elsewhere in a file do not invalidate it. Each entry accepts one finding:
// a second identical line is a new finding.
//
// Format (JSON, written by --write-baseline):
//   {"kiln_hipcheck_baseline": 1,
//    "findings": [{"path": "src/a.cu", "line": 12, "rule": "cuda-api", "name": "cudaMalloc",
//                  "fingerprint": "89ab..."}, ...]}
// line, rule and name are for people reading it; path and fingerprint are what match.

#include <map>
#include <string>
#include <utility>

#include "kiln/core/result.h"
#include "kiln/hipcheck/hipcheck.h"

namespace kiln::hipcheck {

class Baseline {
 public:
  // Parses a baseline file's text; errors are invalid_input at `file` ("FILE: error: ...").
  static Result<Baseline> parse(std::string_view text, const std::string& file);
  static Result<Baseline> load(const std::string& file);

  // Marks the findings the baseline accepts (Finding::baselined) and recounts the summary.
  void apply(Report& report) const;
  std::size_t size() const;

 private:
  std::map<std::pair<std::string, std::uint64_t>, int> counts_;  // (path, fingerprint) → count
};

// The baseline text that accepts every finding of `report`.
std::string baseline_json(const Report& report);

}  // namespace kiln::hipcheck
