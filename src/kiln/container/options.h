#pragma once
// The `options:` of a job container or service, under Kiln's policy (docs/containers.md).
//
// GitHub passes `options` to `docker create` as written. Kiln splits it into words (POSIX shell
// quoting: '...', "...", backslash) and lets through what GPU pipelines use:
//   --device --group-add --ipc --shm-size --ulimit --cap-add --cap-drop --security-opt
//   -e/--env --env-file -v/--volume --mount --tmpfs -u/--user -m/--memory --memory-swap --cpus
//   --cpuset-cpus --pids-limit --hostname --add-host --label --workdir/-w --entrypoint
//   --init --read-only --health-cmd --health-interval --health-retries --health-timeout
//   --health-start-period --no-healthcheck
// It refuses what breaks the isolation between jobs (--privileged, --cap-add ALL, --pid=host,
// --network=host, --userns=host, --uts=host, --ipc=container:…, mounting / or the engine's
// socket), every option not listed (a typo is better reported than passed to the engine), a
// value the engines would refuse (sizes, ulimits, capabilities, security options:
// option_values.h), and a value that is itself an option ("-v--net", "-v --net"). Each error says
// what to write instead. `--ipc=host` with `--shm-size` keeps --ipc=host only (podman refuses the
// pair; docker ignores the size), with a note. `--gpus` is not passed: the job gets
// exactly its granted GPUs as device flags instead (gpu_flags.h), whatever --gpus said; GPU
// device nodes given with --device (/dev/nvidia*, /dev/kfd, /dev/dri/*) are dropped likewise.

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::container {

struct ContainerOptions {
  // Passed to `create`/`run` as they are (policy applied, GPU flags removed).
  std::vector<std::string> args;
  // The value of --gpus ("all", "2", "device=0,1"), when the options had one: a GPU request the
  // grant replaces.
  std::optional<std::string> gpus;
  // GPU device nodes the options named with --device (dropped: the grant decides).
  std::vector<std::string> dropped_devices;
  // --health-cmd and friends, in `args` too; the service start waits for health when set.
  bool has_health_cmd = false;
  bool no_healthcheck = false;
  bool sets_nofile = false;  // --ulimit nofile=... given
  bool sets_nproc = false;   // --ulimit nproc=... given
  bool sets_init = false;    // --init given (Kiln adds it by default)
  std::optional<std::string> health_interval, health_retries, health_timeout, health_start_period;
  bool host_network = false;  // --network host, which the host policy allowed
  // What Kiln changed, for the job's log ("--shm-size 16G is not passed: ...").
  std::vector<std::string> notes;
};

// What the host configuration (kiln.yml `containers:`) changes in the policy.
struct ContainerPolicy {
  // Refused options the host allows: "privileged", "host-pid", "host-network", "host-userns",
  // "host-uts" (the `=host` forms of --pid/--network/--userns/--uts).
  std::set<std::string> allow;
  // Forced on every job and service container, replacing what the workflow says: the user
  // (e.g. "1000:1000", so no job runs as root), and per-container limits.
  std::optional<std::string> user, memory, cpus, pids_limit;
};

// "1000" or "1000:1000" as (uid, gid) (gid = uid when absent); nullopt for a name or nothing.
std::optional<std::pair<unsigned, unsigned>> numeric_user(std::string_view user);

// The names `allow` accepts.
const std::set<std::string>& allowable_options();

// Splits `text` into words as a POSIX shell would, without expansions: whitespace separates,
// '...' is literal, "..." groups (a backslash escapes " \ $ `), a backslash outside quotes
// escapes the next character. An unterminated quote is invalid_input.
Result<std::vector<std::string>> split_words(std::string_view text);

// Parses and checks `text` (the options, expressions already evaluated). Errors are
// invalid_input at `where` (the workflow's `options:`), naming the refused option.
Result<ContainerOptions> parse_options(std::string_view text, const SourceLocation& where,
                                       const ContainerPolicy& policy = {});

// Puts the policy's forced user and limits into `args`, in place of the workflow's.
void apply_forced(std::vector<std::string>& args, const ContainerPolicy& policy);

// A bind mount source Kiln refuses (/, the engine sockets): "-v /:/host", "/var/run/docker.sock:
// /var/run/docker.sock". `spec` is a -v value (SRC:DST[:OPTS]) or a volume name. Returns why,
// or nullopt when it is allowed.
std::optional<std::string> refused_volume(std::string_view spec);

}  // namespace kiln::container
