// RunQueue::bisect: a bisection trigger (bisect.h) run in the server's queue. Each commit it
// measures is checked out as a trigger's commit is, and its job run by the engine on a branch
// of its own (kiln-bisect/TRIGGER: the results stay off the branch's history, the runs are
// listed under it), pinned to the regressed job's GPUs (RunOptions::gpu_pin). Its runs are the
// trigger's run_ids, so the API shows them and can cancel them.

#include <fstream>
#include <functional>
#include <mutex>

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include "kiln/core/git.h"
#include "kiln/exec/process_tracker.h"
#include "kiln/perf/bisect.h"
#include "kiln/server/bisect.h"
#include "kiln/server/run_queue.h"
#include "kiln/server/status_client.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;

// Remembers the runs the engine creates; nothing is posted per job (the commits measured are
// not the ones the forge asked about).
class BisectObserver final : public engine::RunObserver {
 public:
  explicit BisectObserver(std::function<void(std::int64_t)> on_run) : on_run_(std::move(on_run)) {}
  void run_started(const std::string&, std::int64_t run_id) override { on_run_(run_id); }
  void job_started(const std::string&) override {}
  void job_line(const std::string&, std::string_view, std::string_view) override {}
  void job_finished(const engine::JobSummary&) override {}
  void progress(int, int, const std::vector<std::string>&) override {}
  void warning(const std::string& text) override { spdlog::warn("bisect: {}", text); }

 private:
  std::function<void(std::int64_t)> on_run_;
};

// The level of the request's benchmark in the job `key` of the report, or why there is none.
Result<double> level_in(const engine::RunReport& report, const BisectRequest& request,
                        const std::string& sha) {
  for (const auto& run : report.runs)
    for (const auto& job : run.jobs) {
      if (job.key != request.job) continue;
      if (job.perf.is_object() && job.perf.contains("rows") && job.perf["rows"].is_array())
        for (const auto& row : job.perf["rows"])
          if (row.is_object() && row.value("benchmark", "") == request.benchmark &&
              row.value("metric", "") == request.metric && row.contains("current") &&
              row["current"].is_number())
            return row["current"].get<double>();
      return fail(ErrorCode::invalid_input, "job '{}' at {} published no result for '{}' ({}{})",
                  request.job, sha.substr(0, 10), request.benchmark,
                  store::to_string(job.conclusion), job.reason.empty() ? "" : ": " + job.reason);
    }
  return fail(ErrorCode::invalid_input, "no job '{}' ran at {}", request.job, sha.substr(0, 10));
}

}  // namespace

