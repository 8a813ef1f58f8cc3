// A job's images and services (container_job.h): the pull with registry credentials, each
// container's policy-checked options, and the services with their health checks.

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "kiln/container/host_options.h"
#include "kiln/container/options.h"
#include "kiln/container/tools.h"
#include "kiln/core/text.h"
#include "kiln/core/time.h"
#include "kiln/engine/execute/container_job.h"

namespace kiln::engine {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

// The registry part of an image reference, as an auth file keys it.
std::string registry_of(std::string_view image) {
  auto slash = image.find('/');
  if (slash != std::string_view::npos) {
    std::string_view first = image.substr(0, slash);
    if (first.find('.') != std::string_view::npos || first.find(':') != std::string_view::npos ||
        first == "localhost")
      return std::string(first);
  }
  return "docker.io";
}

}  // namespace

Result<container::ImageInfo> ContainerJob::image_for(const Prepared& prepared) {
  const std::string& image = prepared.run.image;
  if (container::is_mutable_tag(image))
    setup_.log("warning",
               fmt::format("image '{}' has a mutable tag: pin a version (or a digest) so that "
                           "reruns use the same image",
                           image));
  std::optional<std::filesystem::path> authfile;
  std::filesystem::path auth_dir;
  if (prepared.credentials) {
    const auto& [user, password] = *prepared.credentials;
    // Outside the job directory, which the container sees; removed right after the pull.
    char dir_template[] = "/tmp/kiln-auth-XXXXXX";
    if (mkdtemp(dir_template) == nullptr)
      return fail(ErrorCode::io_error, "cannot create a directory for registry credentials");
    auth_dir = dir_template;
    authfile = auth_dir / "config.json";
    std::ofstream out(*authfile);
    ::chmod(authfile->c_str(), 0600);
    nlohmann::json auth = {
        {"auths", {{registry_of(image), {{"auth", core::base64(user + ":" + password)}}}}}};
    out << auth.dump();
  }
  auto info = cli_->ensure_image(image, setup_.pull_policy, authfile);
  if (!auth_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(auth_dir, ec);
  }
  if (!info) {
    auto error = info.error();
    error.where = prepared.spec->image.where;
    return std::unexpected(error);
  }
  setup_.log("kiln", fmt::format("Image {}: {}{}{}", image, info->id,
                                 info->digest.empty() ? "" : " ", info->digest));
  return info;
}

Result<container::ContainerOptions> ContainerJob::options_for(const workflow::Container& spec,
                                                              std::string_view what) {
  container::ContainerOptions options;
  if (spec.options) {
    KILN_TRY(auto text, evaluate(*spec.options));
    KILN_TRY(options, container::parse_options(text, spec.options->where, setup_.policy));
  }
  container::apply_forced(options.args, setup_.policy);
  auto adapted = container::adapt_to_host(options.args, container::this_host());
  for (const auto& note : options.notes) setup_.log("kiln", fmt::format("{}: {}", what, note));
  for (const auto& note : adapted.notes) setup_.log("kiln", fmt::format("{}: {}", what, note));
  for (const auto& line : adapted.warnings)
    setup_.log("warning", fmt::format("{}: {}", what, line));
  return options;
}

Result<ContainerJob::Prepared> ContainerJob::prepare_service(const std::string& key,
                                                             const workflow::Container& spec) {
  Prepared prepared;
  prepared.key = key;
  prepared.spec = &spec;
  KILN_TRY_VOID(prepare_common(prepared, fmt::format("service {}", key)));
  auto& run = prepared.run;
  run.name = object_name(key);
  // --network host (allowed by the host config): the host's network, not the job's.
  if (!prepared.options.host_network) run.network = network_;
  run.network_aliases = {key};
  if (prepared.options.gpus || !prepared.options.dropped_devices.empty())
    setup_.log("warning", fmt::format("service '{}': GPU options are ignored: services get no "
                                      "GPU, only the job container gets the job's grant",
                                      key));
  return prepared;
}

