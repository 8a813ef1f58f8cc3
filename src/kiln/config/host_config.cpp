#include "kiln/config/host_config.h"

#include "kiln/container/engine.h"
#include "kiln/store/postgres_store.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

namespace kiln::config {

namespace {

namespace fs = std::filesystem;

class Reader {
 public:
  explicit Reader(fs::path file) : file_(std::move(file)) {}

  SourceLocation where(const YAML::Node& node) const {
    auto mark = node.Mark();
    if (mark.line < 0) return {file_.string(), 0, 0};
    return {file_.string(), mark.line + 1, mark.column + 1};
  }

  template <class... Args>
  std::unexpected<Error> error(const YAML::Node& node, fmt::format_string<Args...> format,
                               Args&&... args) const {
    return make_error(ErrorCode::invalid_input, fmt::format(format, std::forward<Args>(args)...),
                      where(node));
  }

  // A mapping whose keys are all in `allowed` (null or absent: empty).
  Status mapping(const YAML::Node& node, std::string_view path,
                 const std::set<std::string>& allowed) const {
    if (!node || node.IsNull()) return {};
    if (!node.IsMap()) return error(node, "{}: expected a mapping", path);
    for (const auto& entry : node) {
      auto key = entry.first.as<std::string>();
      if (!allowed.contains(key)) {
        std::string known;
        for (const auto& name : allowed) known += (known.empty() ? "" : ", ") + name;
        return error(entry.first, "{}: unknown key '{}' (known: {})", path, key, known);
      }
    }
    return {};
  }

  Result<std::string> scalar(const YAML::Node& node, std::string_view path) const {
    if (!node.IsScalar()) return error(node, "{}: expected a single value", path);
    return node.Scalar();
  }

  const fs::path& file() const { return file_; }

