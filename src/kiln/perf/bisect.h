#pragma once
// Bisection to the commit that made a benchmark slower (docs/perf-gate.md "Bisection"): the
// commits from a good one to a bad one (git rev-list --ancestry-path), each measured by running
// its job. GOOD and BAD are measured first; a step between them below the threshold is nothing
// to bisect. Then the midpoint of the commits not yet classified is measured: it is bad when its
// level is nearer the bad level than the good one, and measured again (up to `repeat` runs in
// all) while it sits within a quarter of the step from the middle. Used by `kiln bench bisect`
// and by `kiln serve` on a regression; the measuring (a job run) is the caller's.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"

namespace kiln::perf {

struct BisectCommit {
  std::string sha{}, subject{};
  std::vector<double> levels{};      // one per run of its job
  std::vector<std::int64_t> runs{};  // the runs that measured it
  double level() const;              // the mean of levels (0 when none)
};

struct BisectOptions {
  int repeat = 3;           // runs of a commit whose level is near the middle
  double threshold = 0.05;  // the smallest step between GOOD and BAD worth bisecting
};

struct BisectOutcome {
  bool found = false;  // false: the step from GOOD to BAD is below the threshold
  double step = 0;     // relative change from GOOD's level to BAD's
  std::size_t last_good = 0, first_bad = 0;  // indices into the commits
  double change = 0;                         // relative change from last_good to first_bad
  int runs = 0;                              // job runs made
};

// Adds one level (and the run that measured it) to the commit; an error ends the bisection.
using MeasureCommit = std::function<Status(BisectCommit&)>;

// `commits`: GOOD first, BAD last, each commit of the ancestry path between them in order (at
// least two in all). Fills their levels.
Result<BisectOutcome> bisect(std::vector<BisectCommit>& commits, const BisectOptions& options,
                             const MeasureCommit& measure);

// The result as `kiln bench bisect --json` prints it and `kiln serve` posts it on the run:
// benchmark, metric, first_bad, subject, last_good, change_percent, commits, measured.
nlohmann::ordered_json bisect_json(const std::vector<BisectCommit>& commits,
                                   const BisectOutcome& outcome, const std::string& benchmark,
                                   const std::string& metric);

}  // namespace kiln::perf
