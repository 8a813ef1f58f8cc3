// kiln bench: ingest benchmark result files into the store, compare two result sets, show a
// benchmark's history with its change points, and gate results against the history
// (docs/perf-gate.md).

#include <fstream>
#include <map>
#include <set>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/engine/plan/repository.h"
#include "kiln/perf/gate.h"
#include "kiln/perf/history.h"
#include "kiln/perf/parse.h"

namespace kiln::cli {
namespace {

struct BenchArgs {
  std::string directory = ".";
  std::string store;
  bool json = false;
  // ingest / gate
  std::vector<std::string> files;
  std::string repository, branch, commit, testbed;
  std::int64_t run = 0;
  // compare
  std::string base, current;
  bool history = false;
  // history
  std::string name, metric;
  int limit = 100;
  // decision
  double threshold = 5;
  double alpha = 0.01;
  std::vector<std::string> thresholds_for;
};

// Where results go and come from: the repository's name ("owner/repo", else "local/<dir>"),
// the current branch and commit, unless given.
struct Place {
  std::string repository, branch, default_branch, commit;
  bool in_repository = false;
};

Place place_of(const BenchArgs& args) {
  Place place;
  if (auto repo = engine::inspect_repository(args.directory)) {
    place.in_repository = true;
    place.repository = repo->name;
    place.commit = repo->head_sha;
    if (repo->head_ref.starts_with("refs/heads/")) place.branch = repo->head_ref.substr(11);
    place.default_branch = repo->default_branch;
  } else {
    place.repository =
        "local/" + std::filesystem::absolute(args.directory).lexically_normal().filename().string();
  }
  if (!args.repository.empty()) place.repository = args.repository;
  if (!args.branch.empty()) place.branch = args.branch;
  if (!args.commit.empty()) place.commit = args.commit;
  if (place.default_branch.empty())
    place.default_branch = place.branch.empty() ? "main" : place.branch;
  // Outside a git repository no branch is known: results go to the default branch, the one
  // `kiln bench gate` compares against, so an ingest and a gate of one directory agree.
  if (place.branch.empty() && !place.in_repository) place.branch = place.default_branch;
  return place;
}

// --testbed, else $KILN_TESTBED, else "local": results of different testbeds never meet.
std::string testbed_of(const BenchArgs& args) {
  if (!args.testbed.empty()) return args.testbed;
  if (const char* env = std::getenv("KILN_TESTBED"); env && *env) return env;
  return "local";
}

Result<std::unique_ptr<store::Store>> store_of(const BenchArgs& args) {
  std::optional<std::filesystem::path> path;
  if (!args.store.empty()) path = args.store;
  return open_store(path, args.directory);
}

Result<perf::GateOptions> gate_options(const BenchArgs& args) {
  perf::GateOptions options;
  if (!(args.threshold > 0 && args.threshold < 1000))
    return fail(ErrorCode::invalid_input, "--threshold: expected a percentage in (0, 1000), got {}",
                args.threshold);
  if (!(args.alpha > 0 && args.alpha < 0.5))
    return fail(ErrorCode::invalid_input, "--alpha: expected a number in (0, 0.5), got {}",
                args.alpha);
  options.decision.threshold = args.threshold / 100;
  options.decision.alpha = args.alpha;
  for (const auto& text : args.thresholds_for) {
    KILN_TRY(auto pair, split_assignment(text, "--threshold-for"));
    char* end = nullptr;
    double percent = std::strtod(pair.second.c_str(), &end);
    if (end == pair.second.c_str() || *end != '\0' || !(percent > 0 && percent < 1000))
      return fail(ErrorCode::invalid_input, "--threshold-for {}: expected NAME=PERCENT", text);
    options.thresholds[pair.first] = percent / 100;
  }
  return options;
}

void print_notes(const std::string& file, const perf::ResultFile& parsed) {
  for (const auto& note : parsed.notes) fmt::print(stderr, "kiln: {}: note: {}\n", file, note);
}

// --- ingest ---------------------------------------------------------------------------------

int ingest(const BenchArgs& args) {
  // Inside a kiln job, the engine ingests what $KILN_BENCHMARKS lists, with the job's run,
  // commit and testbed: hand the files to it rather than to a store of our own.
  const char* job_list = std::getenv("KILN_BENCHMARKS");
  bool to_job = job_list && *job_list && args.store.empty() && args.testbed.empty();
  std::vector<std::pair<std::string, perf::ResultFile>> parsed;
  for (const auto& file : args.files) {
    auto result = perf::parse_result_file(file);
    if (!result) return report_error(result.error());
    print_notes(file, *result);
    parsed.emplace_back(file, std::move(*result));
  }
  if (to_job) {
    std::ofstream list(job_list, std::ios::app);
    for (const auto& [file, result] : parsed)
      list << std::filesystem::absolute(file).string() << "\n";
    if (!list)
      return report_error({ErrorCode::io_error, fmt::format("cannot append to {}", job_list), {}});
    fmt::print("{} file(s) handed to this job's perf gate ($KILN_BENCHMARKS)\n", parsed.size());
    return 0;
  }
  auto place = place_of(args);
  if (!place.in_repository && args.branch.empty())
    fmt::print(stderr,
               "kiln: note: {} is not a git repository: results stored as branch '{}' (the "
               "baseline kiln bench gate uses; --branch to choose)\n",
               args.directory, place.branch);
  else if (place.branch.empty())
    fmt::print(stderr,
               "kiln: note: HEAD is detached: results stored without a branch, so no gate "
               "against '{}' sees them (--branch to choose)\n",
               place.default_branch);
  auto store = store_of(args);
  if (!store) return report_error(store.error());
  std::vector<store::BenchmarkResult> records;
  for (const auto& [file, result] : parsed) {
    auto units =
        perf::check_units(**store, place.repository, testbed_of(args), result.measurements, file);
    if (!units) return report_error(units.error());
    perf::ResultContext context{.repository = place.repository,
                                .branch = place.branch,
                                .testbed = testbed_of(args),
                                .commit_sha = place.commit,
                                .run_id = {},
                                .job_id = {},
                                .source = std::filesystem::absolute(file).string(),
                                .format = result.format,
                                .time = 0};
    for (const auto& m : result.measurements) records.push_back(perf::to_record(m, context));
  }
  auto ids = (*store)->add_benchmark_results(records);
  if (!ids) return report_error(ids.error());
  if (args.json) {
    nlohmann::ordered_json out = {{"ingested", ids->size()},
                                  {"repository", place.repository},
                                  {"branch", place.branch},
                                  {"commit", place.commit},
                                  {"testbed", testbed_of(args)}};
    fmt::print("{}\n", out.dump(2));
  } else {
    fmt::print("ingested {} result(s) from {} file(s) into {} @ {} ({}), testbed '{}'\n",
               ids->size(), parsed.size(), place.repository,
               place.branch.empty() ? "-" : place.branch, place.commit.substr(0, 8),
               testbed_of(args));
  }
  return 0;
}

// --- compare --------------------------------------------------------------------------------

// A result file; "run:N" (or a bare N that is not a file): the results stored for run N;
// "commit:SHA": the results stored for that commit (a prefix will do) in this repository.
// Several results of one benchmark and metric (re-runs): the newest counts. Results of
// several testbeds need --testbed: they are never mixed.
struct Side {
  std::vector<perf::Measurement> measurements;
  std::vector<store::BenchmarkResult> records;  // when stored: the newest of each, as above
};

Result<Side> load_side(const BenchArgs& args, const std::string& what) {
  bool is_commit = what.starts_with("commit:");
  std::string id_text = what.starts_with("run:") ? what.substr(4) : what;
  bool is_run =
      what.starts_with("run:") || (!std::filesystem::exists(what) && !id_text.empty() &&
                                   id_text.find_first_not_of("0123456789") == std::string::npos);
  if (!is_run && !is_commit) {
    KILN_TRY(auto parsed, perf::parse_result_file(what));
    print_notes(what, parsed);
    return Side{.measurements = std::move(parsed.measurements), .records = {}};
  }
  store::BenchmarkQuery query;
  query.testbed = args.testbed;
  if (is_commit) {
    query.commit = what.substr(7);
    query.repository = place_of(args).repository;
    if (query.commit.size() < 4 ||
        query.commit.find_first_not_of("0123456789abcdef") != std::string::npos)
      return fail(ErrorCode::invalid_input,
                  "'{}': expected commit:SHA with at least 4 lowercase hex digits", what);
  } else {
    char* end = nullptr;
    long long run = std::strtoll(id_text.c_str(), &end, 10);
    if (id_text.empty() || *end != '\0' || run <= 0)
      return fail(ErrorCode::invalid_input, "'{}' is neither a result file, run:N nor commit:SHA",
                  what);
    query.run_id = run;
  }
  KILN_TRY(auto store, store_of(args));
  KILN_TRY(auto records, store->list_benchmark_results(query));
  if (records.empty()) return fail(ErrorCode::not_found, "{} has no benchmark results", what);
  std::set<std::string> testbeds;
  for (const auto& record : records) testbeds.insert(record.testbed);
  if (testbeds.size() > 1)
    return fail(ErrorCode::invalid_input,
                "{} has results from {} testbeds ('{}', ...): choose one with --testbed", what,
                testbeds.size(), *testbeds.begin());
  // Oldest first: a later result of the same benchmark and metric replaces an earlier one.
  Side side;
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  for (const auto& record : records) {
    auto key = std::make_pair(record.benchmark, record.metric);
    if (auto it = index.find(key); it != index.end()) {
      side.measurements[it->second] = perf::from_record(record);
      side.records[it->second] = record;
    } else {
      index.emplace(key, side.measurements.size());
      side.measurements.push_back(perf::from_record(record));
      side.records.push_back(record);
    }
  }
  return side;
}

int print_report(const perf::GateReport& report, bool json) {
  if (json)
    fmt::print("{}\n", perf::to_json(report).dump(2));
  else
    fmt::print("{}", perf::format_table(report));
  return report.failed() ? 1 : 0;
}

int compare_command(const BenchArgs& args) {
  auto options = gate_options(args);
  if (!options) return report_error(options.error());
  auto base = load_side(args, args.base);
  if (!base) return report_error(base.error());
  auto current = load_side(args, args.current);
  if (!current) return report_error(current.error());
  if (!args.history) {
    auto report = perf::compare_sets(base->measurements, current->measurements, *options);
    if (!report) return report_error(report.error());
    return print_report(*report, args.json);
  }
  // --history: the stored runs of BASE's series, up to BASE (a stored run or commit), or
  // followed by BASE (a file), against CURRENT.
  auto store = store_of(args);
  if (!store) return report_error(store.error());
  auto place = place_of(args);
  perf::HistoryScope scope{.repository = place.repository,
                           .branch = args.branch.empty() ? place.default_branch : args.branch,
                           .testbed = testbed_of(args),
                           .exclude_run_id = {},
                           .up_to_id = {}};
  std::vector<perf::Measurement> appended;
  if (base->records.empty()) {
    appended = base->measurements;
  } else {
    const auto& newest =
        *std::max_element(base->records.begin(), base->records.end(),
                          [](const auto& a, const auto& b) { return a.id < b.id; });
    scope.repository = newest.repository;
    scope.branch = newest.branch;
    scope.testbed = newest.testbed;
    scope.up_to_id = newest.id;
  }
  auto report =
      perf::gate_against_history(**store, scope, current->measurements, *options, appended);
  if (!report) return report_error(report.error());
  return print_report(*report, args.json);
}

// --- history --------------------------------------------------------------------------------

int history_command(const BenchArgs& args) {
  auto store = store_of(args);
  if (!store) return report_error(store.error());
  auto place = place_of(args);
  store::BenchmarkQuery query;
  query.repository = place.repository;
  query.benchmark = args.name;
  query.metric = args.metric;
  query.branch = args.branch;
  query.testbed = args.testbed;
  auto records = (*store)->list_benchmark_results(query);
  if (!records) return report_error(records.error());
  if (records->empty())
    return report_error(
        {ErrorCode::not_found,
         fmt::format("no results for benchmark '{}' in {} (kiln bench ingest adds some)", args.name,
                     place.repository),
         {}});
  auto history = perf::benchmark_history(*records, args.limit);
  if (!history) return report_error(history.error());
  nlohmann::ordered_json out = {{"benchmark", args.name},
                                {"repository", place.repository},
                                {"series", nlohmann::ordered_json::array()}};
  for (const auto& series : *history) {
    out["series"].push_back(perf::to_json(series));
    if (args.json) continue;
    fmt::print("{} ({}) on {}, testbed '{}': {} point(s)\n", args.name, series.metric,
               series.branch.empty() ? "-" : series.branch, series.testbed, series.points.size());
    for (std::size_t i = 0; i < series.points.size(); ++i) {
      const auto& p = series.points[i];
      std::string marker;
      for (const auto& c : series.change_points)
        if (c.index == i)
          marker = fmt::format("  <- change point {:+.1f}% (p={:.3f})", c.change * 100, c.p_value);
      fmt::print("  {:<10}  {:>12}  {:>3} sample(s){}\n", p.commit.substr(0, 10),
                 perf::format_value(p.value, series.unit), p.samples.size(), marker);
    }
  }
  if (args.json) fmt::print("{}\n", out.dump(2));
  return 0;
}

// --- gate -----------------------------------------------------------------------------------

int gate_command(const BenchArgs& args) {
  auto options = gate_options(args);
  if (!options) return report_error(options.error());
  auto store = store_of(args);
  if (!store) return report_error(store.error());
  auto place = place_of(args);
  // The baseline is the default branch unless --branch names another.
  std::string baseline_branch = args.branch.empty() ? place.default_branch : args.branch;
  if (!args.files.empty()) {
    std::vector<perf::Measurement> current;
    for (const auto& file : args.files) {
      auto parsed = perf::parse_result_file(file);
      if (!parsed) return report_error(parsed.error());
      print_notes(file, *parsed);
      current.insert(current.end(), parsed->measurements.begin(), parsed->measurements.end());
    }
    perf::HistoryScope scope{.repository = place.repository,
                             .branch = baseline_branch,
                             .testbed = testbed_of(args),
                             .exclude_run_id = {},
                             .up_to_id = {}};
    auto report = perf::gate_against_history(**store, scope, current, *options);
    if (!report) return report_error(report.error());
    return print_report(*report, args.json);
  }
  std::int64_t run = args.run;
  if (run == 0) {
    store::RunQuery query;
    query.limit = 1;
    query.repository = "";
    auto runs = (*store)->list_runs(query);
    if (!runs) return report_error(runs.error());
    if (runs->empty())
      return report_error({ErrorCode::not_found, "no runs yet: give result files or --run", {}});
    run = runs->front().id;
  }
  store::BenchmarkQuery query;
  query.run_id = run;
  auto records = (*store)->list_benchmark_results(query);
  if (!records) return report_error(records.error());
  if (records->empty())
    return report_error(
        {ErrorCode::not_found, fmt::format("run {} has no benchmark results", run), {}});
  auto report = perf::gate_records(**store, *records, baseline_branch, *options);
  if (!report) return report_error(report.error());
  return print_report(*report, args.json);
}

void add_common(CLI::App* cmd, BenchArgs& args) {
  cmd->add_option("-C,--directory", args.directory, "the git repository (default: .)");
  cmd->add_option("--store", args.store, "database (default: <repo>/.kiln/kiln.db)");
  cmd->add_flag("--json", args.json, "JSON on stdout");
}

void add_decision(CLI::App* cmd, BenchArgs& args) {
  cmd->add_option("--threshold", args.threshold, "smallest change flagged, in percent (default 5)");
  cmd->add_option("--threshold-for", args.thresholds_for, "NAME=PERCENT: per-benchmark threshold")
      ->take_all();
  cmd->add_option("--alpha", args.alpha, "significance level (default 0.01)");
}

}  // namespace

// bench_bisect.cpp
void add_bench_bisect_command(CLI::App& bench, int& exit_code);

void add_bench_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<BenchArgs>();
  auto* bench =
      app.add_subcommand("bench", "benchmark results: ingest, compare, history, gate, bisect");
  bench->require_subcommand(1);