 private:
  fs::path file_;
};

Status read_health(const Reader& reader, const YAML::Node& node, gpu::HealthPolicy& health) {
  KILN_TRY_VOID(reader.mapping(node, "gpus.health",
                               {"max_memory_used_before_job", "memory_tolerance_after_job",
                                "memory_grace", "provider_deadline"}));
  if (!node || node.IsNull()) return {};
  for (const auto& entry : node) {
    auto key = entry.first.as<std::string>();
    auto path = "gpus.health." + key;
    KILN_TRY(auto text, reader.scalar(entry.second, path));
    auto attach = [&](Error error) {
      error.message = fmt::format("{}: {}", path, error.message);
      error.where = reader.where(entry.second);
      return std::unexpected(std::move(error));
    };
    if (key == "max_memory_used_before_job" || key == "memory_tolerance_after_job") {
      auto amount = gpu::parse_memory_amount(text);
      if (!amount) return attach(amount.error());
      (key == "max_memory_used_before_job" ? health.max_used_before_job : health.memory_tolerance) =
          *amount;
    } else {
      auto duration = parse_duration(text);
      if (!duration) return attach(duration.error());
      if (key == "provider_deadline" && duration->count() == 0)
        return reader.error(entry.second, "{}: must be more than 0", path);
      (key == "memory_grace" ? health.memory_grace : health.provider_deadline) = *duration;
    }
  }
  return {};
}

Status read_telemetry(const Reader& reader, const YAML::Node& node,
                      gpu::TelemetryPolicy& telemetry) {
  KILN_TRY_VOID(reader.mapping(node, "gpus.telemetry", {"enabled", "interval", "memory_budget"}));
  if (!node || node.IsNull()) return {};
  for (const auto& entry : node) {
    auto key = entry.first.as<std::string>();
    auto path = "gpus.telemetry." + key;
    KILN_TRY(auto text, reader.scalar(entry.second, path));
    auto attach = [&](Error error) {
      error.message = fmt::format("{}: {}", path, error.message);
      error.where = reader.where(entry.second);
      return std::unexpected(std::move(error));
    };
    if (key == "enabled") {
      if (text != "true" && text != "false")
        return reader.error(entry.second, "{}: expected true or false, got '{}'", path, text);
      telemetry.enabled = text == "true";
    } else if (key == "interval") {
      auto duration = parse_duration(text);
      if (!duration) return attach(duration.error());
      if (*duration < gpu::k_min_sample_interval)
        return reader.error(entry.second, "{}: {} is faster than 10 Hz (at least 100ms)", path,
                            text);
      telemetry.interval = *duration;
    } else {
      auto amount = gpu::parse_memory_amount(text);
      if (!amount) return attach(amount.error());
      if (amount->percent)
        return reader.error(entry.second, "{}: a budget is an amount (40G, 512M), not a percentage",
                            path);
      telemetry.memory_budget_mib = amount->mib;
    }
  }
  return {};
}

Status read_labels(const Reader& reader, const YAML::Node& node, gpu::GpuLabelMap& labels) {
  if (!node || node.IsNull()) return {};
  if (!node.IsMap()) return reader.error(node, "gpus.labels: expected a mapping");
  for (const auto& entry : node) {
    auto pattern = entry.first.as<std::string>();
    std::vector<std::string> request;
    if (entry.second.IsScalar()) {
      std::istringstream words(entry.second.Scalar());
      for (std::string word; words >> word;) request.push_back(word);
    } else if (entry.second.IsSequence()) {
      for (const auto& item : entry.second) {
        KILN_TRY(auto word, reader.scalar(item, "gpus.labels." + pattern));
        request.push_back(word);
      }
    } else {
      return reader.error(entry.second,
                          "gpus.labels.{}: expected labels ('gpu:2 gpu-arch:gfx942' or a list)",
                          pattern);
    }
    if (auto added = labels.add(pattern, request, reader.where(entry.second)); !added) {
      auto error = added.error();
      error.where = reader.where(entry.second);
      return std::unexpected(std::move(error));
    }
  }
  return {};
}

Status read_debug(const Reader& reader, const YAML::Node& node, HostConfig& config) {
  KILN_TRY_VOID(reader.mapping(node, "debug", {"hold", "on_workflow_dispatch"}));
  if (!node || node.IsNull()) return {};
  if (auto hold = node["hold"]; hold && !hold.IsNull()) {
    KILN_TRY(auto text, reader.scalar(hold, "debug.hold"));
    auto duration = parse_duration(text);
    if (!duration) return reader.error(hold, "debug.hold: {}", duration.error().message);
    if (*duration <= std::chrono::milliseconds(0) || *duration > std::chrono::hours(24))
      return reader.error(hold, "debug.hold: '{}' is not between 1ms and 24h", text);
    config.debug_hold = *duration;
  }
  if (auto dispatch = node["on_workflow_dispatch"]; dispatch && !dispatch.IsNull()) {
    KILN_TRY(auto text, reader.scalar(dispatch, "debug.on_workflow_dispatch"));
    if (text != "true" && text != "false")
      return reader.error(dispatch, "debug.on_workflow_dispatch: '{}' is not true or false", text);
    config.debug_on_workflow_dispatch = text == "true";
  }
  return {};
}

// retry: {gpu-fault: 1, infra: 1, oom: 0, ...}: the automatic retries of a run by failure class.
// A class given replaces its default; `code` cannot be retried.
Status read_retry(const Reader& reader, const YAML::Node& node, HostConfig& config) {
  KILN_TRY_VOID(reader.mapping(
      node, "retry", {"test", "timeout", "oom", "gpu-fault", "gpu-busy", "infra", "code"}));
  if (!node || node.IsNull()) return {};
  for (const auto& entry : node) {
    auto name = entry.first.as<std::string>();
    if (name == "code")
      return reader.error(entry.first,
                          "retry.code: a step that exited non-zero is the code's failure and is "
                          "never retried automatically (kiln rerun --failed runs it again)");
    KILN_TRY(auto text, reader.scalar(entry.second, "retry." + name));
    int count = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (ec != std::errc{} || end != text.data() + text.size() || count < 0 || count > 5)
      return reader.error(entry.second, "retry.{}: '{}' is not a number of retries from 0 to 5",
                          name, text);
    KILN_TRY(auto failure_class, store::parse_failure_class(name));
    config.retry[failure_class] = count;
  }
  return {};
}

// jobs: {user: kiln-job}: host jobs' steps run as that unprivileged user.
Status read_jobs(const Reader& reader, const YAML::Node& node, HostConfig& config) {
  KILN_TRY_VOID(reader.mapping(node, "jobs", {"user"}));
  if (!node || node.IsNull()) return {};
  if (auto user = node["user"]; user && !user.IsNull()) {
    KILN_TRY(auto text, reader.scalar(user, "jobs.user"));
    auto resolved = core::resolve_run_as(text);
    if (!resolved) return reader.error(user, "jobs.user: {}", resolved.error().message);
    config.job_user = std::move(*resolved);
  }
  return {};
}

// labels: [rocm, big-memory]: labels this host serves that ask for no GPU.
Status read_served_labels(const Reader& reader, const YAML::Node& node, gpu::GpuLabelMap& labels) {
  if (!node || node.IsNull()) return {};
  if (!node.IsSequence())
    return reader.error(node, "labels: expected a list of the runner labels this host serves");
  for (const auto& item : node) {
    KILN_TRY(auto label, reader.scalar(item, "labels"));
    if (auto served = labels.serve(label, reader.where(item)); !served)
      return reader.error(item, "labels: {}", served.error().message);
  }
  return {};
}

Status read_containers(const Reader& reader, const YAML::Node& node, HostConfig& config) {
  KILN_TRY_VOID(reader.mapping(node, "containers", {"engine", "pull", "allow", "user", "limits"}));
  if (!node || node.IsNull()) return {};
  auto& policy = config.container_policy;
  if (auto engine = node["engine"]; engine && !engine.IsNull()) {
    KILN_TRY(config.container_engine, reader.scalar(engine, "containers.engine"));
    const auto& e = config.container_engine;
    if (e != "auto" && e != "podman" && e != "docker" && e.find('/') == std::string::npos)
      return reader.error(engine, "containers.engine: '{}' is not podman, docker, auto or a path",
                          e);
  }
  if (auto pull = node["pull"]; pull && !pull.IsNull()) {
    KILN_TRY(config.pull_policy, reader.scalar(pull, "containers.pull"));
    if (auto parsed = container::parse_pull_policy(config.pull_policy); !parsed)
      return reader.error(pull, "containers.pull: {}", parsed.error().message);
  }
  if (auto allow = node["allow"]; allow && !allow.IsNull()) {
    if (!allow.IsSequence()) return reader.error(allow, "containers.allow: expected a list");
    for (const auto& item : allow) {
      KILN_TRY(auto name, reader.scalar(item, "containers.allow"));
      if (!container::allowable_options().contains(name)) {
        std::string known;
        for (const auto& option : container::allowable_options())
          known += (known.empty() ? "" : ", ") + option;
        return reader.error(item, "containers.allow: '{}' is not one of {}", name, known);
      }
      policy.allow.insert(name);
    }
  }
  if (auto user = node["user"]; user && !user.IsNull()) {
    KILN_TRY(auto text, reader.scalar(user, "containers.user"));
    if (!container::numeric_user(text))
      return reader.error(user,
                          "containers.user: '{}' is not a numeric UID or UID:GID (kiln hands "
                          "the job's directory to it, so it must be a number)",
                          text);
    policy.user = text;
  }
  auto limits = node["limits"];
  KILN_TRY_VOID(reader.mapping(limits, "containers.limits", {"memory", "cpus", "pids"}));
  if (!limits || limits.IsNull()) return {};
  static const std::regex k_memory(R"([0-9]+[bkmgBKMG]?)");
  static const std::regex k_cpus(R"([0-9]+(\.[0-9]+)?)");
  static const std::regex k_pids(R"([1-9][0-9]*)");
  const std::tuple<const char*, const std::regex*, std::optional<std::string>*, const char*>
      fields[] = {{"memory", &k_memory, &policy.memory, "a size such as 16g or 512m"},
                  {"cpus", &k_cpus, &policy.cpus, "a number of CPUs such as 8 or 1.5"},
                  {"pids", &k_pids, &policy.pids_limit, "a positive number of processes"}};
  for (const auto& [key, pattern, target, expected] : fields) {
    auto value = limits[key];
    if (!value || value.IsNull()) continue;
    auto path = fmt::format("containers.limits.{}", key);
    KILN_TRY(auto text, reader.scalar(value, path));
    if (!std::regex_match(text, *pattern))
      return reader.error(value, "{}: '{}' is not {}", path, text, expected);
    *target = text;
  }
  return {};
}

Result<std::vector<std::string>> read_words(const Reader& reader, const YAML::Node& node,
                                            const std::string& path) {
  std::vector<std::string> words;
  if (!node || node.IsNull()) return words;
  if (!node.IsSequence()) return reader.error(node, "{}: expected a list", path);
  for (const auto& item : node) {
    KILN_TRY(auto word, reader.scalar(item, path));
    if (word.empty()) return reader.error(item, "{}: empty entry", path);
    words.push_back(word);
  }
  return words;
}

fs::path resolve(const Reader& reader, const std::string& path) {
  fs::path resolved = path;
  if (resolved.is_relative()) resolved = reader.file().parent_path() / resolved;
  return resolved;
}

// host_store: a SQLite file (relative: to kiln.yml) or a postgresql:// URL shared by a fleet
// (docs/scale-out.md#gpus-across-hosts); host_store_password_file: the database's password.
Status read_host_store(const Reader& reader, const YAML::Node& root, HostConfig& config) {
  if (auto store = root["host_store"]; store && !store.IsNull()) {
    KILN_TRY(auto text, reader.scalar(store, "host_store"));
    if (text.empty()) return reader.error(store, "host_store: must not be empty");
    if (store::is_postgres_url(text)) {
      if (auto checked = store::check_postgres_url(text, "host_store_password_file"); !checked)
        return reader.error(store, "host_store: {}", checked.error().message);
      config.host_store = store::HostStoreLocation::from_setting(text);
    } else {
      config.host_store = store::HostStoreLocation{.file = resolve(reader, text)};
    }
  }
  if (auto file = root["host_store_password_file"]; file && !file.IsNull()) {
    KILN_TRY(auto text, reader.scalar(file, "host_store_password_file"));
    if (!config.host_store || config.host_store->url.empty())
      return reader.error(file,
                          "host_store_password_file: only for a host_store that is a "
                          "postgresql:// URL");
    if (text.empty()) return reader.error(file, "host_store_password_file: must not be empty");
    config.host_store->password_file = resolve(reader, text);
  }
  return {};
}

// serve.repositories.NAME.checks: api_url, and either token or the three keys of a GitHub App.
Result<ServeChecks> read_checks(const Reader& reader, const YAML::Node& node,
                                const std::string& path) {
  KILN_TRY_VOID(reader.mapping(
      node, path, {"api_url", "token", "app_id", "installation_id", "private_key_file"}));
  ServeChecks checks;
  if (auto url = node["api_url"]; url && !url.IsNull()) {
    KILN_TRY(checks.api_url, reader.scalar(url, path + ".api_url"));
  }
  if (!checks.api_url.starts_with("http://") && !checks.api_url.starts_with("https://"))
    return reader.error(node["api_url"] ? node["api_url"] : node,
                        "{}: api_url is required, an http:// or https:// URL", path);
  if (auto token = node["token"]; token && !token.IsNull()) {
    KILN_TRY(checks.token, reader.scalar(token, path + ".token"));
  }
  int app_keys = 0;
  for (const char* key : {"app_id", "installation_id"}) {
    auto value = node[key];
    if (!value || value.IsNull()) continue;
    ++app_keys;
    KILN_TRY(auto text, reader.scalar(value, fmt::format("{}.{}", path, key)));
    std::int64_t number = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec != std::errc() || end != text.data() + text.size() || number <= 0)
      return reader.error(value, "{}.{}: expected a positive number, got '{}'", path, key, text);
    (std::string_view(key) == "app_id" ? checks.app_id : checks.installation_id) = number;
  }
  if (auto key = node["private_key_file"]; key && !key.IsNull()) {
    ++app_keys;
    KILN_TRY(auto text, reader.scalar(key, path + ".private_key_file"));
    if (text.empty()) return reader.error(key, "{}.private_key_file: must not be empty", path);
    checks.private_key_file = resolve(reader, text);
    checks.key_where = reader.where(key);
  }
  if (!checks.token.empty() && app_keys > 0)
    return reader.error(node,
                        "{}: give either token or app_id, installation_id and "
                        "private_key_file, not both",
                        path);
  if (checks.token.empty() && app_keys != 3)
    return reader.error(node,
                        "{}: needs token, or app_id, installation_id and private_key_file "
                        "(a GitHub App)",
                        path);
  return checks;
}

// gpus.cost_per_hour: {MODEL: PRICE}, prices non-negative numbers.
Status read_prices(const Reader& reader, const YAML::Node& node,
                   std::map<std::string, double>& prices) {
  if (!node || node.IsNull()) return {};
  if (!node.IsMap())
    return reader.error(node, "gpus.cost_per_hour: expected a mapping of GPU model to price");
  for (const auto& entry : node) {
    KILN_TRY(auto model, reader.scalar(entry.first, "gpus.cost_per_hour"));
    KILN_TRY(auto text, reader.scalar(entry.second, "gpus.cost_per_hour." + model));
    double price = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), price);
    if (model.empty() || ec != std::errc() || end != text.data() + text.size() || !(price >= 0))
      return reader.error(entry.second,
                          "gpus.cost_per_hour.{}: expected a price per GPU-hour (a number >= 0), "
                          "got '{}'",
                          model, text);
    prices[model] = price;
  }
  return {};
}

