#include "kiln/engine/execute/container_job.h"
#include "kiln/core/run_as.h"
#include "kiln/engine/execute/container_step_launcher.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/container/cleanup.h"
#include "kiln/container/gpu_flags.h"
#include "kiln/container/host_options.h"
#include "kiln/container/options.h"
#include "kiln/container/tools.h"
#include "kiln/exec/process_tracker.h"
#include "kiln/store/process_identity.h"

namespace kiln::engine {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

// Where the step helper is mounted in the job container.
constexpr std::string_view k_helper_in_container = "/.kiln/step-helper";

constexpr std::string_view k_default_path =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

std::string random_suffix() {
  std::random_device device;
  return fmt::format("{:06x}", device() & 0xffffff);
}

std::string safe(std::string_view text) {
  std::string out;
  for (char c : text) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
    out.push_back(ok ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : '_');
  }
  return out.substr(0, 40);
}

// One sweep per kiln process, before its first container job.
std::once_flag g_swept;

constexpr std::string_view k_helper_dir_prefix = "kiln-steps-";

// /tmp/kiln-steps-<pid>-<start>-XXXXXX of kiln processes that are gone.
void remove_orphan_helper_dirs() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/tmp", ec)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with(k_helper_dir_prefix)) continue;
    store::ProcessIdentity owner;
    if (std::sscanf(name.c_str() + k_helper_dir_prefix.size(), "%d-%ld", &owner.pid,
                    &owner.start_time) != 2)
      continue;
    if (store::is_process_alive(owner)) continue;
    std::filesystem::remove_all(entry.path(), ec);
  }
}

}  // namespace

ContainerJob::ContainerJob(ContainerJobSetup setup)
    : setup_(std::move(setup)), suffix_(random_suffix()) {}

ContainerJob::~ContainerJob() { stop(); }

Result<std::string> ContainerJob::evaluate(const workflow::Text& text) const {
  return expr::interpolate(text.value, *setup_.context, text.where);
}

std::string ContainerJob::object_name(std::string_view what) const {
  return fmt::format("kiln-{}-{}-{}-{}", setup_.owner.run, safe(setup_.owner.job), safe(what),
                     suffix_);
}

// The job container's `run` without -d (EngineCli::spawn_attached), pumped by a thread of its
// own until it ends; its last output lines say why when the container does not start.
struct ContainerJob::Attached {
  core::Subprocess process;
  std::thread pump;
  std::mutex mutex;
  std::condition_variable ended_cv;
  bool ended = false;                      // guarded by mutex
  std::deque<std::string> output;          // guarded by mutex: the last lines
  std::optional<core::ExitStatus> status;  // set before ended

  explicit Attached(core::Subprocess spawned) : process(std::move(spawned)) {
    pump = std::thread([this] {
      auto pumped = process.pump([this](core::Stream, std::string_view line, bool) {
        std::lock_guard lock(mutex);
        output.emplace_back(line);
        if (output.size() > 20) output.pop_front();
      });
      std::lock_guard lock(mutex);
      if (pumped && *pumped == core::Subprocess::PumpResult::finished) status = process.status();
      ended = true;
      ended_cv.notify_all();
    });
  }
  ~Attached() {
    if (pump.joinable()) {
      // The engine's process ends with the container; whatever keeps it, it goes now.
      if (!wait_for(std::chrono::seconds(0))) ::kill(-process.pid(), SIGKILL);
      pump.join();
    }
  }
  bool wait_for(std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex);
    return ended_cv.wait_for(lock, limit, [this] { return ended; });
  }
  std::string last_lines() {
    std::lock_guard lock(mutex);
    std::string text;
    for (const auto& line : output) text += (text.empty() ? "" : "\n") + line;
    return text;
  }
};

