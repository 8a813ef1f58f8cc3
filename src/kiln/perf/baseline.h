#pragma once
// The baseline of a history of run levels (oldest first), robust to what a history holds besides
// the level to compare with (docs/perf-gate.md, "Baseline"):
//   - steps: the baseline is the runs after the last change point of the history
//     (change_points.h, the same detector as `kiln bench history`); the runs before it still
//     measure the run-to-run spread, each about its own segment's level;
//   - outlying runs (a throttled GPU, a busy neighbour): a level farther than 5 robust standard
//     deviations from its segment's median is left out, the robust standard deviation being
//     1.4826 × the median distance of every level from its own segment's median — judged on
//     the history's own spread, so one slow run does not widen the interval. (With fewer than
//     10 levels none is left out: the MAD of a handful is too unsteady to judge by.)
// The outlying levels' distances from their segment's median are kept (`outlying`): a current
// level as far out as one of them may be another such run (compare.h).
// The interval is the prediction interval for the next level of the last segment:
//   center ± t(1 − (1 − confidence)/2, df) · s · sqrt(1 + 1/n),
// center the mean of the last segment's kept levels, n their count, s the pooled standard
// deviation of every kept level about its segment's mean, df = kept levels − segments.

#include <span>

#include "kiln/perf/stats.h"

namespace kiln::perf {

// Needs at least 2 levels; with fewer the interval is the single level (n = 1, df = 0).
PredictionInterval baseline_interval(std::span<const double> levels, double confidence);

}  // namespace kiln::perf