// Errors about the entry as a whole (a missing key, a bad name) point at its name: `key`.
Status read_serve_repository(const Reader& reader, const YAML::Node& key, const YAML::Node& node,
                             ServeConfig& serve) {
  const auto name = key.as<std::string>();
  const auto path = "serve.repositories." + name;
  if (!node.IsMap()) return reader.error(node, "{}: expected a mapping", path);
  KILN_TRY_VOID(reader.mapping(
      node, path,
      {"clone_url", "webhook_secret", "trusted_authors", "statuses", "checks", "poll"}));
  ServeRepository repo;
  repo.name = name;
  if (name.find('/') == std::string::npos)
    return reader.error(key, "{}: the name must be owner/name, as the forge sends it", path);
  if (auto url = node["clone_url"]; url && !url.IsNull()) {
    KILN_TRY(repo.clone_url, reader.scalar(url, path + ".clone_url"));
  }
  if (repo.clone_url.empty()) return reader.error(key, "{}: clone_url is required", path);
  if (auto secret = node["webhook_secret"]; secret && !secret.IsNull()) {
    KILN_TRY(repo.webhook_secret, reader.scalar(secret, path + ".webhook_secret"));
  }
  if (repo.webhook_secret.empty())
    return reader.error(key, "{}: webhook_secret is required (unsigned webhooks are refused)",
                        path);
  KILN_TRY(repo.trusted_authors,
           read_words(reader, node["trusted_authors"], path + ".trusted_authors"));
  if (auto statuses = node["statuses"]; statuses && !statuses.IsNull()) {
    KILN_TRY_VOID(reader.mapping(statuses, path + ".statuses", {"api_url", "token"}));
    if (auto url = statuses["api_url"]; url && !url.IsNull()) {
      KILN_TRY(repo.statuses_api_url, reader.scalar(url, path + ".statuses.api_url"));
    }
    if (auto token = statuses["token"]; token && !token.IsNull()) {
      KILN_TRY(repo.statuses_token, reader.scalar(token, path + ".statuses.token"));
    }
    if (repo.statuses_api_url.empty())
      return reader.error(statuses, "{}.statuses: api_url is required", path);
  }
  if (auto checks = node["checks"]; checks && !checks.IsNull()) {
    KILN_TRY(repo.checks, read_checks(reader, checks, path + ".checks"));
  }
  if (auto poll = node["poll"]; poll && !poll.IsNull()) {
    KILN_TRY_VOID(reader.mapping(poll, path + ".poll", {"branches", "interval"}));
    KILN_TRY(repo.poll_branches, read_words(reader, poll["branches"], path + ".poll.branches"));
    if (repo.poll_branches.empty())
      return reader.error(poll, "{}.poll: branches lists no branch to watch", path);
    for (auto& branch : repo.poll_branches)
      if (branch.starts_with("refs/heads/")) branch = branch.substr(11);
    if (auto interval = poll["interval"]; interval && !interval.IsNull()) {
      KILN_TRY(auto text, reader.scalar(interval, path + ".poll.interval"));
      auto duration = parse_duration(text);
      if (!duration)
        return reader.error(interval, "{}.poll.interval: {}", path, duration.error().message);
      if (*duration < std::chrono::seconds(1))
        return reader.error(interval, "{}.poll.interval: {} is shorter than 1s", path, text);
      repo.poll_interval = *duration;
    }
  }
  serve.repositories.push_back(std::move(repo));
  return {};
}