Status ContainerJob::start() {
  const auto begin = std::chrono::steady_clock::now();
  const char* path = std::getenv("PATH");
  KILN_TRY(auto engine, container::detect_engine(setup_.engine, path ? path : ""));
  cli_ = std::make_unique<container::EngineCli>(engine);
  // The sweep of what a dead kiln left behind runs beside this job's start: it removes only
  // objects whose owner is gone, never this job's.
  std::future<std::pair<Result<container::SweepResult>, milliseconds>> sweep;
  std::call_once(g_swept, [&] {
    sweep = std::async(std::launch::async, [cli = *cli_] {
      const auto swept_begin = std::chrono::steady_clock::now();
      remove_orphan_helper_dirs();
      auto swept = container::sweep_orphans(cli);
      return std::pair{std::move(swept), std::chrono::duration_cast<milliseconds>(
                                             std::chrono::steady_clock::now() - swept_begin)};
    });
  });
  auto started = start_containers();
  if (sweep.valid()) {
    auto [swept, took] = sweep.get();
    note_phase("sweep (in parallel)", took);
    if (!swept) {
      setup_.log("warning",
                 "cannot remove containers left by a dead kiln: " + swept.error().message);
    } else {
      for (const auto& name : swept->containers)
        setup_.log("kiln", fmt::format("Removed container {} left by a kiln that is gone", name));
      for (const auto& name : swept->networks)
        setup_.log("kiln", fmt::format("Removed network {} left by a kiln that is gone", name));
    }
  }
  KILN_TRY_VOID(started);
  log_phases("Containers started", std::chrono::steady_clock::now() - begin);
  return {};
}

Status ContainerJob::start_containers() {
  const auto& job = *setup_.job;
  if (!job.services.empty()) {
    std::string name = object_name("net");
    KILN_TRY_VOID(timed("network", [&] { return cli_->create_network(name, setup_.owner); }));
    network_ = name;
  }
  // Every expression and option first, in this thread; then each container in its own.
  std::vector<Prepared> services;
  for (const auto& [key, spec] : job.services) {
    KILN_TRY(auto prepared, prepare_service(key, spec));
    services.push_back(std::move(prepared));
  }
  std::optional<Prepared> job_container;
  if (job.container) {
    KILN_TRY(auto prepared, prepare_job_container(*job.container));
    job_container = std::move(prepared);
  }
  services_.resize(services.size());
  for (std::size_t i = 0; i < services.size(); ++i) {
    services_[i].key = services[i].key;
    services_[i].name = services[i].run.name;
  }
  std::vector<Status> results(services.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < services.size(); ++i)
    threads.emplace_back([&, i] {
      results[i] = timed(fmt::format("service {}", services[i].key),
                         [&] { return launch_service(services[i], services_[i]); });
    });
  Status job_started;
  if (job_container) job_started = launch_job_container(*job_container);
  for (auto& thread : threads) thread.join();
  for (auto& result : results) KILN_TRY_VOID(result);
  return job_started;
}

void ContainerJob::note_phase(std::string name, std::chrono::steady_clock::duration took) {
  std::lock_guard lock(phases_mutex_);
  phases_.push_back({std::move(name), std::chrono::duration_cast<milliseconds>(took)});
}

std::vector<ContainerJob::Phase> ContainerJob::phases() const {
  std::lock_guard lock(phases_mutex_);
  return phases_;
}

void ContainerJob::log_phases(std::string_view what, std::chrono::steady_clock::duration took) {
  std::string line =
      fmt::format("{} in {} ms", what, std::chrono::duration_cast<milliseconds>(took).count());
  std::string_view separator = ": ";
  for (const auto& phase : phases()) {
    line += fmt::format("{}{} {} ms", separator, phase.name, phase.took.count());
    separator = ", ";
  }
  setup_.log("kiln", line);
}

Status ContainerJob::prepare_common(Prepared& prepared, std::string_view what) {
  const auto& spec = *prepared.spec;
  auto& run = prepared.run;
  KILN_TRY(run.image, evaluate(spec.image));
  if (run.image.empty()) return fail_at(spec.image.where, "the container image is empty");
  KILN_TRY(prepared.options, options_for(spec, what));
  if (spec.credentials) {
    KILN_TRY(auto user, evaluate(spec.credentials->username));
    KILN_TRY(auto password, evaluate(spec.credentials->password));
    prepared.credentials = std::pair{std::move(user), std::move(password)};
  }
  run.owner = setup_.owner;
  for (const auto& [name, text] : spec.env) {
    KILN_TRY(auto value, evaluate(text));
    run.env_keys.push_back(name);
    run.env[name] = value;
  }
  for (const auto& volume : spec.volumes) {
    KILN_TRY(auto value, evaluate(volume));
    if (auto why = container::refused_volume(value))
      return fail_at(volume.where, "volume '{}' is refused: {}", value, *why);
    run.volumes.push_back(value);
  }
  for (const auto& port : spec.ports) {
    KILN_TRY(auto value, evaluate(port));
    run.ports.push_back(value);
  }
  const auto& options = prepared.options;
  run.init = !options.sets_init;
  run.options = options.args;
  prepared.sets_env = std::ranges::any_of(options.args, [](const std::string& arg) {
    return arg == "-e" || arg.starts_with("--env") || (arg.starts_with("-e") && arg.size() > 2);
  });
  auto ulimits = container::default_ulimit_args(options.sets_nofile, options.sets_nproc);
  run.options.insert(run.options.end(), ulimits.begin(), ulimits.end());
  return {};
}

