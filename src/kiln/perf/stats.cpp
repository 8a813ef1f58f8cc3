#include "kiln/perf/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "kiln/perf/measurement.h"

namespace kiln::perf {
namespace {

constexpr std::size_t k_min_for_outliers = 10;

// The continued fraction of the regularized incomplete beta function I_x(a, b), evaluated
// with the modified Lentz method; converges quickly for x < (a + 1) / (a + b + 2).
double beta_fraction(double a, double b, double x) {
  constexpr double k_tiny = 1e-300;
  constexpr double k_epsilon = 1e-15;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < k_tiny) d = k_tiny;
  d = 1.0 / d;
  double result = d;
  for (int m = 1; m <= 500; ++m) {
    // Even step: d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m)).
    double numerator = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
    d = 1.0 + numerator * d;
    c = 1.0 + numerator / c;
    if (std::fabs(d) < k_tiny) d = k_tiny;
    if (std::fabs(c) < k_tiny) c = k_tiny;
    d = 1.0 / d;
    result *= d * c;
    // Odd step: d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)).
    numerator = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
    d = 1.0 + numerator * d;
    c = 1.0 + numerator / c;
    if (std::fabs(d) < k_tiny) d = k_tiny;
    if (std::fabs(c) < k_tiny) c = k_tiny;
    d = 1.0 / d;
    double delta = d * c;
    result *= delta;
    if (std::fabs(delta - 1.0) < k_epsilon) break;
  }
  return result;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  double front = std::exp(log_front);
  // Use the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where the fraction converges faster.
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_fraction(a, b, x) / a;
  return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
}

// The number of arrangements of m values of `a` and n of `b` (no ties) with each U, for
// U = 0..m*n, by the recurrence N(m, n, u) = N(m-1, n, u-n) + N(m, n-1, u): the largest value
// belongs either to `a` (beating all n values of b) or to `b`.
std::vector<double> u_counts(int m, int n) {
  // table[i][j] is the distribution for i values of a and j of b; rolled over i.
  std::vector<std::vector<double>> previous(static_cast<std::size_t>(n) + 1);
  for (int j = 0; j <= n; ++j) previous[static_cast<std::size_t>(j)] = {1.0};
  for (int i = 1; i <= m; ++i) {
    std::vector<std::vector<double>> current(static_cast<std::size_t>(n) + 1);
    current[0] = {1.0};
    for (int j = 1; j <= n; ++j) {
      std::vector<double> counts(static_cast<std::size_t>(i * j) + 1, 0.0);
      const auto& with_a_largest = previous[static_cast<std::size_t>(j)];  // (i-1, j), shifted by j
      for (std::size_t u = 0; u < with_a_largest.size(); ++u)
        counts[u + static_cast<std::size_t>(j)] += with_a_largest[u];
      const auto& with_b_largest = current[static_cast<std::size_t>(j - 1)];  // (i, j-1)
      for (std::size_t u = 0; u < with_b_largest.size(); ++u) counts[u] += with_b_largest[u];
      current[static_cast<std::size_t>(j)] = std::move(counts);
    }
    previous = std::move(current);
  }
  return previous[static_cast<std::size_t>(n)];
}

}  // namespace

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double normal_quantile(double p) {
  // Bisection on the cdf: exact to double precision; the few values asked for are remembered.
  thread_local std::map<double, double> cache;
  if (auto it = cache.find(p); it != cache.end()) return it->second;
  double low = -40, high = 40;
  for (int i = 0; i < 200; ++i) {
    double mid = (low + high) / 2;
    (normal_cdf(mid) < p ? low : high) = mid;
  }
  if (cache.size() > 4096) cache.clear();
  return cache[p] = (low + high) / 2;
}

double student_t_cdf(double t, double df) {
  double x = df / (df + t * t);
  double tail = 0.5 * incomplete_beta(df / 2.0, 0.5, x);  // P(T > |t|)
  return t >= 0 ? 1.0 - tail : tail;
}

double student_t_quantile(double p, double df) {
  // The gate asks for the same few quantiles over and over (one alpha, history lengths up to
  // a few dozen): remember them.
  thread_local std::map<std::pair<double, double>, double> cache;
  if (auto it = cache.find({p, df}); it != cache.end()) return it->second;
  double low = -1e6, high = 1e6;
  for (int i = 0; i < 300; ++i) {
    double mid = (low + high) / 2;
    (student_t_cdf(mid, df) < p ? low : high) = mid;
    if (high - low < 1e-12 * std::max(1.0, std::fabs(mid))) break;
  }
  if (cache.size() > 4096) cache.clear();
  return cache[{p, df}] = (low + high) / 2;
}

