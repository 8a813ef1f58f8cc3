// kiln bench bisect GOOD BAD --job JOB [--benchmark NAME]: the first commit between a good and
// a bad run at which a benchmark got slower. Each commit it looks at is checked out in a
// worktree of its own and its job run with `kiln run --job` on this host, pinned to the GPU
// model, driver and GPUs of the bad commit's stored run of the job, the benchmark's level read from
// the job's perf gate; a commit is bad when its level is nearer the bad level than the good one,
// and it is measured again (up to --repeat times) while it sits near the middle. docs/perf-gate.md.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/core/subprocess.h"
#include "kiln/perf/bisect.h"

namespace kiln::cli {
namespace {

struct BisectArgs {
  std::string directory = ".";
  std::string good, bad, job, benchmark, metric, store, simulate_gpus;
  std::vector<std::string> pin;  // kiln run's --pin-gpu-* arguments: the bad run's GPUs
  int repeat = 3;
  double threshold = 5;
  bool json = false;
};

using Commit = perf::BisectCommit;

Result<std::string> git(const BisectArgs& args, const std::vector<std::string>& command) {
  std::vector<std::string> argv = {"git", "-C", args.directory};
  argv.insert(argv.end(), command.begin(), command.end());
  KILN_TRY(auto output, core::run_command(argv));
  if (!output.ok())
    return fail(ErrorCode::invalid_input, "git {}: {}", command.front(), output.err);
  while (!output.out.empty() && (output.out.back() == '\n' || output.out.back() == '\r'))
    output.out.pop_back();
  return output.out;
}

// A string member of kiln run's JSON, "" when absent.
std::string text(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// Runs the job at `commit` once and adds the benchmark's level to it.
Status measure(const BisectArgs& args, const std::filesystem::path& scratch, Commit& commit,
               std::string& benchmark, std::string& metric) {
  // On a branch of its own: a job checks out its run's branch, and results stored for it never
  // join the default branch's history.
  const std::string branch =
      fmt::format("kiln-bisect-{}-{}", commit.sha.substr(0, 12), commit.levels.size());
  auto tree = scratch / branch;
  KILN_TRY_VOID(git(args, {"worktree", "add", "--quiet", "-b", branch, tree.string(), commit.sha}));
  std::vector<std::string> argv = {std::filesystem::read_symlink("/proc/self/exe").string(),
                                   "run",
                                   "-C",
                                   tree.string(),
                                   "--job",
                                   args.job,
                                   "--json"};
  if (!args.store.empty()) argv.insert(argv.end(), {"--store", args.store});
  if (!args.simulate_gpus.empty()) argv.insert(argv.end(), {"--simulate-gpus", args.simulate_gpus});
  argv.insert(argv.end(), args.pin.begin(), args.pin.end());
  auto output = core::run_command(argv, {}, std::nullopt, std::chrono::hours(6));
  (void)git(args, {"worktree", "remove", "--force", tree.string()});
  (void)git(args, {"branch", "-D", "--quiet", branch});
  if (!output) return std::unexpected(output.error());
  auto result = nlohmann::json::parse(output->out, nullptr, false);
  if (!result.is_object() || !result.contains("runs") || !result["runs"].is_array() ||
      result["runs"].empty())
    return fail(ErrorCode::io_error, "kiln run at {}: no result ({})", commit.sha.substr(0, 10),
                output->status.to_string());
  const auto& run = result["runs"][0];
  const auto jobs = run.is_object() && run.contains("jobs") && run["jobs"].is_array()
                        ? run["jobs"]
                        : nlohmann::json::array();
  for (const auto& job : jobs) {
    if (!job.is_object() || text(job, "name") != args.job) continue;
    const auto& perf = job.contains("perf") ? job["perf"] : nlohmann::json();
    if (!perf.is_object() || !perf.contains("rows") || !perf["rows"].is_array())
      return fail(ErrorCode::invalid_input, "job '{}' at {} published no benchmark results",
                  args.job, commit.sha.substr(0, 10));
    for (const auto& row : perf["rows"]) {
      if (!row.is_object() || !row.contains("current") || !row["current"].is_number()) continue;
      const std::string name = text(row, "benchmark"), row_metric = text(row, "metric");
      if (!benchmark.empty() && name != benchmark) continue;
      if (!metric.empty() && row_metric != metric) continue;
      benchmark = name;
      metric = row_metric;
      commit.levels.push_back(row["current"].get<double>());
      if (run.contains("id") && run["id"].is_number_integer())
        commit.runs.push_back(run["id"].get<std::int64_t>());
      return {};
    }
    return fail(ErrorCode::invalid_input, "job '{}' at {} has no result for benchmark '{}'",
                args.job, commit.sha.substr(0, 10), benchmark);
  }
  return fail(ErrorCode::invalid_input, "no job '{}' ran at {}", args.job,
              commit.sha.substr(0, 10));
}

// The GPUs the job held in the newest stored run of `sha`, as kiln run's --pin-gpu-model,
// --pin-gpu-driver and --pin-gpu-uuid arguments, so that every commit is measured on the bad
// run's testbed (the same model and driver; the same GPUs when this host has them). Empty when
// no stored run of the job at `sha` held GPUs.
std::vector<std::string> pin_of_bad_run(const BisectArgs& args, const std::string& sha) {
  std::optional<std::filesystem::path> path;
  if (!args.store.empty()) path = args.store;
  auto store = open_store(path, args.directory);
  if (!store) return {};
  store::RunQuery query;
  query.limit = 0;
  auto runs = (*store)->list_runs(query);
  if (!runs) return {};
  for (const auto& run : *runs) {  // newest first
    if (run.sha != sha) continue;
    auto jobs = (*store)->list_jobs(run.id);
    if (!jobs) continue;
    for (const auto& job : *jobs) {
      if (job.workflow_job_id != args.job && job.key != args.job) continue;
      if (!job.extra.is_object() || !job.extra.contains("gpus") || !job.extra["gpus"].is_array() ||
          job.extra["gpus"].empty())
        continue;
      std::vector<std::string> pin;
      std::vector<std::string> models;
      std::string driver;
      for (const auto& gpu : job.extra["gpus"]) {
        if (!gpu.is_object()) continue;
        const std::string model = text(gpu, "model"), uuid = text(gpu, "uuid");
        if (!model.empty() && std::find(models.begin(), models.end(), model) == models.end()) {
          models.push_back(model);
          pin.insert(pin.end(), {"--pin-gpu-model", model});
        }
        if (!uuid.empty()) pin.insert(pin.end(), {"--pin-gpu-uuid", uuid});
        if (driver.empty()) driver = text(gpu, "driver");
      }
      if (!driver.empty()) pin.insert(pin.end(), {"--pin-gpu-driver", driver});
      fmt::print(
          stderr, "kiln: bisect: on the GPUs of run {} ({}{}{})\n", run.id, fmt::join(models, ", "),
          driver.empty() ? "" : ", driver " + driver,
          job.extra["gpus"].size() == 1 ? "" : fmt::format(", {} GPUs", job.extra["gpus"].size()));
      return pin;
    }
  }
  return {};
}

int bisect(BisectArgs args) {
  auto good = git(args, {"rev-parse", "--verify", "--quiet", args.good + "^{commit}"});
  auto bad = git(args, {"rev-parse", "--verify", "--quiet", args.bad + "^{commit}"});
  if (!good || !bad)
    return report_error(
        {ErrorCode::invalid_input,
         fmt::format("'{}' is not a commit of {}", !good ? args.good : args.bad, args.directory),
         {}});
  auto between = git(args, {"rev-list", "--reverse", "--ancestry-path", *good + ".." + *bad});
  if (!between || between->empty())
    return report_error({ErrorCode::invalid_input,
                         fmt::format("{} is not an ancestor of {}", args.good, args.bad),
                         {}});
  args.pin = pin_of_bad_run(args, *bad);
  if (args.pin.empty())
    fmt::print(stderr,
               "kiln: bisect: no stored run of '{}' at {} held GPUs: its runs are not pinned to a "
               "testbed\n",
               args.job, args.bad);
  std::vector<Commit> commits = {{.sha = *good, .subject = "", .levels = {}, .runs = {}}};
  std::size_t start = 0;
  while (start < between->size()) {
    auto end = between->find('\n', start);
    if (end == std::string::npos) end = between->size();
    commits.push_back(
        {.sha = between->substr(start, end - start), .subject = "", .levels = {}, .runs = {}});
    start = end + 1;
  }
  for (auto& c : commits)
    if (auto subject = git(args, {"log", "-1", "--format=%s", c.sha})) c.subject = *subject;

  std::string scratch_pattern =
      (std::filesystem::temp_directory_path() / "kiln-bisect-XXXXXX").string();
  if (!mkdtemp(scratch_pattern.data()))
    return report_error({ErrorCode::io_error, "cannot create a scratch directory", {}});
  const std::filesystem::path scratch = scratch_pattern;
  std::string benchmark = args.benchmark, metric = args.metric;
  auto run_at = [&](Commit& c) -> Status {
    fmt::print(stderr, "kiln: bisect: running '{}' at {} {}\n", args.job, c.sha.substr(0, 10),
               c.subject);
    return measure(args, scratch, c, benchmark, metric);
  };
  auto finish = [&](int code) {
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
    (void)git(args, {"worktree", "prune"});
    return code;
  };
  auto outcome =
      perf::bisect(commits, {.repeat = args.repeat, .threshold = args.threshold / 100}, run_at);
  if (!outcome) return finish(report_error(outcome.error()));
  if (!outcome->found) {
    fmt::print(stderr,
               "kiln: bisect: {} ({}) changed {:+.1f}% from {} to {}: below the threshold "
               "{}%, nothing to bisect\n",
               benchmark, metric, outcome->step * 100, args.good, args.bad, args.threshold);
    return finish(1);
  }
  const auto& first_bad = commits[outcome->first_bad];
  const auto& last_good = commits[outcome->last_good];
  if (args.json) {
    fmt::print("{}\n", perf::bisect_json(commits, *outcome, benchmark, metric).dump(2));
  } else {
    fmt::print("first bad commit: {} {}\n", first_bad.sha, first_bad.subject);
    fmt::print("{} ({}): {:+.1f}% ({:.6g} at {} -> {:.6g}), {} commit(s) between {} and {}\n",
               benchmark, metric, outcome->change * 100, last_good.level(),
               last_good.sha.substr(0, 10), first_bad.level(), commits.size() - 1, args.good,
               args.bad);
    for (const auto& c : commits)
      if (!c.levels.empty())
        fmt::print("  {}  {:>12.6g}  {} run(s)  {}\n", c.sha.substr(0, 10), c.level(),
                   c.levels.size(), c.subject);
  }
  return finish(0);
}

}  // namespace

void add_bench_bisect_command(CLI::App& bench, int& exit_code) {
  auto args = std::make_shared<BisectArgs>();
  auto* cmd = bench.add_subcommand(
      "bisect", "find the first commit between GOOD and BAD at which a benchmark got slower");
  cmd->add_option("GOOD", args->good, "a commit whose job ran at the good speed")->required();
  cmd->add_option("BAD", args->bad, "a later commit whose job ran slower")->required();
  cmd->add_option("--job", args->job, "the job that publishes the benchmark")->required();
  cmd->add_option("--benchmark", args->benchmark, "the benchmark (default: the job's first)");
  cmd->add_option("--metric", args->metric, "its metric (default: its first)");
  cmd->add_option("-C,--directory", args->directory, "the git repository (default: .)");
  cmd->add_option("--store", args->store, "database for the runs (default: kiln run's)");
  cmd->add_option("--simulate-gpus", args->simulate_gpus, "passed to kiln run");
  cmd->add_option("--repeat", args->repeat,
                  "runs of a commit whose level is near the middle (default 3)")
      ->check(CLI::Range(1, 20));
  cmd->add_option("--threshold", args->threshold,
                  "the smallest step worth bisecting, in percent (default 5)");
  cmd->add_flag("--json", args->json, "JSON on stdout");
  cmd->callback([args, &exit_code] { exit_code = bisect(*args); });
}

}  // namespace kiln::cli