Result<ContainerJob::Prepared> ContainerJob::prepare_job_container(
    const workflow::Container& spec) {
  Prepared prepared;
  prepared.spec = &spec;
  KILN_TRY_VOID(prepare_common(prepared, "job container"));
  const auto& options = prepared.options;
  auto& run = prepared.run;
  run.name = object_name("job");
  if (!options.host_network) {
    run.network = network_;
  } else if (network_) {
    setup_.log("kiln",
               "job container: --network host: services are reached through their "
               "published ports on localhost, not by their key");
  }
  // The job directory at the same path: GITHUB_WORKSPACE, RUNNER_TEMP, the event file and the
  // file-command files mean the same inside and out (docs/containers.md).
  run.volumes.insert(run.volumes.begin(), {fmt::format("{0}:{0}", setup_.job_dir.string()),
                                           fmt::format("{0}:{0}", setup_.tool_cache.string())});
  // The job directory belongs to the user the host config forces, so its steps can write there.
  if (auto ids = container::numeric_user(setup_.policy.user.value_or(""))) {
    core::RunAs user{*setup_.policy.user, ids->first, ids->second, {ids->second}};
    if (auto given = core::give_to(setup_.job_dir, user); !given)
      return fail(ErrorCode::io_error, "cannot hand {} to the container user {}: {}",
                  setup_.job_dir.string(), *setup_.policy.user, given.error().message);
  }
  run.workdir = setup_.workspace;
  add_gpu_flags(options, run.options);
  // The step helper serves the container's steps (docs/containers.md, "Fast steps"); without
  // it, `tail -f /dev/null` keeps the container alive and steps go through `exec`.
  prepared.helper = step_helper_path();
  // The job's own directory outside the job directory: the helper's socket, kiln's wrapper.
  // Short (a socket path has at most 107 bytes) and named after its owner, so that the
  // directory of a dead kiln is removed by the next one (remove_orphan_helper_dirs).
  std::string dir_template = fmt::format("/tmp/{}{}-{}-XXXXXX", k_helper_dir_prefix,
                                         setup_.owner.pid, setup_.owner.start_time);
  if (mkdtemp(dir_template.data()) == nullptr)
    return fail(ErrorCode::io_error, "cannot create a directory for the step helper's socket");
  helper_dir_ = dir_template.c_str();
  // Kiln's own commands (container/tools.h); a job whose container cannot have them still runs.
  if (auto tools = container::kiln_tool_mounts(*helper_dir_ / "kiln")) {
    run.volumes.insert(run.volumes.end(), tools->volumes.begin(), tools->volumes.end());
    prepared.has_kiln = true;
  } else {
    setup_.log("warning", fmt::format("`kiln` is not available in the job container: {}",
                                      tools.error().message));
  }
  if (prepared.helper) {
    prepared.socket = *helper_dir_ / "socket";
    // A user the host config forces must be able to listen there.
    if (auto ids = container::numeric_user(setup_.policy.user.value_or(""))) {
      if (::chown(helper_dir_->c_str(), ids->first, ids->second) != 0)
        return fail(ErrorCode::io_error, "cannot hand {} to the container user {}",
                    helper_dir_->string(), *setup_.policy.user);
    }
    run.volumes.push_back(fmt::format("{0}:{0}", helper_dir_->string()));
    run.volumes.push_back(
        fmt::format("{}:{}:ro", prepared.helper->string(), k_helper_in_container));
    run.entrypoint = std::string(k_helper_in_container);
    run.command = {"serve", prepared.socket.string()};
  } else {
    run.entrypoint = "tail";
    run.command = {"-f", "/dev/null"};
  }
  return prepared;
}

