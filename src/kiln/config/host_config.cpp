#include "kiln/config/host_config.h"

#include "kiln/config/reader.h"
#include "kiln/container/engine.h"
#include "kiln/store/postgres_store.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
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
using detail::read_serve;
using detail::read_words;
using detail::Reader;
using detail::resolve;

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
    if (name == "test")
      return reader.error(entry.first,
                          "retry.test: a job whose only failures are quarantined tests is already "
                          "green (class test), so there is nothing to retry; flaky tests are "
                          "quarantined by tests: quarantine: (docs/failures.md)");
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

// tests: {quarantine: {flips: 2, runs: 10, expires: 14d}}: the flip rule of quarantined tests
// (docs/failures.md "Quarantined tests"). flips 0 turns it off; a flip needs two results, so
// runs must be more than flips.
Status read_tests(const Reader& reader, const YAML::Node& node, HostConfig& config) {
  KILN_TRY_VOID(reader.mapping(node, "tests", {"quarantine"}));
  if (!node || node.IsNull()) return {};
  auto quarantine = node["quarantine"];
  KILN_TRY_VOID(reader.mapping(quarantine, "tests.quarantine", {"flips", "runs", "expires"}));
  if (!quarantine || quarantine.IsNull()) return {};
  auto& policy = config.test_quarantine;
  auto number = [&](const char* key, int low, int high, int& into) -> Status {
    auto value = quarantine[key];
    if (!value || value.IsNull()) return {};
    KILN_TRY(auto text, reader.scalar(value, fmt::format("tests.quarantine.{}", key)));
    int parsed = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (ec != std::errc{} || end != text.data() + text.size() || parsed < low || parsed > high)
      return reader.error(value, "tests.quarantine.{}: '{}' is not a whole number from {} to {}",
                          key, text, low, high);
    into = parsed;
    return {};
  };
  KILN_TRY_VOID(number("flips", 0, 100, policy.flips));
  KILN_TRY_VOID(number("runs", 2, 1000, policy.runs));
  if (policy.flips > 0 && policy.runs <= policy.flips) {
    auto where = quarantine["runs"] ? quarantine["runs"] : quarantine["flips"];
    return reader.error(where,
                        "tests.quarantine: runs ({}) must be more than flips ({}): {} flips need "
                        "{} results",
                        policy.runs, policy.flips, policy.flips, policy.flips + 1);
  }
  if (auto expires = quarantine["expires"]; expires && !expires.IsNull()) {
    KILN_TRY(auto text, reader.scalar(expires, "tests.quarantine.expires"));
    auto duration = parse_duration(text);
    if (!duration)
      return reader.error(expires, "tests.quarantine.expires: {}", duration.error().message);
    if (*duration < std::chrono::minutes(1) || *duration > std::chrono::hours(24 * 365))
      return reader.error(expires, "tests.quarantine.expires: '{}' is not between 1m and 365d",
                          text);
    policy.expires = duration->count();
  }
  return {};
}

