#include "kiln/cli/common.h"

#include "kiln/config/host_config.h"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/core.h>

#include "kiln/core/dotenv.h"
#include "kiln/engine/plan/repository.h"
#include "kiln/exec/action_fetch.h"
#include "kiln/store/host_store.h"
#include "kiln/store/postgres_store.h"
#include "kiln/store/sqlite_store.h"

namespace kiln::cli {

int report_error(const Error& error) {
  fmt::print(stderr, "kiln: {}\n", error.to_string());
  return error.exit_code();
}

std::filesystem::path default_store_path(const std::filesystem::path& directory) {
  if (auto root = engine::find_work_tree(directory)) return *root / ".kiln" / "kiln.db";
  return std::filesystem::absolute(directory) / ".kiln" / "kiln.db";
}

Result<std::unique_ptr<store::Store>> open_store(const std::optional<std::filesystem::path>& path,
                                                 const std::filesystem::path& directory) {
  // -C names the repository: one that does not exist gets no .kiln/ made for it.
  std::error_code ec;
  if (!path && !std::filesystem::is_directory(directory, ec))
    return make_error(ErrorCode::invalid_input,
                      fmt::format("-C {}: no such directory", directory.string()));
  // --store postgresql://...: the shared database of `kiln serve` replicas (docs/scale-out.md).
  if (path && store::is_postgres_url(path->string())) {
    store::PostgresStoreOptions postgres;
    postgres.url = path->string();
    return store::open_postgres_store(postgres);
  }
  auto file = path ? *path : default_store_path(directory);
  KILN_TRY(auto store, store::open_sqlite_store(file));
  // <repo>/.kiln/ holds the database and the job work trees: keep it out of `git status`.
  auto folder = file.parent_path();
  if (folder.filename() == ".kiln" && !std::filesystem::exists(folder / ".gitignore", ec))
    std::ofstream(folder / ".gitignore") << "*\n";
  return store;
}

Status apply_host_config(const std::string& config_flag, engine::RunOptions& options) {
  std::optional<std::filesystem::path> explicit_file;
  if (!config_flag.empty()) explicit_file = config_flag;
  KILN_TRY(auto config, config::find_host_config(explicit_file));
  options.gpu_labels = std::move(config.gpu_labels);
  options.gpu_health = config.gpu_health;
  options.gpu_telemetry = config.gpu_telemetry;
  if (config.host_store) options.host_store = *config.host_store;
  options.container_engine = config.container_engine;
  if (!config.pull_policy.empty()) options.pull_policy = config.pull_policy;
  options.container_policy = std::move(config.container_policy);
  // jobs.user: the user must not be able to read kiln.yml (tokens, secrets) or the host store.
  if (config.job_user) {
    if (!config.file.empty())
      KILN_TRY_VOID(core::check_unreadable_by(config.file, *config.job_user));
    if (config.host_store && !config.host_store->file.empty())
      KILN_TRY_VOID(core::check_unreadable_by(config.host_store->file, *config.job_user));
    options.job_user = std::move(config.job_user);
  }
  KILN_TRY_VOID(apply_job_limits(config, options));
  options.retry = config.retry;
  options.test_quarantine = config.test_quarantine;
  options.max_log_bytes = config.max_log_bytes;
  options.slurm = std::move(config.slurm);
  options.priority = std::move(config.priority);
  options.keep_failed_for = config.debug_hold;
  options.keep_failed_on_dispatch = config.debug_on_workflow_dispatch;
  // Actions of other repositories: fetched into the host's state directory, beside its store.
  options.actions_fetcher = exec::repository_fetcher(
      {config.actions_url, store::host_state_dir(options.host_store) / "actions"});
  return {};
}

Status apply_job_limits(const config::HostConfig& config, engine::RunOptions& options) {
  if (!config.job_limits.any()) return {};
  auto host = core::find_cgroup_host();
  if (host.layout == core::CgroupHost::Layout::none)
    return fail_at(config.job_limits_where,
                   "jobs.limits: this host cannot give jobs cgroups ({}); the jobs do not run "
                   "without their limits",
                   host.why_not);
  options.job_limits = config.job_limits;
  options.cgroup_host = std::move(host);
  return {};
}

Status apply_label_flags(const std::vector<std::string>& flags, engine::RunOptions& options) {
  for (const auto& flag : flags) {
    auto eq = flag.find('=');
    auto name = flag.substr(0, eq);
    Status added;
    if (eq == std::string::npos) {
      added = options.gpu_labels.serve(name);
    } else {
      std::vector<std::string> request;
      std::istringstream words(flag.substr(eq + 1));
      for (std::string word; words >> word;) request.push_back(word);
      added = options.gpu_labels.add(name, request);
    }
    if (!added)
      return make_error(ErrorCode::invalid_input,
                        fmt::format("--label {}: {}", flag, added.error().message));
  }
  return {};
}

Result<std::map<std::string, std::string>> read_dotenv(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::invalid_input, "cannot read the file", {path.string()});
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return core::parse_dotenv(text, path.string());
}

Result<std::pair<std::string, std::string>> split_assignment(const std::string& text,
                                                             const std::string& option) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return make_error(ErrorCode::invalid_input,
                      fmt::format("{} expects KEY=VALUE, got '{}'", option, text));
  return std::pair{text.substr(0, eq), text.substr(eq + 1)};
}

Result<std::optional<std::filesystem::path>> actions_mirror(const std::string& option) {
  std::string value = option;
  std::string source = "--actions-mirror";
  if (value.empty()) {
    const char* env = std::getenv("KILN_ACTIONS_MIRROR");
    if (!env || !*env) return std::optional<std::filesystem::path>{};
    value = env;
    source = "KILN_ACTIONS_MIRROR";
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(value, ec))
    return make_error(ErrorCode::invalid_input,
                      fmt::format("{} {}: no such directory", source, value));
  return std::optional<std::filesystem::path>{std::filesystem::absolute(value)};
}

bool stdout_is_terminal() { return isatty(STDOUT_FILENO) == 1; }
bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

}  // namespace kiln::cli