Status read_serve_bisect(const Reader& reader, const YAML::Node& node, ServeBisect& bisect) {
  KILN_TRY_VOID(reader.mapping(node, "serve.bisect", {"on_regression", "max_commits", "repeat"}));
  if (auto on = node["on_regression"]; on && !on.IsNull()) {
    KILN_TRY(auto text, reader.scalar(on, "serve.bisect.on_regression"));
    if (text != "true" && text != "false")
      return reader.error(on, "serve.bisect.on_regression: expected true or false, got '{}'", text);
    bisect.on_regression = text == "true";
  }
  for (auto [key, target, most] : {std::tuple{"max_commits", &bisect.max_commits, 100000},
                                   std::tuple{"repeat", &bisect.repeat, 20}}) {
    auto value = node[key];
    if (!value || value.IsNull()) continue;
    KILN_TRY(auto text, reader.scalar(value, fmt::format("serve.bisect.{}", key)));
    int number = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec != std::errc() || end != text.data() + text.size() || number < 1 || number > most)
      return reader.error(value, "serve.bisect.{}: expected a number from 1 to {}, got '{}'", key,
                          most, text);
    *target = number;
  }
  return {};
}

Status read_serve(const Reader& reader, const YAML::Node& node, ServeConfig& serve) {
  KILN_TRY_VOID(reader.mapping(node, "serve",
                               {"listen", "public_url", "store", "store_password_file", "work_dir",
                                "api_tokens", "max_concurrent_runs", "shutdown_grace",
                                "trusted_authors", "repositories", "tls", "on_restart", "bisect"}));
  if (!node || node.IsNull()) return {};
  if (auto listen = node["listen"]; listen && !listen.IsNull()) {
    KILN_TRY(auto text, reader.scalar(listen, "serve.listen"));
    auto colon = text.rfind(':');
    int port = -1;
    if (colon != std::string::npos) {
      auto digits = std::string_view(text).substr(colon + 1);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
      if (ec != std::errc() || end != digits.data() + digits.size()) port = -1;
    }
    if (colon == std::string::npos || colon == 0 || port < 0 || port > 65535)
      return reader.error(listen, "serve.listen: expected HOST:PORT, e.g. 127.0.0.1:8080");
    serve.listen_host = text.substr(0, colon);
    serve.listen_port = port;
  }
  if (auto url = node["public_url"]; url && !url.IsNull()) {
    KILN_TRY(serve.public_url, reader.scalar(url, "serve.public_url"));
    while (!serve.public_url.empty() && serve.public_url.back() == '/') serve.public_url.pop_back();
  }
  for (const char* key : {"store", "work_dir"}) {
    auto value = node[key];
    if (!value || value.IsNull()) continue;
    KILN_TRY(auto text, reader.scalar(value, fmt::format("serve.{}", key)));
    if (text.empty()) return reader.error(value, "serve.{}: must not be empty", key);
    if (std::string_view(key) == "store" && store::is_postgres_url(text)) {
      if (auto checked = store::check_postgres_url(text); !checked)
        return reader.error(value, "serve.store: {}", checked.error().message);
      serve.store_url = text;
      continue;
    }
    (std::string_view(key) == "store" ? serve.store : serve.work_dir) = resolve(reader, text);
  }
  if (auto file = node["store_password_file"]; file && !file.IsNull()) {
    KILN_TRY(auto text, reader.scalar(file, "serve.store_password_file"));
    if (serve.store_url.empty())
      return reader.error(file,
                          "serve.store_password_file: only for a store that is a "
                          "postgresql:// URL");
    if (text.empty()) return reader.error(file, "serve.store_password_file: must not be empty");
    serve.store_password_file = resolve(reader, text);
  }
  KILN_TRY(serve.api_tokens, read_words(reader, node["api_tokens"], "serve.api_tokens"));
  KILN_TRY(serve.trusted_authors,
           read_words(reader, node["trusted_authors"], "serve.trusted_authors"));
  if (auto limit = node["max_concurrent_runs"]; limit && !limit.IsNull()) {
    KILN_TRY(auto text, reader.scalar(limit, "serve.max_concurrent_runs"));
    int value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 1)
      return reader.error(limit, "serve.max_concurrent_runs: expected a number of at least 1");
    serve.max_concurrent_runs = value;
  }
  if (auto grace = node["shutdown_grace"]; grace && !grace.IsNull()) {
    KILN_TRY(auto text, reader.scalar(grace, "serve.shutdown_grace"));
    auto duration = parse_duration(text);
    if (!duration) return reader.error(grace, "serve.shutdown_grace: {}", duration.error().message);
    serve.shutdown_grace = *duration;
  }
  if (auto restart = node["on_restart"]; restart && !restart.IsNull()) {
    KILN_TRY(auto text, reader.scalar(restart, "serve.on_restart"));
    if (text != "requeue" && text != "fail")
      return reader.error(restart, "serve.on_restart: expected requeue or fail, got '{}'", text);
    serve.on_restart = text == "requeue" ? OnRestart::requeue : OnRestart::fail;
  }
  if (auto bisect = node["bisect"]; bisect && !bisect.IsNull()) {
    KILN_TRY_VOID(read_serve_bisect(reader, bisect, serve.bisect));
  }
  if (auto tls = node["tls"]; tls && !tls.IsNull()) {
    KILN_TRY_VOID(reader.mapping(tls, "serve.tls", {"cert", "key"}));
    ServeTls files;
    for (const char* key : {"cert", "key"}) {
      auto value = tls[key];
      if (!value || value.IsNull())
        return reader.error(tls, "serve.tls: {} is required (a PEM file)", key);
      KILN_TRY(auto text, reader.scalar(value, fmt::format("serve.tls.{}", key)));
      if (text.empty()) return reader.error(value, "serve.tls.{}: must not be empty", key);
      const bool is_cert = std::string_view(key) == "cert";
      (is_cert ? files.cert : files.key) = resolve(reader, text);
      (is_cert ? files.cert_where : files.key_where) = reader.where(value);
    }
    serve.tls = std::move(files);
  }
  if (auto repos = node["repositories"]; repos && !repos.IsNull()) {
    if (!repos.IsMap()) return reader.error(repos, "serve.repositories: expected a mapping");
    for (const auto& entry : repos) {
      KILN_TRY_VOID(read_serve_repository(reader, entry.first, entry.second, serve));
    }
  }
  return {};
}

