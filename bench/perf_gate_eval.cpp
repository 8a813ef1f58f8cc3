// Evaluation of the perf gate's decision rule on generated benchmark series (docs/perf-gate.md).
//
// For every noise model, noise level (CV), number of repetitions and step size, `trials`
// times: a history of 20 runs at level 100, then one current run at 100·(1 + step). Each
// rule judges the current run against the history; a step of 0 measures false alarms, the
// others the detection rate. Rules:
//   kiln     perf::compare with the defaults (threshold 5%, alpha 0.01): the engine's decision
//            (with repetitions: the run-history random-effects rule);
//   before   perf::compare with run_history = false: the rank test against the previous run,
//            confirmed by the prediction interval of the run summaries (the rule before it);
//   naive    "previous value, 5% threshold": the current mean against the previous run's mean;
//   rank     the rank test alone at p < 0.05 (what compare.py-style tools report), slower side.
// Then the histories of issue 18 (--scenarios): one outlying run in the history, a second step
// ten runs after an accepted one, a slow drift; and the change-point detector on series of 40
// runs with a step at run 20.
//
// Noise models (cv is the overall coefficient of variation of one sample):
//   gaussian    sample = level · (1 + N(0, cv))
//   outliers    gaussian, and 5% of the samples are 1.5–3× slower (a preempted run)
//   bimodal     two clock states: 30% of the samples 3·cv higher, each mode N(0, cv/2)
//   run-offset  every run has its own offset N(0, cv) (clocks, temperature, placement);
//               repetitions within a run vary only N(0, cv/4)
//
// Fixed seed: the output is the same on every machine with the same libstdc++.
// Usage: perf_gate_eval [--trials N] [--seed S] [--noise NAME] [--change-points off]
//                       [--cells off] [--scenarios off]

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/perf/change_points.h"
#include "kiln/perf/compare.h"

namespace {

using kiln::perf::Direction;
using kiln::perf::Verdict;

enum class Noise { gaussian, outliers, bimodal, run_offset };
constexpr Noise k_noises[] = {Noise::gaussian, Noise::outliers, Noise::bimodal, Noise::run_offset};
const char* name(Noise noise) {
  switch (noise) {
    case Noise::gaussian:
      return "gaussian";
    case Noise::outliers:
      return "outliers";
    case Noise::bimodal:
      return "bimodal";
    case Noise::run_offset:
      return "run-offset";
  }
  return "";
}

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : random_(seed) {}

  // A uniformly random index below `n`.
  std::size_t index(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(random_);
  }

  // One run's repetitions at `level`.
  std::vector<double> run(double level, Noise noise, double cv, int reps) {
    std::vector<double> samples;
    double run_level = level;
    if (noise == Noise::run_offset) run_level *= 1 + normal_(random_) * cv;
    for (int i = 0; i < reps; ++i) {
      double z = normal_(random_);
      double x = 0;
      switch (noise) {
        case Noise::gaussian:
          x = level * (1 + z * cv);
          break;
        case Noise::outliers:
          x = level * (1 + z * cv);
          if (uniform_(random_) < 0.05) x *= 1.5 + 1.5 * uniform_(random_);
          break;
        case Noise::bimodal:
          x = level * (1 + z * cv / 2 + (uniform_(random_) < 0.3 ? 3 * cv : 0));
          break;
        case Noise::run_offset:
          x = run_level * (1 + z * cv / 4);
          break;
      }
      samples.push_back(x);
    }
    return samples;
  }

 private:
  std::mt19937_64 random_;
  std::normal_distribution<double> normal_{0, 1};
  std::uniform_real_distribution<double> uniform_{0, 1};
};

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

struct Rates {
  int trials = 0;
  int kiln = 0, kiln_noisy = 0, before = 0, before_noisy = 0, naive = 0, rank = 0;
};

