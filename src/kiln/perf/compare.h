#pragma once
// The decision for one metric of one benchmark: is the current result a regression, an
// improvement, unchanged, or too noisy to tell? (docs/perf-gate.md explains the rule.)
//
// A change is flagged only when it is BOTH
//   - statistically significant at `alpha`, by
//       * the run history ("run-history"), when the current result and at least `min_history`
//         runs of the history have at least `min_samples` repetitions: a random-effects
//         model. A run's level (the mean of its repetitions without far outliers, judged by
//         the within-run spread pooled over the history) is the true cost plus the run's own
//         offset plus the noise of its repetitions; the spread of the history's levels holds
//         both, and the current level must leave their prediction interval at alpha (corrected
//         for the skewness of a mean of few repetitions), and the current repetitions must
//         differ from all the history's repetitions by the rank test at alpha; or else
//       * the Mann-Whitney U test on repetitions, when the current result and the baseline run
//         both have at least `min_samples` of them; or else
//       * a prediction interval from the history (the summary values of the last runs on the
//         baseline branch and testbed), when it has at least `min_history` points; and
//   - not smaller than the threshold (default 5%) in relative terms: the relative change plus
//     the half-width of its confidence interval (`detectable`) reaches the threshold. A change
//     measured precisely below the threshold passes; a true step of exactly the threshold is
//     caught (nearly) every time, not one time in two as a bare "estimate > 5%" rule would.
// For the Mann-Whitney rule with a history of summaries (no repetitions in it), the change must
// pass both tests, the interval at alpha and the rank test at confirm_alpha: repetitions of one
// run do not see run-to-run noise.
// The rank test leaves out far outliers (stats.h: without_far_outliers) and its change is the
// Hodges-Lehmann shift relative to the baseline's median.
// When the test is not significant and the noise is large enough that a change of the
// threshold's size could have gone unseen (or the measured change is that large), the verdict
// is too_noisy, never unchanged: a noisy benchmark is reported, not silently passed.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/perf/measurement.h"
#include "kiln/perf/stats.h"

namespace kiln::perf {

enum class Verdict { regression, improvement, unchanged, too_noisy, no_baseline };
std::string_view to_string(Verdict verdict);  // "regression", "too-noisy", "no-baseline", ...

struct DecisionOptions {
  double threshold = 0.05;  // relative: 0.05 is 5%
  double alpha = 0.01;      // significance level of either test
  // For the Mann-Whitney rule with a history of summaries, the prediction interval (at alpha)
  // decides and the rank test against the latest run only has to confirm at this level: the
  // interval bounds the false alarms, the rank test checks that the repetitions, not one lucky
  // summary, moved. (The run-history rule tests against all the history's repetitions, with
  // power to spare, and confirms at alpha.)
  double confirm_alpha = 0.05;
  std::size_t min_samples =
      5;  // per side, for the rank test (with 5 and 5 the exact p can reach 0.008)
  std::size_t min_history = 5;  // points, for the prediction interval
  // Decide with the run history (below) when it has repetitions; false: the older rule (the
  // rank test against the latest run, confirmed by the interval of the run summaries), kept
  // for the evaluation's before/after comparison.
  bool run_history = true;
};

// What the current result is compared with.
struct Baseline {
  // Repetitions of the one baseline run the rank test uses (the latest on the baseline branch
  // that has samples, or an explicit base file/run). May be empty.
  std::vector<double> samples;
  // The summary values of recent baseline runs, oldest first, for the prediction interval.
  std::vector<double> history;
  // The single value shown as "baseline" when neither of the above is usable (one run with no
  // repetitions): the comparison can only say no_baseline then.
  std::optional<double> value;
  // The repetitions of each of those runs, in the same order (an empty vector for a run that
  // had none; may be empty altogether, or shorter than `history`).
  std::vector<std::vector<double>> history_samples;
};

struct Comparison {
  Verdict verdict = Verdict::no_baseline;
  // "run-history", "mann-whitney", "prediction-interval" or "" (no baseline)
  std::string method;
  // The baseline's summary (median of its samples or of the history; for run-history the mean
  // of the history's run levels) and the current one (for run-history: the current run's level).
  double baseline = 0;
  double current = 0;
  // Relative change, signed; 0 when the baseline is 0. (current - baseline) / |baseline|, except
  // for the rank test: the Hodges-Lehmann shift / |baseline|.
  double change = 0;
  std::optional<double> p_value;
  // Where the current value (prediction-interval) or the current run's level (run-history)
  // falls without a change; with the mann-whitney rule and a history, the interval it confirms.
  std::optional<PredictionInterval> interval;
  // The smallest relative change this comparison could have detected (0 when unknown): when it
  // exceeds the threshold and nothing was significant, the verdict is too_noisy.
  double detectable = 0;
};

// `current_samples` may be empty, then `current_value` is the current summary.
Comparison compare(const Baseline& baseline, std::span<const double> current_samples,
                   double current_value, Direction direction, const DecisionOptions& options);

}  // namespace kiln::perf