// jobs.limits: {memory: 16G, pids: 4096, cpus: 8}: each host job's cgroup (core/cgroup.h).
Status read_job_limits(const Reader& reader, const YAML::Node& node, HostConfig& config) {
  KILN_TRY_VOID(reader.mapping(node, "jobs.limits", {"memory", "pids", "cpus"}));
  if (!node || node.IsNull()) return {};
  core::CgroupLimits limits;
  if (auto memory = node["memory"]; memory && !memory.IsNull()) {
    KILN_TRY(auto text, reader.scalar(memory, "jobs.limits.memory"));
    auto bytes = parse_size(text);
    if (!bytes) return reader.error(memory, "jobs.limits.memory: {}", bytes.error().message);
    if (*bytes < (4u << 20))
      return reader.error(memory,
                          "jobs.limits.memory: '{}' is less than 4M, too little to run a "
                          "shell",
                          text);
    limits.memory_bytes = *bytes;
  }
  if (auto pids = node["pids"]; pids && !pids.IsNull()) {
    KILN_TRY(auto text, reader.scalar(pids, "jobs.limits.pids"));
    static const std::regex k_count(R"([1-9][0-9]{0,8})");
    if (!std::regex_match(text, k_count))
      return reader.error(pids,
                          "jobs.limits.pids: '{}' is not a number of processes from 1 to "
                          "999999999",
                          text);
    limits.pids = std::stoull(text);
  }
  if (auto cpus = node["cpus"]; cpus && !cpus.IsNull()) {
    KILN_TRY(auto text, reader.scalar(cpus, "jobs.limits.cpus"));
    static const std::regex k_number(R"([0-9]{1,4}(\.[0-9]{1,3})?)");
    double value = std::regex_match(text, k_number) ? std::stod(text) : 0;
    if (value < 0.01 || value > 4096)
      return reader.error(cpus,
                          "jobs.limits.cpus: '{}' is not a number of CPUs from 0.01 to 4096 "
                          "(such as 8 or 1.5)",
                          text);
    limits.cpus = value;
  }
  if (limits.any()) {
    config.job_limits = limits;
    config.job_limits_where = reader.where(node);
  }
  return {};
}

// jobs: {user: kiln-job, max_log_size: 1G}: host jobs' steps run as that unprivileged user; a
// job's log keeps at most that much.
Status read_jobs(const Reader& reader, const YAML::Node& node, HostConfig& config) {
  KILN_TRY_VOID(reader.mapping(node, "jobs", {"user", "max_log_size", "limits"}));
  if (!node || node.IsNull()) return {};
  KILN_TRY_VOID(read_job_limits(reader, node["limits"], config));
  if (auto size = node["max_log_size"]; size && !size.IsNull()) {
    KILN_TRY(auto text, reader.scalar(size, "jobs.max_log_size"));
    auto bytes = parse_size(text);
    if (!bytes) return reader.error(size, "jobs.max_log_size: {}", bytes.error().message);
    if (*bytes == 0)
      return reader.error(size, "jobs.max_log_size: must be more than 0 (a job's log of nothing)");
    config.max_log_bytes = *bytes;
  }
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

Result<std::uint64_t> parse_size(std::string_view text) {
  auto bad = [&] {
    return fail(ErrorCode::invalid_input,
                "'{}' is not a size (a whole number of bytes, or with K, M, G or T: 64K, 512M, 1G)",
                text);
  };
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return bad();
  std::string unit;
  for (const char* c = end; c != text.data() + text.size(); ++c)
    unit.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(*c))));
  int shift = 0;
  if (!unit.empty() && unit != "b") {
    const auto letter = std::string_view("kmgt").find(unit[0]);
    const auto rest = std::string_view(unit).substr(1);
    if (letter == std::string_view::npos || !(rest.empty() || rest == "b" || rest == "ib"))
      return bad();
    shift = 10 * static_cast<int>(letter + 1);
  }
  if (value > (std::uint64_t{1} << (63 - shift))) return bad();
  return value << shift;
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
    KILN_TRY_VOID(reader.mapping(
        root, "kiln.yml",
        {"host_store", "labels", "gpus", "containers", "debug", "serve", "hipcheck", "actions",
         "jobs", "host_store_password_file", "retry", "tests", "slurm", "priority"}));
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
    KILN_TRY_VOID(read_tests(reader, root["tests"], config));
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
    KILN_TRY_VOID(detail::read_slurm(reader, root["slurm"], config.slurm));
    KILN_TRY_VOID(detail::read_priority(reader, root["priority"], config.priority));
    // A pool's labels are served: through Slurm (a bare `cpu-big` would be unknown otherwise).
    if (config.slurm)
      for (const auto& pool : config.slurm->pools)
        for (const auto& label : pool.labels)
          if (!config.gpu_labels.serves(label))
            if (auto served = config.gpu_labels.serve(label, pool.where); !served)
              return std::unexpected(served.error());
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