  auto* ingest_cmd = bench->add_subcommand("ingest", "store benchmark result files");
  ingest_cmd->add_option("FILE", args->files, "result files (format detected)")->required();
  add_common(ingest_cmd, *args);
  ingest_cmd->add_option("--branch", args->branch, "branch (default: the current one)");
  ingest_cmd->add_option("--commit", args->commit, "commit (default: HEAD)");
  ingest_cmd->add_option("--testbed", args->testbed,
                         "testbed (default: $KILN_TESTBED, else 'local')");
  ingest_cmd->add_option("--repository", args->repository, "repository name (default: from git)");
  ingest_cmd->callback([args, &exit_code] { exit_code = ingest(*args); });

  auto* compare_cmd =
      bench->add_subcommand("compare", "compare two result sets: files, run:N or commit:SHA");
  compare_cmd->add_option("BASE", args->base, "baseline: a result file, run:N or commit:SHA")
      ->required();
  compare_cmd->add_option("CURRENT", args->current, "current: a result file, run:N or commit:SHA")
      ->required();
  compare_cmd->add_option("--testbed", args->testbed,
                          "for run:N and commit:SHA: only this testbed");
  compare_cmd->add_option("--repository", args->repository, "repository name (default: from git)");
  compare_cmd->add_flag("--history", args->history,
                        "judge CURRENT against the stored runs up to BASE (BASE a file: the "
                        "stored runs of the default branch and --testbed, then BASE)");
  compare_cmd->add_option("--branch", args->branch,
                          "with --history and a BASE file: the baseline branch (default: the "
                          "default branch)");
  add_common(compare_cmd, *args);
  add_decision(compare_cmd, *args);
  compare_cmd->callback([args, &exit_code] { exit_code = compare_command(*args); });

