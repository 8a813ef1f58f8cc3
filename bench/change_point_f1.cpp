// The change-point detector (perf/change_points.h) against binary segmentation on public labelled
// data: the univariate series of TCPD, the Turing Change Point Detection benchmark (van den Burg
// and Williams 2020, github.com/alan-turing-institute/TCPD; datasets/*/NAME.json and
// annotations.json, several annotators per series), scored by its F1: a prediction within
// `margin` (5) points of an annotated change point is a true positive, each matched once; 0
// counts as a change point on both sides; precision is against the union of the annotators'
// points, recall the mean over annotators (docs/perf-gate.md, "Change points on labelled data").
//
// Binary segmentation: the textbook normal mean-shift version. The series is scaled by its noise
// (1.4826 × the MAD of the first differences / √2, robust to the steps themselves); a segment is
// split where the split reduces its sum of squares the most, when the reduction exceeds the BIC
// penalty 2 · ln(n), each side keeping at least `min_segment` points; both halves are searched
// again.
//
// Usage: change_point_f1 TCPD_DIR   (TCPD_DIR holds annotations.json and datasets/NAME.json)

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/perf/change_points.h"
#include "kiln/perf/stats.h"

namespace {

using Points = std::set<long>;

// Annotated points matched by `predicted` within `margin`, each prediction used once, nearest
// first.
std::size_t true_positives(const Points& truth, Points predicted, long margin) {
  std::size_t found = 0;
  for (long tau : truth) {
    auto best = predicted.end();
    for (auto it = predicted.begin(); it != predicted.end(); ++it)
      if (std::labs(*it - tau) <= margin &&
          (best == predicted.end() || std::labs(*it - tau) < std::labs(*best - tau)))
        best = it;
    if (best == predicted.end()) continue;
    ++found;
    predicted.erase(best);
  }
  return found;
}

double f1(const std::vector<Points>& annotators, Points predicted, long margin = 5) {
  predicted.insert(0);
  Points all = {0};
  for (const auto& a : annotators) all.insert(a.begin(), a.end());
  const double precision =
      static_cast<double>(true_positives(all, predicted, margin)) / predicted.size();
  double recall = 0;
  for (auto a : annotators) {
    a.insert(0);
    recall += static_cast<double>(true_positives(a, predicted, margin)) / a.size();
  }
  recall /= static_cast<double>(annotators.size());
  return precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0;
}

void binseg(const std::vector<double>& x, std::size_t begin, std::size_t end, double penalty,
            std::size_t min_segment, Points& found) {
  if (end - begin < 2 * min_segment) return;
  double total = 0;
  for (std::size_t i = begin; i < end; ++i) total += x[i];
  const double n = static_cast<double>(end - begin);
  double left = 0, best = 0;
  std::size_t at = 0;
  for (std::size_t k = begin + 1; k < end; ++k) {
    left += x[k - 1];
    const double m = static_cast<double>(k - begin);
    if (m < min_segment || n - m < min_segment) continue;
    // The reduction of the sum of squares by splitting at k.
    const double gain =
        left * left / m + (total - left) * (total - left) / (n - m) - total * total / n;
    if (gain > best) best = gain, at = k;
  }
  if (at == 0 || best <= penalty) return;
  found.insert(static_cast<long>(at));
  binseg(x, begin, at, penalty, min_segment, found);
  binseg(x, at, end, penalty, min_segment, found);
}

Points binary_segmentation(std::vector<double> x, std::size_t min_segment) {
  std::vector<double> differences;
  for (std::size_t i = 1; i < x.size(); ++i) differences.push_back(std::fabs(x[i] - x[i - 1]));
  double noise = 1.4826 * kiln::perf::median(differences) / std::sqrt(2.0);
  if (noise <= 0) noise = kiln::perf::standard_deviation(x);
  if (noise <= 0) return {};
  for (double& v : x) v /= noise;
  Points found;
  binseg(x, 0, x.size(), 2 * std::log(static_cast<double>(x.size())), min_segment, found);
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: change_point_f1 TCPD_DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::ifstream annotations_file(dir / "annotations.json");
  auto annotations = nlohmann::json::parse(annotations_file, nullptr, false);
  if (!annotations.is_object()) {
    std::fprintf(stderr, "change_point_f1: %s/annotations.json: not JSON\n", argv[1]);
    return 2;
  }
  std::printf(
      "| series | n | annotators | F1 kiln | F1 binary segmentation (min 4) | "
      "F1 binary segmentation (min 2) | F1 no change point |\n|---|---|---|---|---|---|---|\n");
  double sum_kiln = 0, sum_binseg4 = 0, sum_binseg2 = 0, sum_none = 0;
  int series = 0;
  std::vector<std::string> skipped;
  for (const auto& [name, by_annotator] : annotations.items()) {
    std::ifstream in(dir / "datasets" / (name + ".json"));
    auto data = nlohmann::json::parse(in, nullptr, false);
    if (!data.is_object() || data.value("n_dim", 0) != 1) {
      skipped.push_back(name + (data.is_object() ? " (multivariate)" : " (no data)"));
      continue;
    }
    std::vector<double> values;
    bool complete = true;
    for (const auto& v : data["series"][0]["raw"]) {
      if (!v.is_number())
        complete = false;
      else
        values.push_back(v.get<double>());
    }
    if (!complete) {
      skipped.push_back(name + " (missing values)");
      continue;
    }
    std::vector<Points> truth;
    for (const auto& [annotator, points] : by_annotator.items())
      truth.emplace_back(points.begin(), points.end());
    Points kiln_points;
    for (const auto& p : kiln::perf::find_change_points(values))
      kiln_points.insert(static_cast<long>(p.index));
    const double k = f1(truth, kiln_points), b4 = f1(truth, binary_segmentation(values, 4)),
                 b2 = f1(truth, binary_segmentation(values, 2)), none = f1(truth, {});
    std::printf("| %s | %zu | %zu | %.3f | %.3f | %.3f | %.3f |\n", name.c_str(), values.size(),
                truth.size(), k, b4, b2, none);
    sum_kiln += k, sum_binseg4 += b4, sum_binseg2 += b2, sum_none += none;
    ++series;
  }
  std::printf("| **mean of %d** | | | **%.3f** | **%.3f** | **%.3f** | %.3f |\n\n", series,
              sum_kiln / series, sum_binseg4 / series, sum_binseg2 / series, sum_none / series);
  for (const auto& name : skipped) std::printf("skipped: %s\n", name.c_str());
  return 0;
}
