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

// How far from its run's median a repetition must be to count as a far outlier, in robust
// standard deviations of the noise within a run (as stats.h: without_far_outliers).
constexpr double k_far = 5;

// `samples` without the values more than k_far * `scale` from their median. Outliers are a
// minority by definition: when the fence would leave half of the values out or more (a run far
// noisier than the history's), it leaves none out.
std::vector<double> within_fence(std::span<const double> samples, double scale) {
  const double center = median(samples);
  std::vector<double> kept;
  for (double v : samples)
    if (scale <= 0 || std::fabs(v - center) <= k_far * scale) kept.push_back(v);
  if (2 * kept.size() <= samples.size()) return {samples.begin(), samples.end()};
  return kept;
}

double mean_of(std::span<const double> values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

// The decision on the run history (compare.h, docs/perf-gate.md): nullopt when the history has
// fewer than min_history runs with repetitions, or the current run too few.
std::optional<Comparison> compare_run_history(const Baseline& baseline,
                                              std::span<const double> current_samples,
                                              Direction direction,
                                              const DecisionOptions& options, Comparison c) {
  if (!options.run_history || current_samples.size() < options.min_samples) return std::nullopt;
  std::vector<std::span<const double>> runs;
  for (const auto& samples : baseline.history_samples)
    if (samples.size() >= options.min_samples) runs.emplace_back(samples);
  if (runs.size() < options.min_history) return std::nullopt;
  // The noise within a run, from every run of the history at once: the deviations of each
  // repetition from its own run's median, so that run-to-run offsets do not count. Hundreds of
  // deviations give a steady scale where the MAD of one run's ten values does not (which cut
  // the tail of the slow mode of bimodal runs at random), and they give one for runs of five.
  std::vector<double> deviations;
  for (auto run : runs) {
    double center = median(run);
    for (double v : run) deviations.push_back(std::fabs(v - center));
  }
  const double scale = 1.4826 * median_of(std::move(deviations));
  // Each run's level: the mean of its repetitions without the far outliers. The random-effects
  // model: a run's level is the true cost plus the run's own offset plus the noise of its
  // repetitions; the spread of the history's levels contains both, so their prediction
  // interval is the interval of the next run's level (with as many repetitions).
  std::vector<double> levels;
  std::vector<double> pooled;
  double third_moment = 0;  // of the repetitions about their run's level, all runs together
  for (auto run : runs) {
    auto kept = within_fence(run, scale);
    levels.push_back(mean_of(kept));
    pooled.insert(pooled.end(), kept.begin(), kept.end());
    for (double v : kept) third_moment += std::pow(v - levels.back(), 3);
  }
  third_moment /= static_cast<double>(pooled.size());
  auto current = within_fence(current_samples, scale);
  c.current = mean_of(current);
  auto interval = prediction_interval(levels, 1.0 - options.alpha);
  // The t interval is symmetric; the level of a few repetitions from two modes is not (the
  // mean of 5 values of which 30% sit 6% higher has a long slow tail). The skewness of the
  // mean of n repetitions is the third cumulant of one, over n^2, over the level's standard
  // deviation cubed: known from hundreds of repetitions, unlike the skewness of 20 levels.
  // The Cornish-Fisher correction moves each bound by (t^2 - 1) * skewness / 6 of the scale
  // (bounded: |skewness| <= 1, where the expansion still holds).
  const double scale_level = interval.sigma * std::sqrt(1.0 + 1.0 / interval.n);
  double skewness = 0;
  if (interval.sigma > 0) {
    const double n = static_cast<double>(current.size());
    skewness = std::clamp(third_moment / (n * n) / std::pow(interval.sigma, 3), -1.0, 1.0);
    if (!std::isfinite(skewness)) skewness = 0;
  }
  if (scale_level > 0) {
    const double t = (interval.upper - interval.center) / scale_level;
    const double bend = (t * t - 1) * skewness / 6;
    interval.upper = interval.center + scale_level * (t + bend);
    interval.lower = interval.center - scale_level * (t - bend);
  }
  c.method = "run-history";
  c.baseline = interval.center;
  c.interval = interval;
  c.change = relative(c.current, c.baseline);
  // The p-value under the same corrected model: the t value whose corrected quantile is the
  // distance observed.
  if (scale_level > 0 && interval.n >= 2) {
    const double observed = std::fabs(c.current - interval.center) / scale_level;
    const double a = (c.current >= interval.center ? skewness : -skewness) / 6;
    double t = observed;
    if (std::fabs(a) > 1e-9 && 1 + 4 * a * (a + observed) >= 0)
      t = (-1 + std::sqrt(1 + 4 * a * (a + observed))) / (2 * a);
    c.p_value = std::min(1.0, 2 * (1 - student_t_cdf(std::fabs(t), interval.n - 1.0)));
  } else {
    c.p_value = prediction_p_value(interval, c.current);
  }
  const double half =
      c.current >= interval.center ? interval.upper - interval.center
                                   : interval.center - interval.lower;
  c.detectable = c.baseline != 0 ? half / std::fabs(c.baseline) : 0;
  // The repetitions must have moved too, against every repetition of the history (not the
  // latest run's only: 10 against 10 is a weak test when the samples fall into two modes,
  // 10 against 200 is not), at alpha as well: both tests must be significant. (Only a
  // confirmation: the repetitions of one run do not see run-to-run offsets, so alone this
  // test would raise false alarms; the interval of the levels bounds them.)
  auto test = mann_whitney_u(pooled, current);
  const bool moved = test.p_value < options.alpha &&
                     (test.u < 0.5 * static_cast<double>(pooled.size() * current.size())) ==
                         (c.change > 0);
  const bool outside = c.current < interval.lower || c.current > interval.upper;
  c.verdict = classify(c, direction, options, outside && moved);
  // Beyond the outlier fence but within the reach of a run the history itself had there, on
  // the same side (a run on a throttled GPU): it may be another one. (A current run farther out
  // than any of them is judged as usual: twenty normal levels have a spurious "far outlier" now
  // and then, and a 20% step must not turn too-noisy because of it.)
  if (outside && moved && interval.outliers > 0 && interval.fence > 0) {
    const double center = median(levels);
    const double distance = c.current - center;
    double reach = 0;
    for (double level : levels)
      if (std::fabs(level - center) > interval.fence && (level - center) * distance > 0)
        reach = std::max(reach, std::fabs(level - center));
    if (std::fabs(distance) > interval.fence && std::fabs(distance) <= reach)
      c.verdict = Verdict::too_noisy;
  }
  return c;
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

  if (auto decided = compare_run_history(baseline, current_samples, direction, options, c))
    return *decided;
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