Status read_hipcheck(const Reader& reader, const YAML::Node& node, HipcheckConfig& config) {
  KILN_TRY_VOID(reader.mapping(node, "hipcheck", {"rocm_version", "hip_macros"}));
  if (!node || node.IsNull()) return {};
  if (auto version = node["rocm_version"]; version && !version.IsNull()) {
    KILN_TRY(auto text, reader.scalar(version, "hipcheck.rocm_version"));
    auto choice = hipcheck::choose_rocm_version(text);
    if (!choice.version) return reader.error(version, "hipcheck.rocm_version: {}", choice.error);
    config.rocm_version = choice.version;
  }
  if (auto macros = node["hip_macros"]; macros && !macros.IsNull()) {
    if (!macros.IsSequence()) return reader.error(macros, "hipcheck.hip_macros: expected a list");
    for (const auto& item : macros) {
      KILN_TRY(auto name, reader.scalar(item, "hipcheck.hip_macros"));
      bool identifier = !name.empty() && !(name[0] >= '0' && name[0] <= '9') &&
                        name.find_first_not_of(
                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                            "0123456789_") == std::string::npos;
      if (!identifier)
        return reader.error(item, "hipcheck.hip_macros: '{}' is not a macro name", name);
      config.hip_macros.push_back(name);
    }
  }
  return {};
}

}  // namespace

Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  auto bad = [&] {
    return fail(ErrorCode::invalid_input, "'{}' is not a duration (e.g. 500ms, 10s, 2m, 7d)", text);
  };
  std::size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (digits == 0 || ec != std::errc() || end != text.data() + digits) return bad();
  auto unit = text.substr(digits);
  double ms = 0;
  if (unit == "ms") {
    ms = value;
  } else if (unit == "s") {
    ms = value * 1000;
  } else if (unit == "m") {
    ms = value * 60'000;
  } else if (unit == "h") {
    ms = value * 3'600'000;
  } else if (unit == "d") {
    ms = value * 86'400'000;
  } else {
    return bad();
  }
  return std::chrono::milliseconds(static_cast<long long>(ms));
}

