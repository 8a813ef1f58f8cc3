#pragma once
// The host configuration, kiln.yml (DESIGN.md "Configuration"): what one host or server is set
// up to do. Every key has a default, so a host without the file works; an unknown key, a value
// of the wrong type or a bad value is an error at FILE:LINE:COL (exit code 2).
//
//   host_store: /var/lib/kiln/host.db      # GPU leases and quarantine (relative: to this file),
//                                          # or postgresql://USER@HOST/DB shared by a fleet
//   host_store_password_file: /etc/kiln/pg # its password (else PGPASSWORD, ~/.pgpass)
//   labels: [rocm, big-memory]             # runner labels this host serves (no GPU request)
//   gpus:
//     labels:                              # custom runs-on labels -> GPU requests (labels.h)
//       gpu-a100: gpu gpu-model:a100
//       linux.rocm.gpu.{arch}.{count}: gpu:{count} gpu-vendor:amd gpu-arch:{arch}
//       roc-gpu-mi200: [gpu-vendor:amd, gpu-arch:gfx90a]  # a list works too (quote {..} in [])
//     health:                              # gpu/health.h
//       max_memory_used_before_job: 5%     # or 2G, 512M
//       memory_tolerance_after_job: 512M
//       memory_grace: 10s                  # 500ms, 10s, 2m
//       provider_deadline: 10s
//     telemetry:                           # gpu/telemetry.h, docs/gpus.md "Telemetry"
//       enabled: true                      # false: no sampling (no GPU summary, no budgets)
//       interval: 1s                       # 100ms (10 Hz) at the fastest
//       memory_budget: 40G                 # default GPU memory budget per GPU of a job
//   containers:                            # container/options.h, docs/containers.md
//     engine: podman                       # podman, docker, auto or a path (default auto)
//     pull: missing                        # never, missing, always
//     allow: [privileged, host-network]    # refused options this host allows
//     user: "1000:1000"                    # forced on every job and service container
//     limits: {memory: 16g, cpus: 8, pids: 4096}
//   hipcheck:                              # kiln hipcheck (docs/hipcheck.md)
//     rocm_version: "6.2"                  # judge support for this ROCm (default: newest known)
//     hip_macros: [MY_PROJECT_HIP]         # the project's own "building for HIP" macros
//   debug:                                 # kiln exec into a failed job (docs/containers.md)
//     hold: 30m                            # how long --keep-failed keeps it (at most 24h)
//     on_workflow_dispatch: false          # true: failed manual runs are kept without the flag
//   actions:
//     url: https://github.com              # where owner/repo@ref actions are fetched from
//   jobs:
//     user: kiln-job                       # host jobs' steps run as this user (kiln as root)
//     max_log_size: 1G                     # a job's log past this: lines counted, not kept
//     limits: {memory: 16G, pids: 4096, cpus: 8}   # each host job's cgroup (core/cgroup.h)
//   retry:                                 # runs again a run failed only for these classes
//     gpu-fault: 1                         # (defaults: gpu-fault 1, infra 1; 0-5; never code)
//     infra: 1
//   tests:
//     quarantine:                          # flaky tests (docs/failures.md "Quarantined tests")
//       flips: 2                           # fail<->pass on one commit this many times ... (0: off)
//       runs: 10                           # ... in the test's last this many results
//       expires: 14d                       # quarantined this long (1m to 365d)
//   priority:                              # classes that order the queue (priority_config.h)
//     aging: 10m                           # a waiting job climbs one class per 10m
//     classes: [{name: release, branch: main, event: push}, {name: pr, event: pull_request}]
//   slurm:                                 # jobs sent to Slurm (slurm_config.h)
//     spool: /shared/kiln/spool
//     pools: [{labels: [gpu], partition: gpu, gpu-model: {h100: h100}}]
//   serve:                                 # kiln serve (docs/serve.md)
//     listen: 127.0.0.1:8080               # HOST:PORT (port 0: any free port)
//     public_url: https://ci.example.com   # links in commit statuses (default: http://listen)
//     store: /var/lib/kiln/kiln.db         # runs, logs, deliveries (relative: to this file),
//                                          # or postgresql://USER@HOST/DB (docs/scale-out.md)
//     store_password_file: /etc/kiln/pgpw  # its password (else PGPASSWORD, PGPASSFILE)
//     work_dir: /var/lib/kiln/work         # clones and checkouts (relative: to this file)
//     api_tokens: [TOKEN, ...]             # bearer tokens of the API (state changes, logs)
//     dashboard: public                    # private: every GET of /api/ and /metrics needs one
//     max_concurrent_runs: 2
//     shutdown_grace: 5m                   # SIGTERM: how long running runs may finish
//     trusted_authors: [alice]             # fork pull requests of others wait for approval
//     tls: {cert: cert.pem, key: key.pem}  # HTTPS instead of HTTP (relative: to this file)
//     on_restart: requeue                  # triggers a dead server left running: requeue|fail
//     idle: {after: 30m, run: CMD}         # no work for 30m: CMD once (docs/serve.md)
//     busy: {run: CMD, timeout: 10m}       # work after the idle CMD ran: CMD before it starts
//     bisect:                              # on a perf regression (docs/serve.md)
//       on_regression: false               # true: find the commit that made it slower
//       max_commits: 64                    # more commits since the last good run: refused
//       repeat: 3                          # runs of a commit whose level is near the middle
//     repositories:
//       owner/name:                        # as the forge's payload names it (full_name)
//         clone_url: https://github.com/owner/name.git   # or a local path
//         webhook_secret: SECRET           # HMAC-SHA256 key of X-Hub-Signature-256
//         trusted_authors: [bob]           # added to the server-wide list
//         statuses:                        # commit statuses (optional)
//           api_url: https://api.github.com
//           token: TOKEN
//         checks:                          # a GitHub check run per job (optional)
//           api_url: https://api.github.com
//           app_id: 12345                  # the GitHub App that writes them (github.com
//           installation_id: 67890         #   takes check runs from apps only) ...
//           private_key_file: app.pem      #   (relative: to this file)
//           token: TOKEN                   # ... or a token that may write checks
//         poll:                            # watch the remote with git ls-remote (optional)
//           branches: [main]               # new commits on these trigger a push
//           interval: 60s

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/config/priority_config.h"
#include "kiln/config/slurm_config.h"
#include "kiln/container/options.h"
#include "kiln/core/cgroup.h"
#include "kiln/core/result.h"
#include "kiln/core/run_as.h"
#include "kiln/core/time.h"
#include "kiln/gpu/health.h"
#include "kiln/gpu/labels.h"
#include "kiln/gpu/telemetry.h"
#include "kiln/hipcheck/rocm.h"
#include "kiln/store/host_store.h"
#include "kiln/store/records.h"