Result<std::string> RunQueue::bisect(store::Trigger& trigger,
                                     const config::ServeRepository& repository) {
  KILN_TRY(const auto request, parse_bisect_request(trigger.payload));
  std::shared_ptr<std::atomic<bool>> cancel;
  {
    MutexLock lock(mutex_);
    cancel = active_[trigger.id].cancel;
  }
  const std::string trigger_url =
      fmt::format("{}/api/triggers/{}", settings_.public_url, trigger.id);
  std::optional<StatusClient> forge;
  if (!repository.statuses_api_url.empty())
    forge.emplace(repository.statuses_api_url, repository.statuses_token);
  auto status = [&](const char* state, const std::string& description) {
    if (!forge) return;
    CommitStatus posted{state, "kiln / bisect", description.substr(0, 140), trigger_url};
    if (auto sent = forge->post(trigger.repository, request.bad, posted); !sent)
      spdlog::warn("trigger {}: {}", trigger.id, sent.error().message);
  };
  nlohmann::json posted = {
      {"status", "running"},      {"trigger", trigger.id}, {"benchmark", request.benchmark},
      {"metric", request.metric}, {"good", request.good},  {"bad", request.bad}};
  (void)post_on_run(store_, request.run, posted);
  // Every way out says so on the regressed run and the forge.
  auto failed = [&](const Error& error) -> Result<std::string> {
    posted["status"] = cancel->load() ? "cancelled" : "failed";
    posted["error"] = error.message;
    (void)post_on_run(store_, request.run, posted);
    status("error", "bisection failed: " + error.message);
    return std::unexpected(error);
  };
  status("pending",
         fmt::format("bisecting {} from {}", request.benchmark, request.good.substr(0, 10)));

  // The bad commit's checkout fetches it (and with it the good one, its ancestor) into the
  // server-side clone, where the commits between them are listed.
  store::Trigger at = trigger;
  if (auto checkout = prepare_checkout(at, repository); !checkout) {
    return failed(checkout.error());
  } else {
    std::error_code ec;
    fs::remove_all(*checkout, ec);
  }
  const fs::path bare = settings_.work_dir / "repos" / (repository.name + ".git");
  auto listed = core::run_git(
      {"log", "--reverse", "--ancestry-path", "--format=%H %s", request.good + ".." + request.bad},
      bare);
  if (!listed || !listed->ok())
    return failed(
        {ErrorCode::invalid_input,
         fmt::format("git log {}..{}: {}", request.good.substr(0, 10), request.bad.substr(0, 10),
                     listed ? listed->reason() : listed.error().message),
         {}});
  std::vector<perf::BisectCommit> commits = {{.sha = request.good}};
  if (auto subject = core::run_git({"log", "-1", "--format=%s", request.good}, bare);
      subject && subject->ok())
    commits.front().subject = subject->out.substr(0, subject->out.find('\n'));
  for (std::size_t start = 0; start < listed->out.size();) {
    auto end = listed->out.find('\n', start);
    if (end == std::string::npos) end = listed->out.size();
    std::string line = listed->out.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    auto space = line.find(' ');
    commits.push_back({.sha = line.substr(0, space),
                       .subject = space == std::string::npos ? "" : line.substr(space + 1)});
  }
  if (commits.size() < 2 || commits.back().sha != request.bad)
    return failed({ErrorCode::invalid_input,
                   fmt::format("{} is not an ancestor of {}", request.good.substr(0, 10),
                               request.bad.substr(0, 10)),
                   {}});
  const int between = static_cast<int>(commits.size()) - 1;
  if (between > settings_.serve.bisect.max_commits)
    return failed({ErrorCode::invalid_input,
                   fmt::format("{} commits from {} to {}: more than serve.bisect.max_commits ({})",
                               between, request.good.substr(0, 10), request.bad.substr(0, 10),
                               settings_.serve.bisect.max_commits),
                   {}});

  const std::string branch = fmt::format("kiln-bisect/{}", trigger.id);
  auto measure = [&](perf::BisectCommit& commit) -> Status {
    if (cancel->load()) return fail(ErrorCode::cancelled, "cancelled");
    spdlog::info("trigger {}: bisect: running '{}' at {} {}", trigger.id, request.job,
                 commit.sha.substr(0, 10), commit.subject);
    at.sha = commit.sha;
    KILN_TRY(auto checkout, prepare_checkout(at, repository));
    const fs::path event_file =
        settings_.work_dir / "events" / fmt::format("{}-{}.json", trigger.id, commit.levels.size());
    {
      std::error_code ec;
      fs::create_directories(event_file.parent_path(), ec);
      std::ofstream out(event_file, std::ios::binary | std::ios::trunc);
      out << nlohmann::json{{"ref", "refs/heads/" + branch}, {"after", commit.sha}}.dump();
      if (!out) return fail(ErrorCode::io_error, "cannot write {}", event_file.string());
    }
    engine::RunOptions options = settings_.base;
    options.repository = checkout;
    options.repository_name = trigger.repository;
    options.event_name = "push";
    options.event_file = event_file;
    if (!request.workflow.empty() && fs::exists(checkout / request.workflow))
      options.workflows = checkout / request.workflow;
    options.job_filter = {request.workflow_job};
    options.concurrency = settings_.concurrency;
    options.job_token_prefix =
        settings_.base.job_token_prefix.empty()
            ? exec::new_job_token()
            : fmt::format("{}-t{}", settings_.base.job_token_prefix, trigger.id);
    options.cancel = cancel;
    if (!request.pin.models.empty()) options.gpu_pin = request.pin;
    std::vector<std::int64_t> runs;
    std::mutex runs_mutex;  // run_started may come from the engine's threads
    BisectObserver observer([&](std::int64_t run_id) {
      std::lock_guard runs_lock(runs_mutex);
      runs.push_back(run_id);
      if (!trigger.run_ids.is_array()) trigger.run_ids = nlohmann::json::array();
      trigger.run_ids.push_back(run_id);
      if (auto updated = store_.update_trigger(trigger); !updated)
        spdlog::warn("trigger {}: {}", trigger.id, updated.error().message);
      MutexLock lock(mutex_);
      active_[trigger.id].run_ids.insert(run_id);
    });
    auto report = engine::run(options, store_, observer);
    std::error_code ec;
    fs::remove_all(checkout, ec);
    fs::remove(event_file, ec);
    if (!report) return std::unexpected(report.error());
    // Each run says what it was for (the API's run JSON).
    for (auto run_id : runs)
      (void)post_on_run(store_, run_id,
                        {{"of_run", request.run}, {"trigger", trigger.id}, {"commit", commit.sha}});
    KILN_TRY(double level, level_in(*report, request, commit.sha));
    commit.levels.push_back(level);
    if (!runs.empty()) commit.runs.push_back(runs.front());
    return {};
  };
  auto outcome = perf::bisect(
      commits, {.repeat = settings_.serve.bisect.repeat, .threshold = request.threshold}, measure);
  if (!outcome) return failed(outcome.error());
  nlohmann::json result = nlohmann::json::parse(
      perf::bisect_json(commits, *outcome, request.benchmark, request.metric).dump());
  result["status"] = "finished";
  result["trigger"] = trigger.id;
  result["good"] = request.good;
  result["bad"] = request.bad;
  std::string message;
  if (outcome->found) {
    const auto& culprit = commits[outcome->first_bad];
    message = fmt::format("first bad commit {} {}: {} {:+.1f}% ({} job runs over {} commits)",
                          culprit.sha.substr(0, 10), culprit.subject, request.benchmark,
                          outcome->change * 100, outcome->runs, between);
    status("failure", message);
  } else {
    message = fmt::format(
        "{} changed {:+.1f}% from {} to {} when measured again: below {:.1f}%, nothing to "
        "bisect",
        request.benchmark, outcome->step * 100, request.good.substr(0, 10),
        request.bad.substr(0, 10), request.threshold * 100);
    status("success", message);
  }
  result["message"] = message;
  if (auto written = post_on_run(store_, request.run, result); !written)
    spdlog::warn("trigger {}: {}", trigger.id, written.error().message);
  return message;
}

}  // namespace kiln::server