// With the CDI hint when the engine could not find a GPU device.
static Error with_cdi_hint(Error error) {
  if (error.message.find("CDI") != std::string::npos)
    error.message +=
        " (podman finds NVIDIA GPUs through CDI: run `nvidia-ctk cdi generate "
        "--output=/etc/cdi/nvidia.yaml` on this host)";
  return error;
}

Status ContainerJob::launch_job_container(Prepared& prepared) {
  auto& run = prepared.run;
  helper_socket_ = prepared.socket;
  container::ImageInfo info;
  // podman: one attached `run --rm` for the container's whole life (Attached). docker keeps
  // `run -d` and `rm -f`: the attached form is not verified with it here.
  if (prepared.helper && cli_->engine().kind == container::EngineKind::podman) {
    KILN_TRY(info, launch_attached(prepared));
  } else {
    KILN_TRY(info, timed("image inspect", [&] { return image_for(prepared); }));
    setup_.log("kiln", fmt::format("Starting job container ({})", run.image));
    job_container_ = Started{"", run.name, info, {}, true};
    if (auto started = timed("run -d (create+start)", [&] { return cli_->start(run); }); !started)
      return std::unexpected(with_cdi_hint(started.error()));
    if (prepared.helper)
      KILN_TRY_VOID(
          timed("helper ready", [&] { return wait_for_helper(run.name, prepared.socket); }));
  }
  // PATH: the image's, unless the job sets it; the container is asked only when its options
  // set variables Kiln does not read (-e, --env-file).
  container_path_ = std::string(k_default_path);
  for (const auto& entry : info.env)
    if (entry.starts_with("PATH=")) container_path_ = entry.substr(5);
  if (auto it = run.env.find("PATH"); it != run.env.end()) container_path_ = it->second;
  if (prepared.sets_env) {
    if (auto env = timed("container inspect", [&] {
          return cli_->run({"container", "inspect", "--format",
                            "{{range .Config.Env}}{{println .}}{{end}}", run.name});
        })) {
      std::istringstream lines(*env);
      std::string line;
      while (std::getline(lines, line))
        if (line.starts_with("PATH=")) container_path_ = line.substr(5);
    }
  }
  // Last: the image's own programs win over kiln's.
  if (prepared.has_kiln) container_path_ += ":" + std::string(container::k_tools_bin_in_container);
  launcher_ = make_container_step_launcher(*cli_, run.name, prepared.helper, prepared.socket);
  return {};
}

