#include "kiln/perf/compare.h"

#include "kiln/perf/baseline.h"

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

std::string percent(double fraction) { return fmt::format("{:.1f}%", fraction * 100); }

// The verdict is the change it shows: a significant change is a regression (worse direction) or
// an improvement only when the change itself reaches the threshold; a significant change below
// it passes as unchanged, and says so. Not significant: too_noisy when a change of the
// threshold's size could hide in the interval (its half-width, `detectable`, is wider than the
// threshold) or when the change reaches the threshold without being significant; else
// unchanged.
void classify(Comparison& c, Direction direction, const DecisionOptions& options,
              bool significant) {
  const double worse = c.change * worse_sign(direction);
  const std::string threshold = percent(options.threshold);
  if (significant && std::fabs(c.change) >= options.threshold && c.change != 0) {
    c.verdict = worse > 0 ? Verdict::regression : Verdict::improvement;
    c.reason = fmt::format("significant and ≥ threshold {}", threshold);
  } else if (significant) {
    c.verdict = Verdict::unchanged;
    c.reason = fmt::format("significant but below the threshold {}", threshold);
  } else if (c.detectable > options.threshold) {
    c.verdict = Verdict::too_noisy;
    c.reason = fmt::format("too noisy: the interval ±{} is wider than the threshold {}",
                           percent(c.detectable), threshold);
  } else if (std::fabs(c.change) >= options.threshold) {
    c.verdict = Verdict::too_noisy;
    c.reason = fmt::format("too noisy: ≥ threshold {} but not significant", threshold);
  } else {
    c.verdict = Verdict::unchanged;
    c.reason = fmt::format("within the noise (±{})", percent(c.detectable));
  }
}