double median(std::span<const double> values) { return median_of({values.begin(), values.end()}); }

double summary_of(const std::vector<double>& samples) {
  if (samples.empty()) return 0;
  auto kept = without_far_outliers(samples);
  return std::accumulate(kept.begin(), kept.end(), 0.0) / static_cast<double>(kept.size());
}

double standard_deviation(std::span<const double> values) {
  if (values.size() < 2) return 0;
  double mean =
      std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  double sum = 0;
  for (double v : values) sum += (v - mean) * (v - mean);
  return std::sqrt(sum / static_cast<double>(values.size() - 1));
}

double robust_sigma(std::span<const double> values) {
  if (values.size() < 2) return 0;
  double center = median(values);
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(std::fabs(v - center));
  double mad = 1.4826 * median_of(std::move(deviations));
  // More than half the values equal: the MAD is 0 though the data vary.
  return mad > 0 ? mad : standard_deviation(values);
}

RankTest mann_whitney_u(std::span<const double> a, std::span<const double> b) {
  RankTest test;
  const auto m = a.size(), n = b.size();
  if (m == 0 || n == 0) return test;
  // Ranks of the pooled values, ties sharing the mean of their ranks.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(m + n);
  for (double v : a) pooled.emplace_back(v, 0);
  for (double v : b) pooled.emplace_back(v, 1);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  double rank_sum_a = 0;
  double tie_term = 0;  // sum of t^3 - t over groups of ties
  bool ties = false;
  for (std::size_t i = 0; i < pooled.size();) {
    std::size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    double t = static_cast<double>(j - i);
    double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    for (std::size_t k = i; k < j; ++k)
      if (pooled[k].second == 0) rank_sum_a += rank;
    if (j - i > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }
  const double md = static_cast<double>(m), nd = static_cast<double>(n);
  test.u = rank_sum_a - md * (md + 1) / 2.0;
  const double mean_u = md * nd / 2.0;
  if (!ties && m <= 20 && n <= 20) {
    // Exact: P(U <= min(u, mn - u)) doubled, from the counts of every arrangement.
    auto counts = u_counts(static_cast<int>(m), static_cast<int>(n));
    double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    double lower_u = std::min(test.u, md * nd - test.u);
    double tail = 0;
    for (std::size_t u = 0; u < counts.size() && static_cast<double>(u) <= lower_u + 1e-9; ++u)
      tail += counts[u];
    test.p_value = std::min(1.0, 2.0 * tail / total);
    test.exact = true;
    return test;
  }
  const double total = md + nd;
  double variance = md * nd / 12.0 * ((total + 1) - tie_term / (total * (total - 1)));
  if (variance <= 0) {
    test.p_value = 1;  // every value equal
    return test;
  }
  double distance = std::max(0.0, std::fabs(test.u - mean_u) - 0.5);
  test.p_value = std::min(1.0, 2.0 * (1.0 - normal_cdf(distance / std::sqrt(variance))));
  return test;
}

std::vector<double> without_far_outliers(std::span<const double> values, double k) {
  if (values.size() < k_min_for_outliers) return {values.begin(), values.end()};
  double center = median(values);
  double sigma = robust_sigma(values);
  std::vector<double> kept;
  kept.reserve(values.size());
  for (double v : values)
    if (sigma == 0 || std::fabs(v - center) <= k * sigma) kept.push_back(v);
  return kept;
}

double hodges_lehmann_shift(std::span<const double> a, std::span<const double> b) {
  if (a.empty() || b.empty()) return 0;
  if (a.size() * b.size() > 1'000'000) return median(b) - median(a);
  std::vector<double> differences;
  differences.reserve(a.size() * b.size());
  for (double x : a)
    for (double y : b) differences.push_back(y - x);
  return median_of(std::move(differences));
}

double prediction_p_value(const PredictionInterval& interval, double value) {
  if (interval.df < 1 || interval.n < 1) return 1;
  double scale = interval.sigma * std::sqrt(1.0 + 1.0 / interval.n);
  if (scale <= 0) return value == interval.center ? 1.0 : 0.0;
  double t = std::fabs(value - interval.center) / scale;
  return std::min(1.0, 2.0 * (1.0 - student_t_cdf(t, interval.df)));
}

}  // namespace kiln::perf