Result<container::ImageInfo> ContainerJob::launch_attached(Prepared& prepared) {
  auto& run = prepared.run;
  run.detach = false;
  run.remove_on_exit = true;
  // Under the pull policies missing and never the image is inspected while the container
  // starts, with --pull=never: an image that is not there fails that start, and is pulled
  // (policy missing) before a second one.
  const bool inspect_meanwhile = setup_.pull_policy != container::PullPolicy::always;
  if (inspect_meanwhile) run.options.push_back("--pull=never");
  auto spawn = [&]() -> Status {
    setup_.log("kiln", fmt::format("Starting job container ({})", run.image));
    KILN_TRY(auto process, cli_->spawn_attached(run));
    attached_ = std::make_unique<Attached>(std::move(process));
    return {};
  };
  auto begin = std::chrono::steady_clock::now();
  job_container_ = Started{"", run.name, {}, {}, true};
  if (inspect_meanwhile) KILN_TRY_VOID(spawn());
  auto info = timed(inspect_meanwhile ? "image inspect (in parallel)" : "image inspect",
                    [&] { return image_for(prepared); });
  if (!info) return std::unexpected(info.error());  // stop() ends the attached run
  job_container_->image = *info;
  if (info->pulled && attached_) {
    // The first start found no image: it ends by itself, then the container starts again.
    if (!attached_->wait_for(60s))
      return fail(ErrorCode::io_error, "{} run did not end after the image was pulled",
                  cli_->engine().name());
    attached_.reset();
    begin = std::chrono::steady_clock::now();
  }
  if (!attached_) KILN_TRY_VOID(spawn());
  const auto deadline = begin + 30s;
  while (!std::filesystem::exists(prepared.socket)) {
    if (attached_->wait_for(5ms)) {
      std::string status =
          attached_->status ? attached_->status->to_string() : std::string("ended");
      Error error{ErrorCode::io_error,
                  fmt::format("the job container did not start: {} run {}: {}",
                              cli_->engine().name(), status, attached_->last_lines()),
                  {}};
      return std::unexpected(with_cdi_hint(error));
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return fail(ErrorCode::timeout,
                  "the step helper in the job container did not start within 30 s (set "
                  "KILN_STEP_HELPER=off to run steps with exec); the engine's last lines:\n{}",
                  attached_->last_lines());
  }
  note_phase("run (create+start+helper ready)", std::chrono::steady_clock::now() - begin);
  return *info;
}

void ContainerJob::add_gpu_flags(const container::ContainerOptions& options,
                                 std::vector<std::string>& args) {
  if (options.gpus && setup_.gpus.empty())
    setup_.log("warning", fmt::format("--gpus {} is ignored: the job was granted no GPU (ask "
                                      "for GPUs with a runs-on label such as gpu:1)",
                                      *options.gpus));
  bool amd_granted = false;
  std::string uuids;
  for (const auto& info : setup_.gpus) {
    amd_granted = amd_granted || info.vendor == "amd";
    uuids += (uuids.empty() ? "" : ", ") + info.uuid;
  }
  // /dev/dri without /dev/kfd asked for no GPU (gpu_flags.h): on a host without AMD compute
  // GPUs (no /dev/kfd) its nodes belong to GPUs Kiln does not grant (Intel's), and pass.
  bool kfd_asked = std::ranges::any_of(options.dropped_devices, [](const std::string& device) {
    return device.starts_with("/dev/kfd");
  });
  std::vector<std::string> replaced;
  for (const auto& device : options.dropped_devices) {
    if (device.starts_with("/dev/dri") && !kfd_asked && !amd_granted && !setup_.simulated_gpus &&
        !std::filesystem::exists("/dev/kfd")) {
      std::string node = device.substr(0, device.find(':'));
      if (!std::filesystem::exists(node)) {
        setup_.log("kiln", fmt::format("job container: --device {} is not passed: this host has "
                                       "no {}",
                                       device, node));
        continue;
      }
      setup_.log("kiln", fmt::format("job container: --device {} is passed: this host has no AMD "
                                     "compute GPU (no /dev/kfd), so Kiln grants none of its nodes",
                                     device));
      args.push_back("--device");
      args.push_back(device);
      continue;
    }
    replaced.push_back(device);
  }
  if (!replaced.empty())
    setup_.log("kiln", fmt::format("job container: --device {} {} replaced by the job's grant ({})",
                                   fmt::join(replaced, ", "), replaced.size() == 1 ? "is" : "are",
                                   setup_.gpus.empty() ? "no GPU" : uuids));
  if (setup_.gpus.empty()) return;
  if (setup_.simulated_gpus) {
    setup_.log("kiln", fmt::format("GPUs {} are simulated (--simulate-gpus): the job container "
                                   "gets their environment (KILN_GPU_UUIDS, {}) and no device",
                                   uuids,
                                   amd_granted ? "ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES"
                                               : "CUDA_VISIBLE_DEVICES"));
    return;
  }
  auto flags =
      container::gpu_device_flags(cli_->engine().kind, setup_.gpus, container::host_group_ids());
  args.insert(args.end(), flags.begin(), flags.end());
}

exec::StepLauncher* ContainerJob::launcher() { return launcher_.get(); }

std::optional<std::pair<std::filesystem::path, std::string>> ContainerJob::exec_target() const {
  if (!cli_ || !job_container_ || !launcher_) return std::nullopt;
  return std::pair{cli_->engine().program, job_container_->name};
}

expr::Value ContainerJob::container_context() const {
  expr::Value value = expr::Value::object();
  if (job_container_) {
    value["id"] = job_container_->name;
    value["network"] = network_.value_or("");
  }
  return value;
}

expr::Value ContainerJob::services_context() const {
  expr::Value value = expr::Value::object();
  for (const auto& service : services_) {
    expr::Value ports = expr::Value::object();
    for (const auto& [inner, outer] : service.ports) ports[inner] = outer;
    value[service.key] = {
        {"id", service.name}, {"network", network_.value_or("")}, {"ports", ports}};
  }
  return value;
}

nlohmann::json ContainerJob::describe() const {
  auto image = [](const container::ImageInfo& info) {
    return nlohmann::json{
        {"image", info.reference}, {"image_id", info.id}, {"digest", info.digest}};
  };
  nlohmann::json out = nlohmann::json::object();
  if (cli_) out["engine"] = cli_->engine().name();
  if (job_container_) out["container"] = image(job_container_->image);
  if (!services_.empty()) {
    out["services"] = nlohmann::json::object();
    for (const auto& service : services_) out["services"][service.key] = image(service.image);
  }
  return out;
}

std::optional<std::filesystem::path> ContainerJob::step_helper_path() const {
  const char* setting = std::getenv("KILN_STEP_HELPER");
  if (setting != nullptr && std::string_view(setting) == "off") return std::nullopt;
  if (setting != nullptr && *setting != '\0') return std::filesystem::path(setting);
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  auto helper = self.parent_path() / "kiln-step-helper";
  if (::access(helper.c_str(), X_OK) != 0) return std::nullopt;
  return helper;
}

Status ContainerJob::wait_for_helper(const std::string& name, const std::filesystem::path& socket) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  int round = 0;
  while (!std::filesystem::exists(socket)) {
    // Every second, whether the container is still there to wait for.
    if (++round % 100 == 0) {
      auto state = cli_->run({"inspect", "--format", "{{.State.Status}}", name});
      if (!state || *state != "running")
        return fail(ErrorCode::io_error,
                    "the job container stopped before its step helper started (set "
                    "KILN_STEP_HELPER=off to run steps with exec); its last log lines:\n{}",
                    cli_->tail_logs(name));
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return fail(ErrorCode::timeout,
                  "the step helper in the job container did not start within "
                  "30 s (set KILN_STEP_HELPER=off to run steps with exec)");
    std::this_thread::sleep_for(10ms);
  }
  return {};
}

void ContainerJob::stop() {
  if (stopped_ || !cli_) return;
  stopped_ = true;
  const auto begin = std::chrono::steady_clock::now();
  launcher_.reset();
  // The job container (its helper told to exit, or `rm -f`) and the services at once; then
  // the network, which is in use until they are gone.
  std::vector<std::string> names;
  for (const auto& service : services_)
    if (service.created) names.push_back(service.name);
  if (job_container_ && !attached_) names.push_back(job_container_->name);
  std::thread attached;
  if (attached_) attached = std::thread([this] { stop_attached(); });
  remove_in_parallel(names);
  if (attached.joinable()) attached.join();
  if (network_) {
    if (auto removed = cli_->remove_network(*network_); !removed)
      setup_.log("warning", removed.error().message);
  }
  if (helper_dir_) {
    std::error_code ec;
    std::filesystem::remove_all(*helper_dir_, ec);
  }
  setup_.log(
      "kiln",
      fmt::format("Containers removed in {} ms",
                  std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - begin)
                      .count()));
}

