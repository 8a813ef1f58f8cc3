#include "kiln/cli/common.h"

#include "kiln/config/host_config.h"

#include <unistd.h>

#include <fstream>

#include <fmt/core.h>

#include "kiln/engine/repository.h"
#include "kiln/exec/action_fetch.h"
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
  auto file = path ? *path : default_store_path(directory);
  KILN_TRY(auto store, store::open_sqlite_store(file));
  // <repo>/.kiln/ holds the database and the job work trees: keep it out of `git status`.
  auto folder = file.parent_path();
  std::error_code ec;
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
  // Actions of other repositories: fetched into the host's state directory, beside its store.
  auto host_store =
      options.host_store.empty() ? store::default_host_store_path() : options.host_store;
  options.actions_fetcher =
      exec::repository_fetcher({config.actions_url, host_store.parent_path() / "actions"});
  return {};
}

Result<std::map<std::string, std::string>> read_dotenv(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::invalid_input, "cannot read the file", {path.string()});
  std::map<std::string, std::string> values;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    line = line.substr(start);
    if (line.starts_with("export ")) line = line.substr(7);
    auto eq = line.find('=');
    if (eq == std::string::npos || eq == 0)
      return make_error(ErrorCode::invalid_input, "expected KEY=VALUE", {path.string(), number, 1});
    std::string key = line.substr(0, eq);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      std::string raw = value.substr(1, value.size() - 2), decoded;
      for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\\' && i + 1 < raw.size()) {
          char next = raw[++i];
          decoded += next == 'n' ? '\n' : next == 't' ? '\t' : next;
        } else {
          decoded += raw[i];
        }
      }
      value = decoded;
    } else if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') {
      value = value.substr(1, value.size() - 2);
    }
    values[key] = value;
  }
  return values;
}

Result<std::pair<std::string, std::string>> split_assignment(const std::string& text,
                                                             const std::string& option) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return make_error(ErrorCode::invalid_input,
                      fmt::format("{} expects KEY=VALUE, got '{}'", option, text));
  return std::pair{text.substr(0, eq), text.substr(eq + 1)};
}

std::string format_duration(std::chrono::milliseconds duration) {
  auto ms = duration.count();
  if (ms < 1000) return fmt::format("{}ms", ms);
  if (ms < 60'000) return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0);
  return fmt::format("{}m{:02}s", ms / 60'000, (ms / 1000) % 60);
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
