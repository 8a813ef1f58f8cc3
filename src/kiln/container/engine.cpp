#include "kiln/container/engine.h"

#include <sys/resource.h>

#include <algorithm>

namespace kiln::container {
namespace {

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  return text;
}

// The last line of an engine's stderr says what went wrong; the rest is progress.
std::string last_lines(const std::string& text, std::size_t count = 3) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    // podman logs systemd connection failures of healthcheck timers on hosts without systemd:
    // kiln runs the checks itself, so they are noise here.
    if (!line.empty() && line.find("systemd connection") == std::string::npos)
      lines.push_back(line);
    start = end + 1;
  }
  if (lines.size() > count) lines.erase(lines.begin(), lines.end() - static_cast<long>(count));
  std::string out;
  for (const auto& line : lines) out += (out.empty() ? "" : "; ") + line;
  return out;
}

}  // namespace

Result<Engine> detect_engine(std::string_view preference, std::string_view path_list) {
  auto find = [&](std::string_view program) -> Result<Engine> {
    auto found = core::find_executable(program, path_list);
    if (!found)
      return fail(ErrorCode::not_found,
                  "container engine '{}' was not found in PATH (install podman, or choose one "
                  "with --container-engine or KILN_CONTAINER_ENGINE)",
                  program);
    Engine engine;
    engine.program = std::filesystem::absolute(*found);
    std::string base = found->filename().string();
    engine.kind =
        base.find("docker") != std::string::npos ? EngineKind::docker : EngineKind::podman;
    return engine;
  };
  if (preference.empty() || preference == "auto") {
    if (auto podman = find("podman")) return podman;
    if (auto docker = find("docker")) return docker;
    return fail(ErrorCode::not_found,
                "this job needs a container engine: neither podman nor docker is in PATH");
  }
  if (preference == "podman" || preference == "docker" ||
      preference.find('/') != std::string_view::npos) {
    auto engine = find(preference);
    if (engine && preference.find('/') != std::string_view::npos) {
      std::string base = std::filesystem::path(preference).filename().string();
      if (base.find("podman") == std::string::npos && base.find("docker") == std::string::npos)
        return fail(ErrorCode::invalid_input,
                    "container engine '{}': the program's name must say podman or docker",
                    preference);
    }
    return engine;
  }
  return fail(ErrorCode::invalid_input,
              "unknown container engine '{}' (expected podman, docker, auto or a path)",
              preference);
}

Result<PullPolicy> parse_pull_policy(std::string_view text) {
  if (text == "never") return PullPolicy::never;
  if (text == "missing") return PullPolicy::missing;
  if (text == "always") return PullPolicy::always;
  return fail(ErrorCode::invalid_input,
              "unknown pull policy '{}' (expected never, missing or always)", text);
}

std::string_view to_string(PullPolicy policy) {
  switch (policy) {
    case PullPolicy::never:
      return "never";
    case PullPolicy::missing:
      return "missing";
    case PullPolicy::always:
      return "always";
  }
  return "missing";
}

std::vector<std::string> label_args(const Owner& owner) {
  return {"--label", fmt::format("{}={}", k_label_run, owner.run),
          "--label", fmt::format("{}={}", k_label_job, owner.job),
          "--label", fmt::format("{}={}", k_label_owner_pid, owner.pid),
          "--label", fmt::format("{}={}", k_label_owner_start, owner.start_time),
          "--label", fmt::format("{}={}", k_label_owner_host, owner.host)};
}

bool is_mutable_tag(std::string_view image) {
  if (image.find('@') != std::string_view::npos) return false;  // pinned by digest
  auto slash = image.rfind('/');
  auto colon = image.rfind(':');
  if (colon == std::string_view::npos || (slash != std::string_view::npos && colon < slash))
    return true;  // no tag: "latest"
  return image.substr(colon + 1) == "latest";
}

EngineCli::EngineCli(Engine engine, Runner runner)
    : engine_(std::move(engine)), runner_(std::move(runner)) {
  if (!runner_) {
    runner_ = [](const std::vector<std::string>& argv, const std::optional<core::Environment>& env,
                 std::chrono::milliseconds timeout) {
      return core::run_command(argv, {}, env, timeout);
    };
  }
}