Rates judge(Generator& gen, Noise noise, double cv, int reps, double step, int trials) {
  constexpr int k_history = 20;
  Rates rates;
  kiln::perf::DecisionOptions options;  // the defaults: 5%, alpha 0.01
  kiln::perf::DecisionOptions before = options;
  before.run_history = false;
  for (int t = 0; t < trials; ++t) {
    kiln::perf::Baseline baseline;
    std::vector<double> previous;
    for (int i = 0; i < k_history; ++i) {
      previous = gen.run(100, noise, cv, reps);
      baseline.history.push_back(kiln::perf::summary_of(previous));
      baseline.history_samples.push_back(previous);
    }
    baseline.samples = previous;
    auto current = gen.run(100 * (1 + step), noise, cv, reps);
    auto c = kiln::perf::compare(baseline, current, 0, Direction::smaller_is_better, options);
    ++rates.trials;
    rates.kiln += c.verdict == Verdict::regression;
    rates.kiln_noisy += c.verdict == Verdict::too_noisy;
    auto b = kiln::perf::compare(baseline, current, 0, Direction::smaller_is_better, before);
    rates.before += b.verdict == Verdict::regression;
    rates.before_noisy += b.verdict == Verdict::too_noisy;
    rates.naive += (mean(current) - mean(previous)) / mean(previous) > 0.05;
    if (reps >= 2) {
      auto test = kiln::perf::mann_whitney_u(previous, current);
      rates.rank +=
          test.p_value < 0.05 && kiln::perf::median(current) > kiln::perf::median(previous);
    }
  }
  return rates;
}

std::string percent(int count, int total) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", 100.0 * count / total);
  return buffer;
}

// A history of issue 18's kinds: the level of each past run, and of the current one before its
// step.
struct Scenario {
  const char* name;
  std::vector<double> (*history)(Generator&);  // run levels, oldest first
  double current;                              // the current level without a step
};

std::vector<double> plain(Generator&) { return std::vector<double>(20, 100.0); }
// One run of the twenty at +30% (a throttled GPU), at a random place.
std::vector<double> outlier_run(Generator& gen) {
  auto levels = plain(gen);
  levels[gen.index(levels.size())] = 130;
  return levels;
}
// Twenty runs at 100, then ten at 110: a first step the history has accepted.
std::vector<double> after_a_step(Generator&) {
  std::vector<double> levels(20, 100.0);
  levels.resize(30, 110.0);
  return levels;
}
// Thirty runs drifting up 0.1% a run (3% in all); the current run continues the drift.
std::vector<double> drift(Generator&) {
  std::vector<double> levels;
  for (int i = 0; i < 30; ++i) levels.push_back(100 * (1 + 0.001 * i));
  return levels;
}
const Scenario k_scenarios[] = {{"no change in 20 runs", plain, 100},
                                {"one run +30% in 20", outlier_run, 100},
                                {"second step, 10 runs after a +10% one", after_a_step, 110},
                                {"slow drift +0.1%/run over 30", drift, 103}};

// Share of `trials` current runs at `current` · (1 + step) judged a regression (and too noisy).
struct Judged {
  int regressions = 0, noisy = 0;
};
Judged judge_scenario(Generator& gen, const Scenario& scenario, Noise noise, double cv, int reps,
                      double step, double threshold, int trials) {
  kiln::perf::DecisionOptions options;
  options.threshold = threshold;
  Judged judged;
  for (int t = 0; t < trials; ++t) {
    kiln::perf::Baseline baseline;
    for (double level : scenario.history(gen)) {
      auto samples = gen.run(level, noise, cv, reps);
      baseline.history.push_back(kiln::perf::summary_of(samples));
      baseline.history_samples.push_back(samples);
      baseline.samples = samples;
    }
    auto current = gen.run(scenario.current * (1 + step), noise, cv, reps);
    auto c = kiln::perf::compare(baseline, current, 0, Direction::smaller_is_better, options);
    judged.regressions += c.verdict == Verdict::regression;
    judged.noisy += c.verdict == Verdict::too_noisy;
  }
  return judged;
}

void scenarios(Generator& gen, int trials, const std::string& only) {
  std::printf(
      "## Issue 18's histories: one run judged after each (%d trials per cell, 10 repetitions)\n\n"
      "False alarm: a regression with no step; detection: a regression at the first run after a\n"
      "step (threshold 5%%, and 3%% for 5%% steps: a verdict is the change it shows, so a true "
      "5%%\n"
      "step measures below 5%% about half the time).\n\n",
      trials);
  std::printf(
      "| history | noise | CV | false alarm | too noisy (no step) | detect 10%% | detect 5%% | "
      "detect 5%%, threshold 3%% | false alarm, threshold 3%% "
      "|\n|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& scenario : k_scenarios) {
    for (Noise noise : k_noises) {
      if (!only.empty() && only != name(noise)) continue;
      for (double cv : {0.01, 0.02, 0.05}) {
        auto none = judge_scenario(gen, scenario, noise, cv, 10, 0, 0.05, trials);
        auto ten = judge_scenario(gen, scenario, noise, cv, 10, 0.10, 0.05, trials);
        auto five = judge_scenario(gen, scenario, noise, cv, 10, 0.05, 0.05, trials);
        auto five_low = judge_scenario(gen, scenario, noise, cv, 10, 0.05, 0.03, trials);
        auto none_low = judge_scenario(gen, scenario, noise, cv, 10, 0, 0.03, trials);
        std::printf("| %s | %s | %g%% | %s | %s | %s | %s | %s | %s |\n", scenario.name,
                    name(noise), cv * 100, percent(none.regressions, trials).c_str(),
                    percent(none.noisy, trials).c_str(), percent(ten.regressions, trials).c_str(),
                    percent(five.regressions, trials).c_str(),
                    percent(five_low.regressions, trials).c_str(),
                    percent(none_low.regressions, trials).c_str());
        std::fflush(stdout);
      }
    }
  }
  std::printf("\n");
}