void ContainerJob::remove_in_parallel(const std::vector<std::string>& names) {
  auto remove = [this](const std::string& name) {
    if (auto removed = cli_->remove_container(name); !removed)
      setup_.log("warning", removed.error().message);
  };
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < names.size(); ++i) threads.emplace_back(remove, names[i]);
  if (!names.empty()) remove(names.front());
  for (auto& thread : threads) thread.join();
}

// Asks the helper to exit through its socket (step_helper.cpp: a 'q' byte, no descriptors).
static bool ask_helper_to_quit(const std::filesystem::path& socket) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket.empty() || socket.string().size() >= sizeof address.sun_path) return false;
  std::strcpy(address.sun_path, socket.c_str());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool sent = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
              ::send(fd, "q", 1, MSG_NOSIGNAL) == 1;
  ::close(fd);
  return sent;
}

void ContainerJob::stop_attached() {
  // The helper's exit ends the container; `run --rm` then removes it and exits 0. Otherwise
  // (a helper that cannot be reached, a start that failed, an engine that hangs) `rm -f`.
  bool asked = ask_helper_to_quit(helper_socket_);
  bool ended = asked && attached_->wait_for(30s);
  bool clean = ended && attached_->status && attached_->status->success();
  if (!clean) {
    if (auto removed = cli_->remove_container(job_container_->name); !removed)
      setup_.log("warning", removed.error().message);
  }
  if (!ended && !attached_->wait_for(30s))
    setup_.log("warning", fmt::format("{} run of the job container did not end; it is killed",
                                      cli_->engine().name()));
  else if (ended && !clean)
    setup_.log("warning",
               fmt::format("the job container ended with {}: {}",
                           attached_->status ? attached_->status->to_string() : "no status",
                           attached_->last_lines()));
  attached_.reset();
}

}  // namespace kiln::engine
