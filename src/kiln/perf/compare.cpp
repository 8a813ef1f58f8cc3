#include "kiln/perf/compare.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace kiln::perf {
namespace {

// The sign of a change that is bad: +1 when bigger values are worse.
double worse_sign(Direction direction) {
  return direction == Direction::smaller_is_better ? 1.0 : -1.0;
}

double relative(double value, double base) {
  return base != 0 ? (value - base) / std::fabs(base) : 0.0;
}

// Significant and not shown to be smaller than the threshold: which way. `detectable` is the
// half-width of the change's confidence interval, so |change| + detectable >= threshold says
// the data cannot rule out a change of the threshold's size. (Requiring the point estimate
// itself to pass the threshold would catch a true 5% step only half the time: the estimate
// falls below 5% as often as above.) Otherwise too_noisy when a threshold-sized change could
// have hidden in the noise, else unchanged.
Verdict classify(const Comparison& c, Direction direction, const DecisionOptions& options,
                 bool significant) {
  double worse = c.change * worse_sign(direction);
  if (significant && c.change != 0 && std::fabs(c.change) + c.detectable >= options.threshold)
    return worse > 0 ? Verdict::regression : Verdict::improvement;
  // Not significant: a change as large as the threshold, or one that could hide in the noise,
  // cannot be called unchanged.
  if (!significant &&
      (c.detectable > options.threshold || std::fabs(c.change) >= options.threshold))
    return Verdict::too_noisy;
  return Verdict::unchanged;
}

}  // namespace

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::regression:
      return "regression";
    case Verdict::improvement:
      return "improvement";
    case Verdict::unchanged:
      return "unchanged";
    case Verdict::too_noisy:
      return "too-noisy";
    case Verdict::no_baseline:
      return "no-baseline";
  }
  return "unchanged";
}

Comparison compare(const Baseline& baseline, std::span<const double> current_samples,
                   double current_value, Direction direction, const DecisionOptions& options) {
  Comparison c;
  c.current = current_samples.empty()
                  ? current_value
                  : summary_of({current_samples.begin(), current_samples.end()});
  const double z = normal_quantile(1.0 - options.alpha / 2.0);

  if (baseline.samples.size() >= options.min_samples &&
      current_samples.size() >= options.min_samples) {
    c.method = "mann-whitney";
    c.baseline = summary_of(baseline.samples);
    // A preempted repetition says nothing about the code: far outliers are left out of the
    // test and of the estimate (the change is the Hodges-Lehmann shift, relative).
    auto base = without_far_outliers(baseline.samples);
    auto current = without_far_outliers(current_samples);
    c.change = c.baseline != 0 ? hodges_lehmann_shift(base, current) / std::fabs(c.baseline) : 0;
    auto test = mann_whitney_u(base, current);
    c.p_value = test.p_value;
    // The standard error of the Hodges-Lehmann shift is about sqrt(pi/3) sigma sqrt(1/m + 1/n)
    // for normal data (its efficiency is 95%); a shift is detectable at alpha when it exceeds z
    // of its error. sigma: the standard deviation of what the test saw, so bimodal noise counts
    // in full.
    auto shift_variance = [](std::span<const double> x) {
      double s = standard_deviation(x);
      return std::numbers::pi / 3 * s * s / static_cast<double>(x.size());
    };
    double error = std::sqrt(shift_variance(base) + shift_variance(current));
    c.detectable = c.baseline != 0 ? z * error / std::fabs(c.baseline) : 0;
    bool significant = test.p_value < options.alpha;
    // Repetitions within one run do not see the run-to-run noise (clocks, temperature, a busy
    // neighbour): with a history, the current value must leave its prediction interval, which
    // then bounds the false alarms at alpha, and the rank test confirms at confirm_alpha that
    // the repetitions moved too.
    if (baseline.history.size() >= options.min_history) {
      auto interval = prediction_interval(baseline.history, 1.0 - options.alpha);
      c.interval = interval;
      significant = test.p_value < options.confirm_alpha &&
                    (c.current < interval.lower || c.current > interval.upper);
      if (interval.center != 0)
        c.detectable =
            std::max(c.detectable, (interval.upper - interval.center) / std::fabs(interval.center));
    }
    c.verdict = classify(c, direction, options, significant);
    return c;
  }
  if (baseline.history.size() >= options.min_history) {
    c.method = "prediction-interval";
    auto interval = prediction_interval(baseline.history, 1.0 - options.alpha);
    c.baseline = interval.center;
    c.change = relative(c.current, c.baseline);
    c.interval = interval;
    c.p_value = prediction_p_value(interval, c.current);
    c.detectable = c.baseline != 0 ? (interval.upper - interval.center) / std::fabs(c.baseline) : 0;
    bool outside = c.current < interval.lower || c.current > interval.upper;
    c.verdict = classify(c, direction, options, outside);
    // One value, as far out as the far outliers this history has shown: it may be one of them.
    if (outside && interval.outliers > 0 && interval.fence > 0 &&
        std::fabs(c.current - median(baseline.history)) > interval.fence)
      c.verdict = Verdict::too_noisy;
    return c;
  }
  // Not enough to decide either way: a new benchmark, or too few runs so far.
  if (!baseline.samples.empty())
    c.baseline = summary_of(baseline.samples);
  else if (!baseline.history.empty())
    c.baseline = median(baseline.history);
  else if (baseline.value)
    c.baseline = *baseline.value;
  else
    return c;
  c.change = relative(c.current, c.baseline);
  c.verdict = Verdict::no_baseline;
  return c;
}

}  // namespace kiln::perf
