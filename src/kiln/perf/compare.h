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
//         both, and the current level must leave their prediction interval at alpha (baseline.h:
//         the runs after the history's last change point, outlying runs left out; corrected for
//         the skewness of a mean of few repetitions), and the current repetitions must differ
//         from all the baseline runs' repetitions by the rank test at alpha; or else
//       * the Mann-Whitney U test on repetitions, when the current result and the baseline run
//         both have at least `min_samples` of them; or else
//       * a prediction interval from the history (the summary values of the last runs on the
//         baseline branch and testbed, baseline.h), when it has at least `min_history` points; and
//   - at least the threshold (default 5%): the verdict is the change it shows, so a regression
//     is never flagged below its threshold. A significant change below it is unchanged, with
//     the reason saying so. (A true step of exactly the threshold is then caught about half the
//     time: to catch steps of size S, set the threshold below S by the interval's half-width.)
// For the Mann-Whitney rule with a history of summaries (no repetitions in it), the change must
// pass both tests, the interval at alpha and the rank test at confirm_alpha: repetitions of one
// run do not see run-to-run noise.
// The rank test leaves out far outliers (stats.h: without_far_outliers) and its change is the
// Hodges-Lehmann shift relative to the baseline's median.
// When nothing is significant and the interval is wider than the threshold (or the change
// reaches the threshold), the verdict is too_noisy, never unchanged: a noisy benchmark is
// reported, not silently passed.

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
  // The half-width of the interval on the change's side, relative (0 when unknown): the
  // smallest change this comparison could have detected. When it exceeds the threshold and
  // nothing was significant, the verdict is too_noisy.
  double detectable = 0;
  // Why the verdict: "significant and ≥ threshold 5.0%", "too noisy: the interval ±7.2% is
  // wider than the threshold 5.0%", ... (docs/perf-gate.md).
  std::string reason;
  // The index in the history of the first run of the baseline: after the history's last change
  // point (baseline.h), 0 without one.
  std::size_t baseline_start = 0;
};

// `current_samples` may be empty, then `current_value` is the current summary.
Comparison compare(const Baseline& baseline, std::span<const double> current_samples,
                   double current_value, Direction direction, const DecisionOptions& options);

}  // namespace kiln::perf
