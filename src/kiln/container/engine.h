#pragma once
// The container engine Kiln drives: podman or docker, through its command-line interface
// (DESIGN.md: every effect on the world behind a narrow interface). EngineCli builds the
// argv of each engine command and runs it through a Runner: the real one spawns the engine
// with core::run_command under a deadline; unit tests pass one that records the argv.
//
// Every object Kiln creates carries labels (k_label_*): the run, the job, and the owner kiln
// process (pid and start time, store/process_identity.h), so that objects a crashed kiln left
// behind can be found and removed (cleanup.h).

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/container/gpu_flags.h"
#include "kiln/core/result.h"
#include "kiln/core/subprocess.h"

namespace kiln::container {

inline constexpr std::string_view k_label_run = "kiln.run";
inline constexpr std::string_view k_label_job = "kiln.job";
inline constexpr std::string_view k_label_owner_pid = "kiln.owner-pid";
inline constexpr std::string_view k_label_owner_start = "kiln.owner-start";
inline constexpr std::string_view k_label_owner_host = "kiln.owner-host";

struct Engine {
  EngineKind kind = EngineKind::podman;
  std::filesystem::path program;  // absolute
  std::string name() const { return kind == EngineKind::podman ? "podman" : "docker"; }
};

// The engine to use. `preference`: "" or "auto" (podman when it is in PATH, else docker),
// "podman", "docker", or the path of either program (its base name says which). The
// --container-engine flag of `kiln run`, else KILN_CONTAINER_ENGINE, give it. Errors:
// invalid_input for an unknown name, not_found when the program is not installed.
Result<Engine> detect_engine(std::string_view preference, std::string_view path_list);

enum class PullPolicy { never, missing, always };
Result<PullPolicy> parse_pull_policy(std::string_view text);  // never|missing|always
std::string_view to_string(PullPolicy policy);

// Who created an object (the labels every object gets).
struct Owner {
  std::string run;  // the store's run id
  std::string job;  // the job key
  int pid = 0;
  std::int64_t start_time = 0;
  std::string host;
};
std::vector<std::string> label_args(const Owner& owner);

// An image as the engine resolved it.
struct ImageInfo {
  std::string reference;         // as the workflow wrote it
  std::string id;                // "sha256:…", the local image id
  std::string digest;            // "registry/name@sha256:…" when the image came from a registry
  bool pulled = false;           // pulled by this call
  std::vector<std::string> env;  // the image's ENV, "KEY=VALUE" each
};

// True for a tag that can move under the same name: none (":latest" implied) or "latest".
bool is_mutable_tag(std::string_view image);

// What `run -d` needs to start a long-lived container.
struct RunSpec {
  std::string name;
  std::string image;
  Owner owner;
  std::optional<std::string> network;
  std::vector<std::string> network_aliases;
  std::vector<std::string> env_keys;  // -e KEY: the value comes from the engine's environment
  core::Environment env;              // ... which is this, on top of kiln's own
  std::vector<std::string> volumes;   // -v
  std::vector<std::string> ports;     // -p
  std::optional<std::filesystem::path> workdir;
  bool init = true;
  std::vector<std::string> options;  // policy-checked (options.h), GPU flags included
  std::optional<std::string> entrypoint;
  std::vector<std::string> command;  // after the image
  // `run -d` returns once the container runs; attached (false), `run` lasts as long as the
  // container does (spawn_attached).
  bool detach = true;
  bool remove_on_exit = false;  // --rm: the engine removes the container when it exits
};

class EngineCli {
 public:
  using Runner = std::function<Result<core::CommandOutput>(
      const std::vector<std::string>& argv, const std::optional<core::Environment>& env,
      std::chrono::milliseconds timeout)>;

  explicit EngineCli(Engine engine, Runner runner = {});
  const Engine& engine() const { return engine_; }

  // Runs `engine args...`; a non-zero exit is an io_error whose message ends with the
  // engine's stderr. Returns stdout without its trailing newline.
  Result<std::string> run(const std::vector<std::string>& args,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60),
                          const std::optional<core::Environment>& env = std::nullopt) const;

  // The image under `policy`: never (it must be there), missing (pull when it is not there),
  // always (pull). `authfile` (registry credentials, optional) is passed to the pull. A pull
  // is bounded by `pull_timeout`; an unreachable registry is an error naming the image.
  Result<ImageInfo> ensure_image(const std::string& image, PullPolicy policy,
                                 const std::optional<std::filesystem::path>& authfile = {},
                                 std::chrono::milliseconds pull_timeout = std::chrono::minutes(10));

  // The argv (after the program) of `run` for a spec.
  std::vector<std::string> run_args(const RunSpec& spec) const;
  // Starts a container (`run -d`); returns its id.
  Result<std::string> start(const RunSpec& spec) const;
  // Spawns `run` of an attached spec (detach false) as a child process, stdout and stderr
  // merged: it creates and starts the container and ends when the container has exited (and,
  // with remove_on_exit, has been removed) — one engine process for the container's whole
  // life, where `run -d` and `rm -f` take two.
  Result<core::Subprocess> spawn_attached(const RunSpec& spec) const;

  Result<std::string> create_network(const std::string& name, const Owner& owner) const;
  // Forced removal (a running container is killed at once); missing objects are not errors.
  Status remove_container(const std::string& id) const;
  Status remove_network(const std::string& name) const;

  // The last `lines` lines of a container's output (stdout and stderr), for error messages.
  std::string tail_logs(const std::string& id, int lines = 20) const;

 private:
  Engine engine_;
  Runner runner_;
};

// The --ulimit flags Kiln adds when the options set none: the engines' defaults (nofile
// 1048576, nproc up to 4194304) exceed the hard limits of many hosts, and then every container
// fails to start ("error setting rlimits"); kiln's own limits are always within them.
std::vector<std::string> default_ulimit_args(bool sets_nofile, bool sets_nproc);

}  // namespace kiln::container