// A change as far out as an outlying run of the history (within the fence of it), may be
// another such run (a throttled GPU, or one of the first runs after a step too recent for the
// change-point detector) rather than the code: too noisy to call. Elsewhere (a +10% step after
// a +30% run; a 10% step after a spurious outlier at +1.5%) it is judged as usual.
void unless_like_an_outlying_run(Comparison& c, const PredictionInterval& interval) {
  if (c.verdict != Verdict::regression && c.verdict != Verdict::improvement) return;
  if (interval.center == 0) return;
  const double distance = c.current - interval.center;
  for (double outlying : interval.outlying) {
    if (std::fabs(distance - outlying) > interval.fence) continue;
    c.verdict = Verdict::too_noisy;
    c.reason = fmt::format("too noisy: as far out as an outlying run of the history ({:+.1f}%)",
                           outlying / std::fabs(interval.center) * 100);
    return;
  }
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
                                              Direction direction, const DecisionOptions& options,
                                              Comparison c) {
  if (!options.run_history || current_samples.size() < options.min_samples) return std::nullopt;
  std::vector<std::span<const double>> runs;
  std::vector<std::size_t> run_index;  // of each of `runs` in the history
  for (std::size_t i = 0; i < baseline.history_samples.size(); ++i)
    if (baseline.history_samples[i].size() >= options.min_samples) {
      runs.emplace_back(baseline.history_samples[i]);
      run_index.push_back(i);
    }
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
  // interval (baseline.h: after the last change point, without outlying runs) is the interval
  // of the next run's level (with as many repetitions).
  std::vector<std::vector<double>> kept_runs;
  std::vector<double> levels;
  for (auto run : runs) {
    kept_runs.push_back(within_fence(run, scale));
    levels.push_back(mean_of(kept_runs.back()));
  }
  auto interval = baseline_interval(levels, 1.0 - options.alpha);
  // The repetitions of the baseline's runs (the last segment, without the outlying runs), for
  // the skewness and the rank test.
  std::vector<double> pooled;
  double third_moment = 0;  // of the repetitions about their run's level
  for (std::size_t r = interval.start; r < runs.size(); ++r) {
    if (interval.fence > 0 && std::fabs(levels[r] - interval.center) > interval.fence) continue;
    pooled.insert(pooled.end(), kept_runs[r].begin(), kept_runs[r].end());
    for (double v : kept_runs[r]) third_moment += std::pow(v - levels[r], 3);
  }
  if (!pooled.empty()) third_moment /= static_cast<double>(pooled.size());
  auto current = within_fence(current_samples, scale);
  c.current = mean_of(current);
  // The t interval is symmetric; the level of a few repetitions from two modes is not (the
  // mean of 5 values of which 30% sit 6% higher has a long slow tail). The skewness of the
  // mean of n repetitions is the third cumulant of one, over n^2, over the level's standard
  // deviation cubed: known from hundreds of repetitions, unlike the skewness of 20 levels.
  // The Cornish-Fisher correction moves each bound by (t^2 - 1) * skewness / 6 of the scale
  // (bounded: |skewness| <= 1, where the expansion still holds).
  const double scale_level = interval.sigma * std::sqrt(1.0 + 1.0 / std::max(1, interval.n));
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
  c.baseline_start = run_index[interval.start];
  c.change = relative(c.current, c.baseline);
  // The p-value under the same corrected model: the t value whose corrected quantile is the
  // distance observed.
  if (scale_level > 0 && interval.df >= 1) {
    const double observed = std::fabs(c.current - interval.center) / scale_level;
    const double a = (c.current >= interval.center ? skewness : -skewness) / 6;
    double t = observed;
    if (std::fabs(a) > 1e-9 && 1 + 4 * a * (a + observed) >= 0)
      t = (-1 + std::sqrt(1 + 4 * a * (a + observed))) / (2 * a);
    c.p_value = std::min(1.0, 2 * (1 - student_t_cdf(std::fabs(t), interval.df)));
  } else {
    c.p_value = prediction_p_value(interval, c.current);
  }
  const double half = c.current >= interval.center ? interval.upper - interval.center
                                                   : interval.center - interval.lower;
  c.detectable = c.baseline != 0 ? half / std::fabs(c.baseline) : 0;
  // The repetitions must have moved too, against every repetition of the baseline's runs (not
  // the latest run's only: 10 against 10 is a weak test when the samples fall into two modes,
  // 10 against 200 is not), at alpha as well: both tests must be significant. (Only a
  // confirmation: the repetitions of one run do not see run-to-run offsets, so alone this
  // test would raise false alarms; the interval of the levels bounds them.)
  auto test = mann_whitney_u(pooled, current);
  const bool moved =
      test.p_value < options.alpha &&
      (test.u < 0.5 * static_cast<double>(pooled.size() * current.size())) == (c.change > 0);
  const bool outside = c.current < interval.lower || c.current > interval.upper;
  classify(c, direction, options, outside && moved);
  unless_like_an_outlying_run(c, interval);
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
      auto interval = baseline_interval(baseline.history, 1.0 - options.alpha);
      c.interval = interval;
      c.baseline_start = interval.start;
      significant = test.p_value < options.confirm_alpha &&
                    (c.current < interval.lower || c.current > interval.upper);
      if (interval.center != 0)
        c.detectable =
            std::max(c.detectable, (interval.upper - interval.center) / std::fabs(interval.center));
    }
    classify(c, direction, options, significant);
    if (c.interval) unless_like_an_outlying_run(c, *c.interval);
    return c;
  }
  if (baseline.history.size() >= options.min_history) {
    c.method = "prediction-interval";
    auto interval = baseline_interval(baseline.history, 1.0 - options.alpha);
    c.baseline = interval.center;
    c.change = relative(c.current, c.baseline);
    c.interval = interval;
    c.baseline_start = interval.start;
    c.p_value = prediction_p_value(interval, c.current);
    c.detectable = c.baseline != 0 ? (interval.upper - interval.center) / std::fabs(c.baseline) : 0;
    classify(c, direction, options, c.current < interval.lower || c.current > interval.upper);
    unless_like_an_outlying_run(c, interval);
    return c;
  }
  // Not enough to decide either way: a new benchmark, or too few runs so far.
  if (!baseline.samples.empty())
    c.baseline = summary_of(baseline.samples);
  else if (!baseline.history.empty())
    c.baseline = median(baseline.history);
  else if (baseline.value)
    c.baseline = *baseline.value;
  else {
    c.reason = "no baseline: no earlier result of this benchmark";
    return c;
  }
  c.change = relative(c.current, c.baseline);
  c.verdict = Verdict::no_baseline;
  c.reason = fmt::format("no baseline: {} earlier result(s) without repetitions, {} needed",
                         baseline.history.size(), options.min_history);
  return c;
}

}  // namespace kiln::perf