  auto* history_cmd =
      bench->add_subcommand("history", "a benchmark's results over time, with change points");
  history_cmd->add_option("NAME", args->name, "the benchmark")->required();
  add_common(history_cmd, *args);
  history_cmd->add_option("--metric", args->metric, "only this metric");
  history_cmd->add_option("--branch", args->branch, "only this branch");
  history_cmd->add_option("--testbed", args->testbed, "only this testbed");
  history_cmd->add_option("--repository", args->repository, "repository name (default: from git)");
  history_cmd->add_option("-n,--limit", args->limit,
                          "the last N points per series (default 100, 0: all)");
  history_cmd->callback([args, &exit_code] { exit_code = history_command(*args); });

  auto* gate_cmd =
      bench->add_subcommand("gate", "judge results against the history; exit 1 on a regression");
  gate_cmd->add_option("FILE", args->files, "result files (default: the results of --run)");
  gate_cmd->add_option("--run", args->run,
                       "the run whose stored results are judged (default: the latest)");
  add_common(gate_cmd, *args);
  add_decision(gate_cmd, *args);
  gate_cmd->add_option("--branch", args->branch, "baseline branch (default: the default branch)");
  gate_cmd->add_option("--testbed", args->testbed,
                       "testbed of FILEs (default: $KILN_TESTBED, else 'local')");
  gate_cmd->add_option("--repository", args->repository, "repository name (default: from git)");
  gate_cmd->callback([args, &exit_code] { exit_code = gate_command(*args); });

  add_bench_bisect_command(*bench, exit_code);
}

}  // namespace kiln::cli
