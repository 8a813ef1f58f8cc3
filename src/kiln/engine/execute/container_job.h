#pragma once
// The containers of one job (`container:` and `services:`), from start to removal:
//   1. the engine (container/engine.h) and, once per kiln process, the sweep of objects that a
//      dead kiln left behind (container/cleanup.h);
//   2. a network of its own when the job has services;
//   3. each service: image (pull policy), `run -d` with its key as network alias, its env,
//      ports, volumes and options; then every service with a --health-cmd is waited for until
//      healthy, bounded by its health settings; a service that stays unhealthy fails the job
//      with its last log lines;
//   4. the job container: image, `run --init` with the job directory (workspace, temp,
//      event file) bind-mounted at the same path as on the host, the container's env and
//      volumes, the policy-checked options, the job's GPU grant as device flags; its entry
//      point is the step helper (with podman an attached `run --rm`, removed when the helper is
//      told to exit), else `tail -f /dev/null` as GitHub's runner does (`run -d`);
//   The services and the job container start in parallel (3 and 4) once the network exists,
//   while the sweep (1) runs in the background; each phase's time goes to the log;
//   5. steps: the job's StepLauncher runs each `run:` step's shell in the job container
//      (exec/step_launcher.h), so step semantics are the host's: through the step helper
//      (container/helper/step_helper.cpp, the container's entry point, a few ms a step) when
//      it is installed beside kiln, else through `exec` (hundreds of ms a step);
//   6. stop(): the containers and the network are removed (end, failure, cancel, timeout).
// The job container's image id and digest (and the services') are recorded by describe().

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/container/engine.h"
#include "kiln/container/options.h"
#include "kiln/core/result.h"
#include "kiln/exec/cancel_token.h"
#include "kiln/exec/step_launcher.h"
#include "kiln/gpu/gpu.h"
#include "kiln/workflow/expr/expr.h"
#include "kiln/workflow/model.h"

namespace kiln::engine {

struct ContainerJobSetup {
  const workflow::Job* job = nullptr;
  const expr::Context* context = nullptr;  // for the expressions of container/services
  std::string engine;                      // --container-engine / KILN_CONTAINER_ENGINE
  container::PullPolicy pull_policy = container::PullPolicy::missing;
  container::ContainerPolicy policy;  // the host config's allowances, forced user and limits
  std::filesystem::path job_dir;      // mounted at the same path
  std::filesystem::path tool_cache;   // mounted at the same path
  std::filesystem::path workspace;    // the job container's working directory
  std::vector<gpu::GpuInfo> gpus;     // the grant
  // --simulate-gpus: the grant is of simulated GPUs; the container gets their environment (the
  // job runner's GPU variables) and no device flag, and the log says so.
  bool simulated_gpus = false;
  container::Owner owner;
  const exec::CancelToken* cancel = nullptr;
  // Lines for the job's log: kind "kiln", "warning" or "error".
  std::function<void(std::string_view kind, const std::string& text)> log;
};

class ContainerJob {
 public:
  explicit ContainerJob(ContainerJobSetup setup);
  ~ContainerJob();  // stop()
  ContainerJob(const ContainerJob&) = delete;
  ContainerJob& operator=(const ContainerJob&) = delete;

  // Starts the network, services and job container. An error fails the job; what was started
  // is removed by stop() all the same.
  Status start();

  // The launcher of `run:` steps; nullptr for a job with services but no container (its steps
  // run on the host and reach services through their published ports, as on GitHub).
  exec::StepLauncher* launcher();
  // PATH inside the job container (from the image), the base of every step's PATH.
  const std::string& container_path() const { return container_path_; }

  // The engine's program and the job container's name, for `kiln exec`; nullopt without one.
  std::optional<std::pair<std::filesystem::path, std::string>> exec_target() const;

  // `job.container` ({id, network}) and `job.services` ({<key>: {id, network, ports}}).
  expr::Value container_context() const;
  expr::Value services_context() const;
  // {"engine", "container": {image, image_id, digest}, "services": {key: {...}}} for the store.
  nlohmann::json describe() const;

  // Removes the containers and the network; idempotent.
  void stop();

