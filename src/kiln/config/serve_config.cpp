// The serve: section of kiln.yml (docs/configuration.md#serve): the listener, the store, the
// repositories with their secrets, commit statuses, check runs and polling, bisection.

#include <charconv>
#include <set>
#include <string>
#include <utility>

#include "kiln/config/reader.h"
#include "kiln/store/postgres_store.h"

namespace kiln::config::detail {
namespace {

namespace fs = std::filesystem;

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

// serve.idle and serve.busy: {run: CMD, timeout: DURATION}, idle also {after: DURATION}
// (`after` non-null). Each duration at least 1s; the command not blank.
Result<ServeHook> read_hook(const Reader& reader, const YAML::Node& node, const std::string& path,
                            std::chrono::milliseconds* after) {
  if (!node.IsMap())
    return reader.error(node, "{}: expected a mapping ({{run: COMMAND{}}})", path,
                        after ? ", after: 30m" : "");
  std::set<std::string> keys = {"run", "timeout"};
  if (after) keys.insert("after");
  KILN_TRY_VOID(reader.mapping(node, path, keys));
  ServeHook hook;
  auto run = node["run"];
  if (!run || run.IsNull())
    return reader.error(node, "{}: run is required (a command for /bin/sh -c)", path);
  KILN_TRY(hook.run, reader.scalar(run, path + ".run"));
  if (hook.run.find_first_not_of(" \t\r\n") == std::string::npos)
    return reader.error(run, "{}.run: the command is empty", path);
  for (auto [key, target] : {std::pair{"timeout", &hook.timeout}, std::pair{"after", after}}) {
    auto value = target ? node[key] : YAML::Node();
    if (!value || value.IsNull()) continue;
    KILN_TRY(auto text, reader.scalar(value, fmt::format("{}.{}", path, key)));
    auto duration = parse_duration(text);
    if (!duration) return reader.error(value, "{}.{}: {}", path, key, duration.error().message);
    if (*duration < std::chrono::seconds(1))
      return reader.error(value, "{}.{}: {} is shorter than 1s", path, key, text);
    *target = *duration;
  }
  return hook;
}

}  // namespace

Status read_serve(const Reader& reader, const YAML::Node& node, ServeConfig& serve) {
  KILN_TRY_VOID(
      reader.mapping(node, "serve",
                     {"listen", "public_url", "store", "store_password_file", "work_dir",
                      "api_tokens", "max_concurrent_runs", "shutdown_grace", "trusted_authors",
                      "repositories", "tls", "on_restart", "bisect", "dashboard", "idle", "busy"}));
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
  if (auto idle = node["idle"]; idle && !idle.IsNull()) {
    ServeIdle read;
    KILN_TRY(read.hook, read_hook(reader, idle, "serve.idle", &read.after));
    serve.idle = std::move(read);
  }
  if (auto busy = node["busy"]; busy && !busy.IsNull()) {
    KILN_TRY(serve.busy, read_hook(reader, busy, "serve.busy", nullptr));
    // It runs only when work ends an idle spell: without idle it would never run.
    if (!serve.idle)
      return reader.error(busy,
                          "serve.busy: needs serve.idle (it runs when work arrives after "
                          "the idle command ran)");
  }
  if (auto dashboard = node["dashboard"]; dashboard && !dashboard.IsNull()) {
    KILN_TRY(auto text, reader.scalar(dashboard, "serve.dashboard"));
    if (text != "public" && text != "private")
      return reader.error(dashboard, "serve.dashboard: expected public or private, got '{}'", text);
    serve.private_dashboard = text == "private";
    // Private with no token would be a server nobody can read.
    if (serve.private_dashboard && serve.api_tokens.empty())
      return reader.error(dashboard, "serve.dashboard: private needs serve.api_tokens");
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

}  // namespace kiln::config::detail