namespace kiln::config {

// A repository's check runs (server/check_client.h): where, and as whom. Either a token or a
// GitHub App (app_id, installation_id and its private key, from which installation tokens are
// made); the key file is read when the server starts, errors at `key_where`.
struct ServeChecks {
  std::string api_url{};
  std::string token{};
  std::int64_t app_id = 0;
  std::int64_t installation_id = 0;
  std::filesystem::path private_key_file{};
  SourceLocation key_where{};
};

// One repository `kiln serve` takes events for.
struct ServeRepository {
  std::string name;       // owner/name
  std::string clone_url;  // what `git fetch` reads
  std::string webhook_secret;
  std::vector<std::string> trusted_authors;
  std::string statuses_api_url;  // empty: no commit statuses
  std::string statuses_token;
  std::optional<ServeChecks> checks;  // none: no check runs
  // Polling of clone_url (server/poller.h): branch names (without refs/heads/) whose new
  // commits trigger a push; none: not polled.
  std::vector<std::string> poll_branches;
  std::chrono::milliseconds poll_interval{60'000};
};

// serve.tls: HTTPS with this certificate chain and private key (PEM files). The locations are
// kept so that a file that cannot be read or does not match is reported at FILE:LINE:COL when
// the server loads it.
struct ServeTls {
  std::filesystem::path cert, key;
  SourceLocation cert_where, key_where;
};

// What `kiln serve` does at start with triggers a server that died left `running`.
enum class OnRestart { requeue, fail };

// serve.bisect: on a perf regression, find the commit that made the benchmark slower
// (server/bisect.h, docs/serve.md "Bisection on a regression").
struct ServeBisect {
  bool on_regression = false;  // start one when a run's perf gate finds a regression
  int max_commits = 64;        // more commits between the last good run and the bad one: refused
  int repeat = 3;              // runs of a commit whose level is near the middle
};

// serve.idle's and serve.busy's command (server/idle_hooks.h, docs/serve.md "Idle and busy
// hooks"): run through /bin/sh -c, killed past its timeout.
struct ServeHook {
  std::string run;
  std::chrono::milliseconds timeout{10 * 60'000};
};

// serve.idle: the hook run once the server has had no trigger queued or running for `after`.
struct ServeIdle {
  std::chrono::milliseconds after{30 * 60'000};
  ServeHook hook;
};

struct ServeConfig {
  std::string listen_host = "127.0.0.1";
  int listen_port = 8080;
  std::string public_url;                      // empty: http://HOST:PORT
  std::optional<std::filesystem::path> store;  // a SQLite file
  std::string store_url;  // a PostgreSQL database instead (no password: check_postgres_url)
  std::optional<std::filesystem::path> store_password_file;
  std::optional<std::filesystem::path> work_dir;
  std::vector<std::string> api_tokens;
  // serve.dashboard: private: runs, triggers, GPUs, reports and metrics need a token too.
  bool private_dashboard = false;
  int max_concurrent_runs = 2;
  std::chrono::milliseconds shutdown_grace{300'000};
  std::vector<std::string> trusted_authors;
  std::vector<ServeRepository> repositories;
  std::optional<ServeTls> tls;
  OnRestart on_restart = OnRestart::requeue;
  ServeBisect bisect;
  std::optional<ServeIdle> idle;  // none: no idle hook
  std::optional<ServeHook> busy;  // only with idle: it runs when work ends an idle spell
};

// hipcheck: what `kiln hipcheck` judges by on this host (its command line wins).
struct HipcheckConfig {
  std::optional<hipcheck::RocmVersion> rocm_version;
  std::vector<std::string> hip_macros;
};

// jobs.max_log_size's default: generous (a 2M-line NCCL debug log is about 200 MiB), but a step
// printing without end cannot fill the disk. (engine.h RunOptions has the same default.)
inline constexpr std::uint64_t k_default_max_log_bytes = std::uint64_t{1} << 30;

// retry:'s defaults: a GPU fault and an infrastructure failure are retried once.
inline const std::map<store::FailureClass, int> k_default_retry = {
    {store::FailureClass::gpu_fault, 1}, {store::FailureClass::infra, 1}};

struct HostConfig {
  std::filesystem::path file;  // where it was read; empty: no file, every default
  // host_store: a SQLite file or a postgresql:// URL, host_store_password_file.
  std::optional<store::HostStoreLocation> host_store;
  gpu::GpuLabelMap gpu_labels;  // labels: and gpus.labels: (the labels this host serves)
  gpu::HealthPolicy gpu_health;
  std::string container_engine;  // empty: not set here
  std::string pull_policy;       // empty: not set here
  container::ContainerPolicy container_policy;
  gpu::TelemetryPolicy gpu_telemetry;
  // gpus.cost_per_hour: the price of a GPU-hour by model (a key matches models containing it),
  // for `kiln usage` and GET /api/usage.
  std::map<std::string, double> gpu_prices;
  ServeConfig serve;
  HipcheckConfig hipcheck;
  // debug: a failed job's hold for `kiln exec` (docs/containers.md "Debugging a failed job").
  std::chrono::milliseconds debug_hold{30 * 60'000};  // debug.hold
  bool debug_on_workflow_dispatch = false;            // debug.on_workflow_dispatch
  // actions.url: the forge owner/repo@ref actions and reusable workflows are fetched from.
  std::string actions_url = "https://github.com";
  // jobs.user: the unprivileged user host jobs' steps run as (docs/configuration.md); none: as
  // kiln's own user.
  std::optional<core::RunAs> job_user;
  // jobs.max_log_size: the bytes of a job's log that are stored and shown; past them its lines
  // are only counted (engine.h RunOptions::max_log_bytes).
  std::uint64_t max_log_bytes = k_default_max_log_bytes;
  // jobs.limits: the cgroup limits of each host job (core/cgroup.h); none set: no job cgroup.
  core::CgroupLimits job_limits;
  SourceLocation job_limits_where{};  // of the limits: mapping, for the host check at start
  // retry: how many times a run whose failed jobs all failed for these classes is run again, by
  // class (docs/failures.md); `code` is never retried automatically.
  std::map<store::FailureClass, int> retry = k_default_retry;
  // tests.quarantine: the flip rule of quarantined tests (docs/failures.md).
  store::TestQuarantinePolicy test_quarantine;
  // slurm: the jobs submitted to Slurm (slurm_config.h, docs/scale-out.md "Slurm").
  std::optional<SlurmConfig> slurm;
  // priority: the order queued jobs take GPUs and slots in (priority_config.h).
  PriorityPolicy priority;
};

// `file` names the text in errors and anchors relative paths.
Result<HostConfig> parse_host_config(std::string_view text, const std::filesystem::path& file);
Result<HostConfig> load_host_config(const std::filesystem::path& file);

// The configuration a command uses: `explicit_file` (--config) when given, else $KILN_CONFIG when
// set, else /etc/kiln/kiln.yml when it exists, else the defaults. A named file that does not
// exist is an error.
Result<HostConfig> find_host_config(const std::optional<std::filesystem::path>& explicit_file);

// kiln.yml's durations are core::parse_duration's ("500ms", "10s", "2m", "1h", "7d").
using core::parse_duration;

// A size in bytes: a whole number with an optional binary unit, K, M, G or T (1024, 1024², ...),
// each also as KiB or KB (still 1024: sizes of logs and memory are meant), any case: "1G",
// "512MiB", "64k", "100" (bytes). invalid_input for anything else or past 2^63 bytes.
Result<std::uint64_t> parse_size(std::string_view text);

}  // namespace kiln::config