  // How long each phase of start() took, in the order they ended (docs/performance.md,
  // "Container jobs: start"): the same list is logged as one line when start() ends.
  struct Phase {
    std::string name;
    std::chrono::milliseconds took{};
  };
  std::vector<Phase> phases() const;

 private:
  struct Started {
    std::string key;  // "" for the job container
    std::string name;
    container::ImageInfo image;
    std::map<std::string, std::string> ports;  // container port → host port
    bool created = false;  // the engine was asked to create it: stop() removes it
  };
  // A container with every expression evaluated and every option checked (prepare_*, one
  // thread), ready to be started (launch_*, one thread each: services start in parallel).
  struct Prepared {
    std::string key;  // "" for the job container
    const workflow::Container* spec = nullptr;
    std::optional<std::pair<std::string, std::string>> credentials;  // user, password
    container::ContainerOptions options;
    container::RunSpec run;
    std::optional<std::filesystem::path> helper;  // the job container's step helper
    std::filesystem::path socket;
    bool has_kiln = false;
    bool sets_env = false;  // the options set variables (-e, --env-file): PATH is inspected
  };
  struct Attached;  // the job container's attached `run` process (container_job.cpp)

  // The options of `spec`, evaluated, policy-checked, forced and adapted to this host
  // (container/host_options.h); what Kiln changed goes to the log, prefixed by `what`.
  Result<container::ContainerOptions> options_for(const workflow::Container& spec,
                                                  std::string_view what);
  // The grant's device flags (none for simulated GPUs) and what became of the options' own.
  void add_gpu_flags(const container::ContainerOptions& options, std::vector<std::string>& args);
  Status start_containers();
  Result<Prepared> prepare_service(const std::string& key, const workflow::Container& spec);
  Result<Prepared> prepare_job_container(const workflow::Container& spec);
  // Evaluates what every container shares: image, env, volumes, ports, options.
  Status prepare_common(Prepared& prepared, std::string_view what);
  Status launch_service(Prepared& prepared, Started& started);
  Status launch_job_container(Prepared& prepared);
  // The job container as an attached `podman run --rm` (its removal is the helper's exit);
  // returns its image, inspected while it starts.
  Result<container::ImageInfo> launch_attached(Prepared& prepared);
  Status wait_healthy(const Started& service, const container::ContainerOptions& options);
  Result<container::ImageInfo> image_for(const Prepared& prepared);
  Result<std::string> evaluate(const workflow::Text& text) const;
  // kiln-step-helper beside the kiln binary (or $KILN_STEP_HELPER; "off": none).
  std::optional<std::filesystem::path> step_helper_path() const;
  Status wait_for_helper(const std::string& name, const std::filesystem::path& socket);
  // Ends the attached job container: the helper is asked to exit, then the engine's `run`
  // is waited for (it removes the container); `rm -f` when that does not end it.
  void stop_attached();
  void remove_in_parallel(const std::vector<std::string>& names);
  std::string object_name(std::string_view what) const;
  // Runs `work` and records its duration as phase `name`.
  template <typename Work>
  auto timed(std::string name, Work&& work) {
    const auto begin = std::chrono::steady_clock::now();
    auto result = work();
    note_phase(std::move(name), std::chrono::steady_clock::now() - begin);
    return result;
  }
  void note_phase(std::string name, std::chrono::steady_clock::duration took);
  // "WHAT in N ms: PHASE N ms, ..." to the job's log.
  void log_phases(std::string_view what, std::chrono::steady_clock::duration took);

  ContainerJobSetup setup_;
  std::unique_ptr<container::EngineCli> cli_;
  std::optional<std::string> network_;
  std::vector<Started> services_;
  std::optional<Started> job_container_;
  std::unique_ptr<Attached> attached_;
  std::string container_path_;
  std::optional<std::filesystem::path> helper_dir_;  // the helper's socket directory
  std::filesystem::path helper_socket_;
  std::unique_ptr<exec::StepLauncher> launcher_;  // container_step_launcher.h
  std::string suffix_;
  bool stopped_ = false;
  mutable std::mutex phases_mutex_;  // services start in parallel
  std::vector<Phase> phases_;
};

}  // namespace kiln::engine