Result<HostConfig> parse_host_config(std::string_view text, const fs::path& file) {
  Reader reader(file);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return make_error(ErrorCode::invalid_input, e.msg,
                      SourceLocation{file.string(), e.mark.line + 1, e.mark.column + 1});
  }
  HostConfig config;
  config.file = file;
  if (!root || root.IsNull()) return config;
  try {
    KILN_TRY_VOID(
        reader.mapping(root, "kiln.yml",
                       {"host_store", "labels", "gpus", "containers", "debug", "serve", "hipcheck",
                        "actions", "jobs", "host_store_password_file", "retry"}));
    KILN_TRY_VOID(read_served_labels(reader, root["labels"], config.gpu_labels));
    KILN_TRY_VOID(read_hipcheck(reader, root["hipcheck"], config.hipcheck));
    if (auto actions = root["actions"]; actions && !actions.IsNull()) {
      KILN_TRY_VOID(reader.mapping(actions, "actions", {"url"}));
      if (auto url = actions["url"]; url && !url.IsNull()) {
        KILN_TRY(config.actions_url, reader.scalar(url, "actions.url"));
        const auto& u = config.actions_url;
        if (!u.starts_with("https://") && !u.starts_with("http://") && !u.starts_with("file://") &&
            !u.starts_with("ssh://"))
          return reader.error(url,
                              "actions.url: '{}' is not an https://, http://, ssh:// or "
                              "file:// URL",
                              u);
      }
    }
    KILN_TRY_VOID(read_containers(reader, root["containers"], config));
    KILN_TRY_VOID(read_debug(reader, root["debug"], config));
    KILN_TRY_VOID(read_jobs(reader, root["jobs"], config));
    KILN_TRY_VOID(read_retry(reader, root["retry"], config));
    KILN_TRY_VOID(read_host_store(reader, root, config));
    if (auto gpus = root["gpus"]; gpus && !gpus.IsNull()) {
      KILN_TRY_VOID(
          reader.mapping(gpus, "gpus", {"labels", "health", "telemetry", "cost_per_hour"}));
      KILN_TRY_VOID(read_prices(reader, gpus["cost_per_hour"], config.gpu_prices));
      KILN_TRY_VOID(read_labels(reader, gpus["labels"], config.gpu_labels));
      KILN_TRY_VOID(read_health(reader, gpus["health"], config.gpu_health));
      KILN_TRY_VOID(read_telemetry(reader, gpus["telemetry"], config.gpu_telemetry));
    }
    KILN_TRY_VOID(read_serve(reader, root["serve"], config.serve));
  } catch (const YAML::Exception& e) {
    return make_error(ErrorCode::invalid_input, e.msg,
                      SourceLocation{file.string(), e.mark.line + 1, e.mark.column + 1});
  }
  return config;
}

Result<HostConfig> load_host_config(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return make_error(ErrorCode::not_found, "cannot read the host configuration",
                      SourceLocation{file.string(), 0, 0});
  std::ostringstream text;
  text << in.rdbuf();
  return parse_host_config(text.str(), file);
}

Result<HostConfig> find_host_config(const std::optional<fs::path>& explicit_file) {
  if (explicit_file) return load_host_config(*explicit_file);
  if (const char* env = std::getenv("KILN_CONFIG"); env && *env) return load_host_config(env);
  std::error_code ec;
  if (fs::exists("/etc/kiln/kiln.yml", ec)) return load_host_config("/etc/kiln/kiln.yml");
  return HostConfig{};
}

}  // namespace kiln::config