// Every noise model, CV, repetition count and step: the per-cell table and the totals.
void cell_table(Generator& gen, int trials, std::uint64_t seed, const std::string& only,
                const double (&cvs)[4], const int (&reps_list)[4], const double (&steps)[4]) {
  std::printf("## Decision: one run against a history of 20 (%d trials per cell, seed %llu)\n\n",
              trials, static_cast<unsigned long long>(seed));
  std::printf(
      "False alarm = flagged as a regression with no change; detection = flagged after a step of\n"
      "that size. kiln: the engine's rule (run history), threshold 5%%, alpha 0.01 (too-noisy\n"
      "is counted separately, it is never a pass); before: the rule it replaced (rank test\n"
      "against the previous run + interval of the summaries); naive: previous value, 5%%\n"
      "threshold; rank: rank test alone, p < 0.05.\n\n");
  std::printf(
      "| noise | CV | reps | false alarm kiln | before | naive | rank | too-noisy kiln (no "
      "change) | before |");
  for (double step : steps)
    std::printf(
        step == 0.05 ? " detect %g%% kiln | before | naive |" : " detect %g%% kiln | naive |",
        step * 100);
  std::printf("\n|---|---|---|---|---|---|---|---|---|");
  for (double step : steps) std::printf(step == 0.05 ? "---|---|---|" : "---|---|");
  std::printf("\n");
  // Totals for the targets, per noise model.
  struct Totals {
    int fa = 0, fa_before = 0, fa_naive = 0, fa_total = 0;
    double fa_worst = 0;  // the largest false-alarm rate of a cell with repetitions (>= 5)
    int det5 = 0, det5_before = 0, det5_naive = 0, det5_total = 0;
  };
  std::vector<Totals> totals(std::size(k_noises));
  for (std::size_t n = 0; n < std::size(k_noises); ++n) {
    Noise noise = k_noises[n];
    if (!only.empty() && only != name(noise)) continue;
    for (double cv : cvs) {
      for (int reps : reps_list) {
        auto none = judge(gen, noise, cv, reps, 0, trials);
        totals[n].fa += none.kiln;
        totals[n].fa_before += none.before;
        totals[n].fa_naive += none.naive;
        totals[n].fa_total += none.trials;
        if (reps >= 5)
          totals[n].fa_worst = std::max(totals[n].fa_worst, 1.0 * none.kiln / none.trials);
        std::printf("| %s | %g%% | %d | %s | %s | %s | %s | %s | %s |", name(noise), cv * 100, reps,
                    percent(none.kiln, none.trials).c_str(),
                    percent(none.before, none.trials).c_str(),
                    percent(none.naive, none.trials).c_str(),
                    reps >= 2 ? percent(none.rank, none.trials).c_str() : "-",
                    percent(none.kiln_noisy, none.trials).c_str(),
                    percent(none.before_noisy, none.trials).c_str());
        for (double step : steps) {
          auto r = judge(gen, noise, cv, reps, step, trials);
          if (step == 0.05)
            std::printf(" %s | %s | %s |", percent(r.kiln, r.trials).c_str(),
                        percent(r.before, r.trials).c_str(), percent(r.naive, r.trials).c_str());
          else
            std::printf(" %s | %s |", percent(r.kiln, r.trials).c_str(),
                        percent(r.naive, r.trials).c_str());
          if (step == 0.05 && cv <= 0.02 && reps >= 10) {
            totals[n].det5 += r.kiln;
            totals[n].det5_before += r.before;
            totals[n].det5_naive += r.naive;
            totals[n].det5_total += r.trials;
          }
        }
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }
  std::printf(
      "\n| noise | false alarms, every no-change cell: kiln | before | naive | worst cell with "
      ">= 5 reps: kiln | detection of 5%% steps, CV <= 2%%, >= 10 repetitions: kiln | before | "
      "naive |\n|---|---|---|---|---|---|---|---|\n");
  Totals all;
  for (std::size_t n = 0; n < std::size(k_noises); ++n) {
    const auto& t = totals[n];
    if (t.fa_total == 0) continue;
    std::printf("| %s | %s | %s | %s | %.1f%% | %s | %s | %s |\n", name(k_noises[n]),
                percent(t.fa, t.fa_total).c_str(), percent(t.fa_before, t.fa_total).c_str(),
                percent(t.fa_naive, t.fa_total).c_str(), 100 * t.fa_worst,
                percent(t.det5, t.det5_total).c_str(), percent(t.det5_before, t.det5_total).c_str(),
                percent(t.det5_naive, t.det5_total).c_str());
    all.fa += t.fa;
    all.fa_before += t.fa_before;
    all.fa_naive += t.fa_naive;
    all.fa_total += t.fa_total;
    all.fa_worst = std::max(all.fa_worst, t.fa_worst);
    all.det5 += t.det5;
    all.det5_before += t.det5_before;
    all.det5_naive += t.det5_naive;
    all.det5_total += t.det5_total;
  }
  std::printf("| all | %s | %s | %s | %.1f%% | %s | %s | %s |\n\n",
              percent(all.fa, all.fa_total).c_str(), percent(all.fa_before, all.fa_total).c_str(),
              percent(all.fa_naive, all.fa_total).c_str(), 100 * all.fa_worst,
              percent(all.det5, all.det5_total).c_str(),
              percent(all.det5_before, all.det5_total).c_str(),
              percent(all.det5_naive, all.det5_total).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 1000;
  std::uint64_t seed = 20261130;
  bool cells = true;           // --cells off: not the per-cell table
  bool with_scenarios = true;  // --scenarios off: not issue 18's histories
  std::string only;            // --noise NAME: one noise model only
  bool change_points = true;   // --change-points off: the decision tables only
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string_view flag = argv[i];
    if (flag == "--trials")
      trials = std::atoi(argv[i + 1]);
    else if (flag == "--seed")
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--noise")
      only = argv[i + 1];
    else if (flag == "--change-points")
      change_points = std::string_view(argv[i + 1]) != "off";
    else if (flag == "--cells")
      cells = std::string_view(argv[i + 1]) != "off";
    else if (flag == "--scenarios")
      with_scenarios = std::string_view(argv[i + 1]) != "off";
    else {
      std::fprintf(stderr, "perf_gate_eval: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  Generator gen(seed);
  if (with_scenarios) scenarios(gen, std::max(1, trials / 2), only);
  const double cvs[] = {0.01, 0.02, 0.05, 0.10};
  const int reps_list[] = {1, 5, 10, 30};
  const double steps[] = {0.02, 0.05, 0.10, 0.20};

  if (cells) cell_table(gen, trials, seed, only, cvs, reps_list, steps);
  if (!change_points) return 0;

  // Change points: 40 runs of 10 repetitions (their summaries), a step at run 20.
  const int cp_trials = std::max(1, trials / 5);
  std::printf(
      "## Change points: 40 runs (summaries of 10 repetitions), step at run 20 (%d trials per "
      "cell)\n\n",
      cp_trials);
  std::printf(
      "Found = a change point within 2 runs of the step; false = any change point in a series\n"
      "without a step (or one more than 2 runs away from the step).\n\n");
  std::printf("| noise | CV | series with a false change point (no step) |");
  for (double step : steps) std::printf(" found %g%% |", step * 100);
  std::printf("\n|---|---|---|");
  for (std::size_t i = 0; i < std::size(steps); ++i) std::printf("---|");
  std::printf("\n");
  for (Noise noise : k_noises) {
    for (double cv : cvs) {
      auto series = [&](double step) {
        std::vector<double> values;
        for (int i = 0; i < 40; ++i)
          values.push_back(
              kiln::perf::summary_of(gen.run(i < 20 ? 100 : 100 * (1 + step), noise, cv, 10)));
        return values;
      };
      int false_series = 0;
      for (int t = 0; t < cp_trials; ++t)
        false_series += !kiln::perf::find_change_points(series(0)).empty();
      std::printf("| %s | %g%% | %s |", name(noise), cv * 100,
                  percent(false_series, cp_trials).c_str());
      for (double step : steps) {
        int found = 0;
        for (int t = 0; t < cp_trials; ++t) {
          for (const auto& point : kiln::perf::find_change_points(series(step))) {
            if (point.index >= 18 && point.index <= 22) {
              ++found;
              break;
            }
          }
        }
        std::printf(" %s |", percent(found, cp_trials).c_str());
      }
      std::printf("\n");
    }
  }
  return 0;
}
