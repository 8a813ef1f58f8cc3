#include "kiln/perf/compare.h"

#include <algorithm>
#include <cmath>

namespace kiln::perf {
namespace {

// The sign of a change that is bad: +1 when bigger values are worse.
double worse_sign(Direction direction) { return direction == Direction::smaller_is_better ? 1.0 : -1.0; }

double relative(double value, double base) { return base != 0 ? (value - base) / std::fabs(base) : 0.0; }

// Significant and past the threshold: which way. Otherwise too_noisy when a threshold-sized
// change could have hidden in the noise, else unchanged.
Verdict classify(const Comparison& c, Direction direction, const DecisionOptions& options, bool significant) {
  double worse = c.change * worse_sign(direction);
  if (significant && std::fabs(c.change) >= options.threshold)
    return worse > 0 ? Verdict::regression : Verdict::improvement;
  if (!significant && c.detectable > options.threshold) return Verdict::too_noisy;
  return Verdict::unchanged;
}

}  // namespace

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::regression: return "regression";
    case Verdict::improvement: return "improvement";
    case Verdict::unchanged: return "unchanged";
    case Verdict::too_noisy: return "too-noisy";
    case Verdict::no_baseline: return "no-baseline";
  }
  return "unchanged";
}

Comparison compare(const Baseline& baseline, std::span<const double> current_samples,
                   double current_value, Direction direction, const DecisionOptions& options) {
  Comparison c;
  c.current = current_samples.empty() ? current_value : median(current_samples);
  const double z = normal_quantile(1.0 - options.alpha / 2.0);

  if (baseline.samples.size() >= options.min_samples && current_samples.size() >= options.min_samples) {
    c.method = "mann-whitney";
    c.baseline = median(baseline.samples);
    c.change = relative(c.current, c.baseline);
    auto test = mann_whitney_u(baseline.samples, current_samples);
    c.p_value = test.p_value;
    // The standard error of a sample median is about 1.2533 sigma / sqrt(n) (normal data);
    // the difference of two medians is detectable at alpha when it exceeds z of its error.
    auto median_variance = [](std::span<const double> x) {
      double s = 1.2533 * robust_sigma(x);
      return s * s / static_cast<double>(x.size());
    };
    double error = std::sqrt(median_variance(baseline.samples) + median_variance(current_samples));
    c.detectable = c.baseline != 0 ? z * error / std::fabs(c.baseline) : 0;
    bool significant = test.p_value < options.alpha;
    // Repetitions within one run do not see the run-to-run noise (clocks, temperature, a busy
    // neighbour): with a history, the current value must also leave its prediction interval.
    if (baseline.history.size() >= options.min_history) {
      auto interval = prediction_interval(baseline.history, 1.0 - options.alpha);
      c.interval = interval;
      significant = significant && (c.current < interval.lower || c.current > interval.upper);
      if (interval.center != 0)
        c.detectable = std::max(c.detectable, (interval.upper - interval.center) / std::fabs(interval.center));
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
    return c;
  }
  // Not enough to decide either way: a new benchmark, or too few runs so far.
  if (!baseline.samples.empty()) c.baseline = median(baseline.samples);
  else if (!baseline.history.empty()) c.baseline = median(baseline.history);
  else if (baseline.value) c.baseline = *baseline.value;
  else return c;
  c.change = relative(c.current, c.baseline);
  c.verdict = Verdict::no_baseline;
  return c;
}

}  // namespace kiln::perf