// In a thread of its own (start_containers): `started` is this service's record alone.
Status ContainerJob::launch_service(Prepared& prepared, Started& started) {
  const auto& run = prepared.run;
  KILN_TRY(started.image, image_for(prepared));
  setup_.log("kiln", fmt::format("Starting service {} ({})", prepared.key, run.image));
  // Marked before the start: a container that was created but failed to start is removed too.
  started.created = true;
  KILN_TRY_VOID(cli_->start(run));
  if (prepared.options.has_health_cmd && !prepared.options.no_healthcheck)
    KILN_TRY_VOID(wait_healthy(started, prepared.options));
  // Published ports: "5432/tcp -> 0.0.0.0:49153" per line.
  if (!run.ports.empty()) {
    if (auto text = cli_->run({"port", run.name})) {
      std::istringstream lines(*text);
      std::string line;
      while (std::getline(lines, line)) {
        auto arrow = line.find(" -> ");
        if (arrow == std::string::npos) continue;
        std::string inner = line.substr(0, line.find('/'));
        std::string outer = line.substr(line.rfind(':') + 1);
        started.ports.emplace(inner, outer);
      }
    }
  }
  return {};
}

Status ContainerJob::wait_healthy(const Started& service,
                                  const container::ContainerOptions& options) {
  auto duration = [](const std::optional<std::string>& text, milliseconds fallback) {
    if (!text) return fallback;
    // Checked when the options were read (container/option_values.cpp).
    return core::parse_duration(*text, core::DurationSyntax::engine).value_or(fallback);
  };
  // The engines' defaults: interval 30s, timeout 30s, 3 retries, no start period.
  milliseconds interval = duration(options.health_interval, 30s);
  milliseconds timeout = duration(options.health_timeout, 30s);
  milliseconds start_period = duration(options.health_start_period, 0ms);
  int retries = 3;
  if (options.health_retries) retries = std::max(1, std::atoi(options.health_retries->c_str()));
  // Healthy as soon as one check passes; unhealthy (a failed job) once the engine would have
  // given up: the start period and `retries` intervals, each check within its timeout.
  milliseconds limit = start_period + (interval + timeout) * retries;
  limit = std::clamp(limit, milliseconds(5s), milliseconds(15min));
  setup_.log("kiln", fmt::format("Waiting for service {} to be healthy (at most {} s)", service.key,
                                 limit.count() / 1000));
  const auto started = std::chrono::steady_clock::now();
  const milliseconds poll = std::min(interval, milliseconds(1s));
  std::string last;
  while (true) {
    if (setup_.cancel != nullptr && setup_.cancel->cancelled())
      return fail(ErrorCode::cancelled, "cancelled while waiting for service '{}'", service.key);
    if (cli_->engine().kind == container::EngineKind::podman) {
      // podman runs health checks from systemd timers, which hosts without systemd lack:
      // kiln runs the check itself. Exit 0: healthy.
      auto checked = cli_->run({"healthcheck", "run", service.name}, timeout + 10s);
      if (checked) return {};
      last = fmt::format("not healthy after {} s", std::chrono::duration_cast<std::chrono::seconds>(
                                                       std::chrono::steady_clock::now() - started)
                                                       .count());
    } else {
      auto status = cli_->run({"inspect", "--format", "{{.State.Health.Status}}", service.name});
      if (status && *status == "healthy") return {};
      if (status && *status == "unhealthy") break;
      last = status ? *status : status.error().message;
    }
    // A service that exited will never become healthy: fail now, not at the limit.
    auto state = cli_->run({"inspect", "--format", "{{.State.Status}}", service.name});
    if (state && (*state == "exited" || *state == "dead")) {
      last = "the container exited";
      break;
    }
    if (std::chrono::steady_clock::now() - started >= limit) break;
    if (setup_.cancel != nullptr) {
      if (setup_.cancel->wait_for(poll)) continue;
    } else {
      std::this_thread::sleep_for(poll);
    }
  }
  return fail(ErrorCode::timeout, "service '{}' is not healthy ({}); its last log lines:\n{}",
              service.key, last, cli_->tail_logs(service.name));
}

}  // namespace kiln::engine
