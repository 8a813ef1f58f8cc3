#include "kiln/perf/bisect.h"

#include <cmath>

namespace kiln::perf {

double BisectCommit::level() const {
  double sum = 0;
  for (double v : levels) sum += v;
  return levels.empty() ? 0 : sum / static_cast<double>(levels.size());
}

namespace {
double relative(double from, double to) { return from != 0 ? (to - from) / std::fabs(from) : 0; }
}  // namespace

Result<BisectOutcome> bisect(std::vector<BisectCommit>& commits, const BisectOptions& options,
                             const MeasureCommit& measure) {
  if (commits.size() < 2)
    return fail(ErrorCode::invalid_input, "a bisection needs a good and a later bad commit");
  BisectOutcome outcome;
  auto run = [&](BisectCommit& commit) -> Status {
    ++outcome.runs;
    return measure(commit);
  };
  KILN_TRY_VOID(run(commits.front()));
  KILN_TRY_VOID(run(commits.back()));
  const double good = commits.front().level(), bad = commits.back().level();
  outcome.step = relative(good, bad);
  if (std::fabs(outcome.step) < options.threshold) return outcome;
  // Invariant: commits[lo] is good, commits[hi] is bad.
  std::size_t lo = 0, hi = commits.size() - 1;
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    auto& commit = commits[mid];
    do {
      KILN_TRY_VOID(run(commit));
      // Near the middle (within a quarter of the step): measure again.
    } while (std::fabs(commit.level() - (good + bad) / 2) < std::fabs(bad - good) / 4 &&
             static_cast<int>(commit.levels.size()) < options.repeat);
    const bool is_bad = std::fabs(commit.level() - bad) < std::fabs(commit.level() - good);
    (is_bad ? hi : lo) = mid;
  }
  outcome.found = true;
  outcome.last_good = lo;
  outcome.first_bad = hi;
  outcome.change = relative(commits[lo].level(), commits[hi].level());
  return outcome;
}

nlohmann::ordered_json bisect_json(const std::vector<BisectCommit>& commits,
                                   const BisectOutcome& outcome, const std::string& benchmark,
                                   const std::string& metric) {
  nlohmann::ordered_json measured = nlohmann::ordered_json::array();
  for (const auto& c : commits)
    if (!c.levels.empty())
      measured.push_back({{"commit", c.sha},
                          {"subject", c.subject},
                          {"level", c.level()},
                          {"levels", c.levels},
                          {"runs", c.runs}});
  const auto text = [&](std::size_t i, bool sha) -> nlohmann::ordered_json {
    if (!outcome.found || i >= commits.size()) return nullptr;
    return sha ? commits[i].sha : commits[i].subject;
  };
  return {
      {"benchmark", benchmark},
      {"metric", metric},
      {"found", outcome.found},
      {"first_bad", text(outcome.first_bad, true)},
      {"subject", text(outcome.first_bad, false)},
      {"last_good", text(outcome.last_good, true)},
      {"change_percent", outcome.found ? nlohmann::ordered_json(outcome.change * 100) : nullptr},
      {"step_percent", outcome.step * 100},
      {"commits", commits.empty() ? 0 : commits.size() - 1},
      {"job_runs", outcome.runs},
      {"measured", measured}};
}

}  // namespace kiln::perf
