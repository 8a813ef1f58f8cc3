// kiln tests list|quarantine|release: the repository's quarantined and flaky tests
// (docs/failures.md "Quarantined tests", docs/cli.md). A quarantined test still runs and is
// reported; its failures alone do not fail a job.

#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/config/host_config.h"
#include "kiln/engine/collect/quarantine.h"
#include "kiln/engine/plan/repository.h"

namespace kiln::cli {
namespace {

struct TestsArgs {
  std::string directory = ".";
  std::string store;
  std::string repository;  // empty: the repository at -C (as `kiln run` names it)
  std::string config;
  std::string name;
  std::string duration;  // --for; empty: kiln.yml tests.quarantine.expires
  std::string reason;
  bool json = false;
};

std::string utc_time(store::TimeMs ms) {
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buffer;
}

// The store and the repository name the command works on.
struct Opened {
  std::unique_ptr<store::Store> store;
  std::string repository;
};

Result<Opened> open(const TestsArgs& args) {
  Opened opened;
  if (!args.repository.empty()) {
    opened.repository = args.repository;
  } else {
    KILN_TRY(auto repo, engine::inspect_repository(args.directory));
    opened.repository = repo.name;
  }
  std::optional<std::filesystem::path> path;
  if (!args.store.empty()) path = args.store;
  KILN_TRY(opened.store, open_store(path, args.directory));
  return opened;
}

// Whether a result of the test is stored: "classname::name" may split at any "::".
bool has_results(store::Store& store, const std::string& repository, const std::string& test) {
  auto seen = [&](const std::string& classname, const std::string& name) {
    store::TestCaseQuery query;
    query.repository = repository;
    query.classname = classname;
    query.name = name;
    query.limit = 1;
    auto found = store.list_test_cases(query);
    return found && !found->empty() && found->front().classname == classname;
  };
  if (seen("", test)) return true;
  for (auto at = test.find("::"); at != std::string::npos; at = test.find("::", at + 1))
    if (seen(test.substr(0, at), test.substr(at + 2))) return true;
  return false;
}

int quarantine(const TestsArgs& args) {
  auto opened = open(args);
  if (!opened) return report_error(opened.error());
  std::optional<std::filesystem::path> config_file;
  if (!args.config.empty()) config_file = args.config;
  auto config = config::find_host_config(config_file);
  if (!config) return report_error(config.error());
  store::TimeMs duration = config->test_quarantine.expires;
  if (!args.duration.empty()) {
    auto parsed = config::parse_duration(args.duration);
    if (!parsed || parsed->count() < 1000 || parsed->count() > 365LL * 86'400'000)
      return report_error(
          Error{ErrorCode::invalid_input,
                fmt::format("--for {}: expected a duration from 1s to 365d (30m, 12h, 7d)",
                            args.duration),
                {}});
    duration = parsed->count();
  }
  const store::TimeMs now = store::now_ms();
  store::TestQuarantine record;
  record.repository = opened->repository;
  record.test = args.name;
  record.reason = args.reason.empty() ? "quarantined by hand (kiln tests quarantine)" : args.reason;
  record.manual = true;
  record.since = now;
  record.expires_at = now + duration;
  if (auto stored = opened->store->quarantine_test(record); !stored)
    return report_error(stored.error());
  fmt::print(
      "{} is quarantined in {} until {}: it still runs, and its failures alone do not "
      "fail a job\n",
      args.name, opened->repository, utc_time(record.expires_at));
  if (!has_results(*opened->store, opened->repository, args.name))
    fmt::print(stderr,
               "kiln: warning: no result of a test named '{}' is stored for {} yet (names are "
               "classname::name, as kiln tests list and kiln report show them)\n",
               args.name, opened->repository);
  return 0;
}

int release(const TestsArgs& args) {
  auto opened = open(args);
  if (!opened) return report_error(opened.error());
  auto released = opened->store->release_test_quarantine(opened->repository, args.name, 0);
  if (!released) return report_error(released.error());
  if (!*released)
    return report_error(
        Error{ErrorCode::invalid_input,
              fmt::format("{} is not quarantined in {} (kiln tests list shows those that are)",
                          args.name, opened->repository),
              {}});
  fmt::print("{} is released: its failures fail jobs again\n", args.name);
  return 0;
}

bool quarantined_contains(const nlohmann::ordered_json& quarantined, const std::string& test) {
  for (const auto& q : quarantined)
    if (q["test"] == test) return true;
  return false;
}

int list(const TestsArgs& args) {
  auto opened = open(args);
  if (!opened) return report_error(opened.error());
  auto& store = *opened->store;
  const store::TimeMs now = store::now_ms();
  auto records = store.list_test_quarantine(opened->repository);
  if (!records) return report_error(records.error());
  // Flaky: passed after failing on the same commit, among the newest results.
  store::TestCaseQuery query;
  query.repository = opened->repository;
  query.limit = 10'000;
  auto cases = store.list_test_cases(query);
  if (!cases) return report_error(cases.error());
  struct Flaky {
    int times = 0;
    std::int64_t last_run = 0;
    std::string last_commit;
  };
  std::map<std::string, Flaky> flaky;
  for (const auto& c : *cases) {
    if (!c.flaky) continue;
    auto& entry = flaky[engine::test_name(c.classname, c.name)];
    ++entry.times;
    entry.last_run = c.run_id;
    entry.last_commit = c.commit_sha;
  }
  using Json = nlohmann::ordered_json;
  Json quarantined = Json::array();
  for (const auto& r : *records) {
    if (!r.active(now)) continue;
    quarantined.push_back({{"test", r.test},
                           {"reason", r.reason},
                           {"by", r.manual ? "manual" : "flips"},
                           {"since", r.since},
                           {"expires_at", r.expires_at}});
  }
  Json flaky_json = Json::array();
  for (const auto& [test, entry] : flaky)
    flaky_json.push_back({{"test", test},
                          {"flaky_runs", entry.times},
                          {"last_run", entry.last_run},
                          {"last_commit", entry.last_commit},
                          {"quarantined", quarantined_contains(quarantined, test)}});
  if (args.json) {
    Json out = {{"repository", opened->repository},
                {"quarantined", std::move(quarantined)},
                {"flaky", std::move(flaky_json)}};
    fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return 0;
  }
  fmt::print("QUARANTINED in {} (still run and reported; their failures alone do not fail a job)\n",
             opened->repository);
  if (quarantined.empty()) fmt::print("  none\n");
  for (const auto& q : quarantined)
    fmt::print("  {}  until {}  ({}: {})\n", q["test"].get<std::string>(),
               utc_time(q["expires_at"].get<store::TimeMs>()), q["by"].get<std::string>(),
               q["reason"].get<std::string>());
  fmt::print("\nFLAKY (failed and passed on one commit)\n");
  if (flaky_json.empty()) fmt::print("  none\n");
  for (const auto& f : flaky_json)
    fmt::print("  {}  {} time(s), last in run {} (commit {}){}\n", f["test"].get<std::string>(),
               f["flaky_runs"].get<int>(), f["last_run"].get<std::int64_t>(),
               f["last_commit"].get<std::string>().substr(0, 8),
               f["quarantined"].get<bool>() ? ", quarantined" : "");
  return 0;
}

void add_common(CLI::App* cmd, TestsArgs& args) {
  cmd->add_option("-C,--directory", args.directory, "the git repository (default: .)");
  cmd->add_option("--store", args.store, "database (default: <repo>/.kiln/kiln.db)");
  cmd->add_option("--repository", args.repository,
                  "the repository's name in the store (default: the one at -C, as kiln run "
                  "names it; kiln serve: the name in its kiln.yml)");
}

}  // namespace

void add_tests_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TestsArgs>();
  auto* cmd =
      app.add_subcommand("tests", "quarantined and flaky tests (list, quarantine, release)");
  cmd->require_subcommand(1);
  auto* list_cmd =
      cmd->add_subcommand("list", "the quarantined tests (why, until when) and flaky ones");
  add_common(list_cmd, *args);
  list_cmd->add_flag("--json", args->json, "JSON on stdout");
  list_cmd->callback([args, &exit_code] { exit_code = list(*args); });

  auto* quarantine_cmd = cmd->add_subcommand(
      "quarantine", "quarantine a test: its failures alone no longer fail a job");
  add_common(quarantine_cmd, *args);
  quarantine_cmd->add_option("NAME", args->name, "classname::name, as kiln tests list shows it")
      ->required();
  quarantine_cmd->add_option("--for", args->duration,
                             "how long (1s to 365d; default kiln.yml tests.quarantine.expires, "
                             "14d)");
  quarantine_cmd->add_option("--reason", args->reason, "why, shown by kiln tests list");
  quarantine_cmd->add_option("--config", args->config,
                             "kiln.yml (default: $KILN_CONFIG, "
                             "/etc/kiln/kiln.yml)");
  quarantine_cmd->callback([args, &exit_code] { exit_code = quarantine(*args); });

  auto* release_cmd = cmd->add_subcommand("release", "end a test's quarantine now");
  add_common(release_cmd, *args);
  release_cmd->add_option("NAME", args->name, "classname::name")->required();
  release_cmd->callback([args, &exit_code] { exit_code = release(*args); });
}

}  // namespace kiln::cli