Result<std::string> EngineCli::run(const std::vector<std::string>& args,
                                   std::chrono::milliseconds timeout,
                                   const std::optional<core::Environment>& env) const {
  std::vector<std::string> argv{engine_.program.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto output = runner_(argv, env, timeout);
  if (!output) {
    auto error = output.error();
    error.message =
        fmt::format("{} {}: {}", engine_.name(), args.empty() ? "" : args.front(), error.message);
    return std::unexpected(error);
  }
  if (!output->ok())
    return fail(ErrorCode::io_error, "{} {} failed ({}): {}", engine_.name(),
                args.empty() ? "" : args.front(), output->status.to_string(),
                last_lines(output->err));
  return trim(output->out);
}

Result<ImageInfo> EngineCli::ensure_image(const std::string& image, PullPolicy policy,
                                          const std::optional<std::filesystem::path>& authfile,
                                          std::chrono::milliseconds pull_timeout) {
  ImageInfo info;
  info.reference = image;
  // Both engines print "ID DIGESTS" and the image's ENV (a line each) for an image they have,
  // and fail for one they do not.
  auto inspect = [&]() {
    return run(
        {"image", "inspect", "--format",
         "{{.Id}} {{join .RepoDigests \",\"}}\n{{range .Config.Env}}{{println .}}{{end}}", image},
        std::chrono::seconds(60));
  };
  auto local =
      policy == PullPolicy::always ? Result<std::string>(std::unexpected(Error{})) : inspect();
  if (!local) {
    if (policy == PullPolicy::never)
      return fail(ErrorCode::not_found,
                  "image '{}' is not on this host and the pull policy is 'never'", image);
    std::vector<std::string> args{"pull"};
    if (authfile) {
      if (engine_.kind == EngineKind::podman) {
        args.push_back("--authfile");
        args.push_back(authfile->string());
      } else {
        // docker reads credentials from a config directory (config.json).
        args.insert(args.begin(), {"--config", authfile->parent_path().string()});
      }
    }
    if (engine_.kind == EngineKind::podman) args.push_back("--quiet");
    args.push_back(image);
    auto pulled = run(args, pull_timeout);
    if (!pulled) {
      auto error = pulled.error();
      if (error.code == ErrorCode::timeout)
        return fail(ErrorCode::timeout, "pulling image '{}' did not finish within {} s", image,
                    pull_timeout.count() / 1000);
      return fail(ErrorCode::io_error, "cannot pull image '{}': {}", image, error.message);
    }
    info.pulled = true;
    local = inspect();
    if (!local) return std::unexpected(local.error());
  }
  std::string first = local->substr(0, local->find('\n'));
  auto space = first.find(' ');
  info.id = first.substr(0, space);
  if (space != std::string::npos) {
    // An image tagged under several names has a digest per repository: the one of the
    // reference's own repository, else the first.
    std::string digests = first.substr(space + 1);
    std::string repository = image.substr(0, image.find('@'));
    if (auto colon = repository.rfind(':');
        colon != std::string::npos && repository.find('/', colon) == std::string::npos)
      repository.erase(colon);
    std::size_t start = 0;
    while (start < digests.size()) {
      auto end = digests.find(',', start);
      if (end == std::string::npos) end = digests.size();
      std::string digest = digests.substr(start, end - start);
      if (info.digest.empty()) info.digest = digest;
      if (digest.starts_with(repository + "@") || digest.ends_with("/" + repository) ||
          digest.find("/" + repository + "@") != std::string::npos) {
        info.digest = digest;
        break;
      }
      start = end + 1;
    }
  }
  for (std::size_t start = first.size() + 1; start < local->size();) {
    auto end = local->find('\n', start);
    if (end == std::string::npos) end = local->size();
    if (end > start) info.env.push_back(local->substr(start, end - start));
    start = end + 1;
  }
  if (!info.id.empty() && info.id.find(':') == std::string::npos) info.id = "sha256:" + info.id;
  return info;
}

std::vector<std::string> EngineCli::run_args(const RunSpec& spec) const {
  std::vector<std::string> args{"run"};
  if (spec.detach) args.push_back("-d");
  if (spec.remove_on_exit) args.push_back("--rm");
  args.push_back("--name");
  args.push_back(spec.name);
  auto labels = label_args(spec.owner);
  args.insert(args.end(), labels.begin(), labels.end());
  if (spec.network) {
    args.push_back("--network");
    args.push_back(*spec.network);
    for (const auto& alias : spec.network_aliases) {
      args.push_back("--network-alias");
      args.push_back(alias);
    }
  }
  if (spec.init) args.push_back("--init");
  for (const auto& key : spec.env_keys) {
    args.push_back("-e");
    args.push_back(key);
  }
  for (const auto& volume : spec.volumes) {
    args.push_back("-v");
    args.push_back(volume);
  }
  for (const auto& port : spec.ports) {
    args.push_back("-p");
    args.push_back(port);
  }
  if (spec.workdir) {
    args.push_back("-w");
    args.push_back(spec.workdir->string());
  }
  args.insert(args.end(), spec.options.begin(), spec.options.end());
  if (spec.entrypoint) {
    args.push_back("--entrypoint");
    args.push_back(*spec.entrypoint);
  }
  args.push_back(spec.image);
  args.insert(args.end(), spec.command.begin(), spec.command.end());
  return args;
}

Result<std::string> EngineCli::start(const RunSpec& spec) const {
  std::optional<core::Environment> env;
  if (!spec.env_keys.empty()) {
    env = core::current_environment();
    for (const auto& [key, value] : spec.env) (*env)[key] = value;
  }
  return run(run_args(spec), std::chrono::minutes(2), env);
}

Result<core::Subprocess> EngineCli::spawn_attached(const RunSpec& spec) const {
  core::SpawnOptions options;
  options.argv = {engine_.program.string()};
  auto args = run_args(spec);
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  if (!spec.env_keys.empty()) {
    options.env = core::current_environment();
    for (const auto& [key, value] : spec.env) (*options.env)[key] = value;
  }
  options.output = core::OutputMode::merged;
  auto spawned = core::Subprocess::spawn(std::move(options));
  if (!spawned)
    return fail(ErrorCode::io_error, "{} run: {}", engine_.name(), spawned.error().message);
  return spawned;
}

Result<std::string> EngineCli::create_network(const std::string& name, const Owner& owner) const {
  std::vector<std::string> args{"network", "create"};
  auto labels = label_args(owner);
  args.insert(args.end(), labels.begin(), labels.end());
  args.push_back(name);
  return run(args);
}

Status EngineCli::remove_container(const std::string& id) const {
  // -v: the anonymous volumes of the container (an image's VOLUME) go with it.
  std::vector<std::string> args{"rm", "-f", "-v"};
  if (engine_.kind == EngineKind::podman) {
    args.push_back("-t");
    args.push_back("0");
    args.push_back("--ignore");
  }
  args.push_back(id);
  auto removed = run(args, std::chrono::minutes(1));
  if (!removed && removed.error().message.find("No such container") == std::string::npos &&
      removed.error().message.find("no such container") == std::string::npos)
    return std::unexpected(removed.error());
  return {};
}

Status EngineCli::remove_network(const std::string& name) const {
  std::vector<std::string> args{"network", "rm"};
  if (engine_.kind == EngineKind::podman) args.push_back("-f");
  args.push_back(name);
  auto removed = run(args, std::chrono::minutes(1));
  if (!removed && removed.error().message.find("not found") == std::string::npos &&
      removed.error().message.find("No such network") == std::string::npos)
    return std::unexpected(removed.error());
  return {};
}

std::string EngineCli::tail_logs(const std::string& id, int lines) const {
  std::vector<std::string> argv{engine_.program.string(), "logs", "--tail", std::to_string(lines),
                                id};
  auto output = runner_(argv, std::nullopt, std::chrono::seconds(30));
  if (!output) return "(no logs: " + output.error().message + ")";
  return trim(output->out + output->err);
}

std::vector<std::string> default_ulimit_args(bool sets_nofile, bool sets_nproc) {
  std::vector<std::string> args;
  rlimit limit{};
  if (!sets_nofile && getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_max != RLIM_INFINITY) {
    args.push_back("--ulimit");
    args.push_back(fmt::format("nofile={}:{}", limit.rlim_cur, limit.rlim_max));
  }
  if (!sets_nproc && getrlimit(RLIMIT_NPROC, &limit) == 0) {
    // podman (4.3) runs the OCI runtime with RLIMIT_NPROC at most 32768, so a higher limit
    // cannot be set inside the container even when kiln's own is higher (docs/containers.md).
    constexpr rlim_t k_engine_nproc = 32768;
    rlim_t hard = std::min(limit.rlim_max, k_engine_nproc);
    rlim_t soft = std::min(limit.rlim_cur, hard);
    args.push_back("--ulimit");
    args.push_back(fmt::format("nproc={}:{}", soft, hard));
  }
  return args;
}

}  // namespace kiln::container
