#include "kiln/config/host_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <tuple>

namespace kiln::config {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(HostConfig, EveryKey) {
  auto config = parse_host_config(R"(host_store: state/host.db
gpus:
  labels:
    gpu-a100: gpu gpu-model:a100
    linux.rocm.gpu.{arch}.{count}: gpu:{count} gpu-vendor:amd gpu-arch:{arch}
  health:
    max_memory_used_before_job: 2G
    memory_tolerance_after_job: 1%
    memory_grace: 1.5s
    provider_deadline: 2m
)",
                                  "/etc/kiln/kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  ASSERT_TRUE(config->host_store);
  EXPECT_EQ(config->host_store->file, fs::path("/etc/kiln/state/host.db"));
  EXPECT_TRUE(config->host_store->url.empty());
  EXPECT_EQ(config->gpu_health.max_used_before_job.of(100000), 2048u);
  EXPECT_EQ(config->gpu_health.memory_tolerance.of(100000), 1000u);
  EXPECT_EQ(config->gpu_health.memory_grace, 1500ms);
  EXPECT_EQ(config->gpu_health.provider_deadline, 120000ms);
  std::vector<gpu::GpuLabel> labels = {{"linux.rocm.gpu.gfx90a.4", {}}};
  EXPECT_EQ(gpu::parse_gpu_request(config->gpu_labels.expand(labels))->to_string(),
            "gpu:4 gpu-vendor:amd gpu-arch:gfx90a");
}

TEST(HostConfig, HostStoreOnPostgres) {
  auto config = parse_host_config(
      "host_store: postgresql://kiln@db.example/fleet\nhost_store_password_file: pg-password\n",
      "/etc/kiln/kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  ASSERT_TRUE(config->host_store);
  EXPECT_EQ(config->host_store->url, "postgresql://kiln@db.example/fleet");
  EXPECT_TRUE(config->host_store->file.empty());
  EXPECT_EQ(config->host_store->password_file, fs::path("/etc/kiln/pg-password"));
}

TEST(HostConfig, ServedLabels) {
  auto config = parse_host_config("labels: [rocm-box, big-memory]\n", "/etc/kiln/kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  EXPECT_TRUE(config->gpu_labels.serves("rocm-box"));
  EXPECT_TRUE(config->gpu_labels.serves("Big-Memory"));
  EXPECT_FALSE(config->gpu_labels.serves("rocm"));
  auto bad = parse_host_config("labels: rocm-box\n", "kiln.yml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().to_string(),
            "kiln.yml:1:9: error: labels: expected a list of the runner labels this host serves");
}

TEST(HostConfig, ContainerPolicy) {
  auto config = parse_host_config(R"(containers:
  engine: podman
  pull: never
  allow: [privileged, host-network]
  user: "1000:1000"
  limits: {memory: 16g, cpus: 1.5, pids: 4096}
)",
                                  "kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  EXPECT_EQ(config->container_engine, "podman");
  EXPECT_EQ(config->pull_policy, "never");
  const auto& policy = config->container_policy;
  EXPECT_EQ(policy.allow, (std::set<std::string>{"host-network", "privileged"}));
  EXPECT_EQ(policy.user, "1000:1000");
  EXPECT_EQ(policy.memory, "16g");
  EXPECT_EQ(policy.cpus, "1.5");
  EXPECT_EQ(policy.pids_limit, "4096");
}

TEST(HostConfig, Telemetry) {
  auto config = parse_host_config(
      "gpus:\n  telemetry:\n    enabled: false\n    interval: 100ms\n    memory_budget: 40G\n",
      "kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  EXPECT_FALSE(config->gpu_telemetry.enabled);
  EXPECT_EQ(config->gpu_telemetry.interval, 100ms);
  EXPECT_EQ(config->gpu_telemetry.memory_budget_mib, 40u * 1024);
  auto defaults = parse_host_config("", "kiln.yml");
  ASSERT_TRUE(defaults);
  EXPECT_TRUE(defaults->gpu_telemetry.enabled);
  EXPECT_EQ(defaults->gpu_telemetry.interval, 1000ms);
  EXPECT_FALSE(defaults->gpu_telemetry.memory_budget_mib);
}

TEST(HostConfig, EmptyMeansDefaults) {
  auto config = parse_host_config("", "kiln.yml");
  ASSERT_TRUE(config);
  EXPECT_FALSE(config->host_store);
  EXPECT_TRUE(config->gpu_labels.empty());
  EXPECT_EQ(config->gpu_health.memory_grace, 10000ms);
}

TEST(HostConfig, DebugHold) {
  auto defaults = parse_host_config("", "kiln.yml");
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->debug_hold, std::chrono::minutes(30));
  EXPECT_FALSE(defaults->debug_on_workflow_dispatch);
  auto config =
      parse_host_config("debug:\n  hold: 45s\n  on_workflow_dispatch: true\n", "kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  EXPECT_EQ(config->debug_hold, std::chrono::seconds(45));
  EXPECT_TRUE(config->debug_on_workflow_dispatch);
  for (const char* text : {"debug:\n  hold: 25h\n", "debug:\n  hold: soon\n",
                           "debug:\n  on_workflow_dispatch: maybe\n", "debug:\n  keep: 1m\n"}) {
    auto bad = parse_host_config(text, "kiln.yml");
    ASSERT_FALSE(bad) << text;
    EXPECT_EQ(bad.error().where.line, 2) << text;
    EXPECT_THAT(bad.error().message, ::testing::HasSubstr("debug")) << text;
  }
}

TEST(HostConfig, RetryByFailureClass) {
  using store::FailureClass;
  auto defaults = parse_host_config("", "kiln.yml");
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->retry,
            (std::map<FailureClass, int>{{FailureClass::gpu_fault, 1}, {FailureClass::infra, 1}}));
  auto config = parse_host_config("retry:\n  gpu-fault: 2\n  oom: 1\n  infra: 0\n", "kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  EXPECT_EQ(config->retry,
            (std::map<FailureClass, int>{
                {FailureClass::gpu_fault, 2}, {FailureClass::oom, 1}, {FailureClass::infra, 0}}));
  for (auto [text, words] : {std::pair{"retry:\n  code: 1\n", "never retried automatically"},
                             std::pair{"retry:\n  test: 1\n", "nothing to retry"},
                             std::pair{"retry:\n  gpu-fault: 6\n", "from 0 to 5"},
                             std::pair{"retry:\n  infra: once\n", "from 0 to 5"},
                             std::pair{"retry:\n  flaky: 1\n", "unknown key 'flaky'"}}) {
    auto bad = parse_host_config(text, "kiln.yml");
    ASSERT_FALSE(bad) << text;
    EXPECT_EQ(bad.error().where.line, 2) << text;
    EXPECT_THAT(bad.error().message, ::testing::HasSubstr(words)) << text;
  }
}

TEST(HostConfig, TestQuarantinePolicy) {
  auto defaults = parse_host_config("", "kiln.yml");
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->test_quarantine.flips, 2);
  EXPECT_EQ(defaults->test_quarantine.runs, 10);
  EXPECT_EQ(defaults->test_quarantine.expires, 14LL * 24 * 3600 * 1000);
  auto config =
      parse_host_config("tests:\n  quarantine: {flips: 1, runs: 4, expires: 2h}\n", "kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  EXPECT_EQ(config->test_quarantine.flips, 1);
  EXPECT_EQ(config->test_quarantine.runs, 4);
  EXPECT_EQ(config->test_quarantine.expires, 2 * 3600 * 1000);
  EXPECT_TRUE(parse_host_config("tests:\n  quarantine:\n    flips: 0\n", "kiln.yml"));
  struct Case {
    const char* text;
    int line, column;
    const char* words;
  };
  for (auto [text, line, column, words] :
       {Case{"tests:\n  quarantine:\n    flip: 2\n", 3, 5, "unknown key 'flip'"},
        Case{"tests:\n  flaky: {}\n", 2, 3, "tests: unknown key 'flaky' (known: quarantine)"},
        Case{"tests:\n  quarantine:\n    flips: two\n", 3, 12, "not a whole number from 0 to 100"},
        Case{"tests:\n  quarantine:\n    runs: 1\n", 3, 11, "from 2 to 1000"},
        Case{"tests:\n  quarantine:\n    flips: 3\n    runs: 3\n", 4, 11,
             "runs (3) must be more than flips (3)"},
        Case{"tests:\n  quarantine:\n    expires: soon\n", 3, 14, "is not a duration"},
        Case{"tests:\n  quarantine:\n    expires: 10s\n", 3, 14, "not between 1m and 365d"}}) {
    auto bad = parse_host_config(text, "kiln.yml");
    ASSERT_FALSE(bad) << text;
    EXPECT_EQ(bad.error().where.line, line) << text;
    EXPECT_EQ(bad.error().where.column, column) << text;
    EXPECT_THAT(bad.error().message, ::testing::HasSubstr(words)) << text;
  }
}

TEST(HostConfig, SizesTakeBinaryUnitsInAnyCase) {
  EXPECT_EQ(parse_size("100").value(), 100u);
  EXPECT_EQ(parse_size("100B").value(), 100u);
  EXPECT_EQ(parse_size("64k").value(), 64u * 1024);
  EXPECT_EQ(parse_size("64KiB").value(), 64u * 1024);
  EXPECT_EQ(parse_size("64KB").value(), 64u * 1024);
  EXPECT_EQ(parse_size("512M").value(), 512u << 20);
  EXPECT_EQ(parse_size("2gib").value(), std::uint64_t{2} << 30);
  EXPECT_EQ(parse_size("3T").value(), std::uint64_t{3} << 40);
  EXPECT_EQ(parse_size("8388608T").value(), std::uint64_t{1} << 63);  // the largest
  EXPECT_EQ(parse_size("0").value(), 0u);
  for (const char* text : {"", "G", "1.5G", "-1", "1 G", "1X", "1Gi", "1GBB", "9999999999999999999",
                           "8388609T", "abc"}) {
    auto size = parse_size(text);
    ASSERT_FALSE(size) << text;
    EXPECT_EQ(size.error().code, ErrorCode::invalid_input) << text;
  }
}

TEST(HostConfig, JobLimits) {
  EXPECT_FALSE(parse_host_config("", "kiln.yml")->job_limits.any());
  auto config =
      parse_host_config("jobs:\n  limits: {memory: 16G, pids: 4096, cpus: 1.5}\n", "kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  EXPECT_EQ(config->job_limits.memory_bytes, 16ull << 30);
  EXPECT_EQ(config->job_limits.pids, 4096u);
  EXPECT_DOUBLE_EQ(config->job_limits.cpus, 1.5);
  EXPECT_EQ(config->job_limits_where.line, 2);
  EXPECT_EQ(config->job_limits_where.column, 11);
  for (auto [text, column, words] :
       {std::tuple{"jobs:\n  limits: {memory: lots}\n", 20,
                   "jobs.limits.memory: 'lots' is not a size"},
        std::tuple{"jobs:\n  limits: {memory: 1M}\n", 20, "less than 4M"},
        std::tuple{"jobs:\n  limits: {pids: 0}\n", 18, "not a number of processes"},
        std::tuple{"jobs:\n  limits: {cpus: 0}\n", 18, "from 0.01 to 4096"},
        std::tuple{"jobs:\n  limits: {cpus: lots}\n", 18, "'lots' is not a number of CPUs"},
        std::tuple{"jobs:\n  limits: {memroy: 1G}\n", 12, "memroy"}}) {
    auto bad = parse_host_config(text, "kiln.yml");
    ASSERT_FALSE(bad) << text;
    EXPECT_EQ(bad.error().where.line, 2) << text;
    EXPECT_EQ(bad.error().where.column, column) << text << bad.error().to_string();
    EXPECT_THAT(bad.error().message, ::testing::HasSubstr(words)) << text;
  }
}

TEST(HostConfig, MaxLogSize) {
  auto defaults = parse_host_config("", "kiln.yml");
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->max_log_bytes, std::uint64_t{1} << 30);
  auto config = parse_host_config("jobs:\n  max_log_size: 64K\n", "kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  EXPECT_EQ(config->max_log_bytes, 64u * 1024);
  for (auto [text, words] :
       {std::pair{"jobs:\n  max_log_size: lots\n", "'lots' is not a size"},
        std::pair{"jobs:\n  max_log_size: 1.5G\n", "'1.5G' is not a size"},
        std::pair{"jobs:\n  max_log_size: 0\n", "must be more than 0"},
        std::pair{"jobs:\n  max_log_size: [1G]\n", "expected a single value"}}) {
    auto bad = parse_host_config(text, "kiln.yml");
    ASSERT_FALSE(bad) << text;
    EXPECT_EQ(bad.error().where.line, 2) << text;
    EXPECT_EQ(bad.error().where.column, 17) << text;
    EXPECT_THAT(bad.error().message, ::testing::HasSubstr("jobs.max_log_size: ")) << text;
    EXPECT_THAT(bad.error().message, ::testing::HasSubstr(words)) << text;
  }
}

TEST(HostConfig, ActionsUrl) {
  auto defaults = parse_host_config("", "kiln.yml");
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->actions_url, "https://github.com");
  auto config = parse_host_config("actions:\n  url: https://ghe.example.com\n", "kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  EXPECT_EQ(config->actions_url, "https://ghe.example.com");
  auto bad = parse_host_config("actions:\n  url: ghe.example.com\n", "kiln.yml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where.to_string(), "kiln.yml:2:8");
  EXPECT_FALSE(parse_host_config("actions:\n  mirror: x\n", "kiln.yml"));
}

TEST(HostConfig, ErrorsSayWhere) {
  struct Case {
    const char* text;
    int line, column;
    const char* message;
  };
  const Case cases[] = {
      {"gpus:\n  lables: {}\n", 2, 3,
       "gpus: unknown key 'lables' (known: cost_per_hour, health, labels, telemetry)"},
      {"gpus:\n  health:\n    memory_grace: 10x\n", 3, 19,
       "gpus.health.memory_grace: '10x' is not a duration (e.g. 500ms, 10s, 2m, 7d)"},
      {"gpus:\n  health:\n    max_memory_used_before_job: lots\n", 3, 33,
       "gpus.health.max_memory_used_before_job: 'lots' is not an amount of GPU memory (e.g. "
       "512M, 2G, 5%)"},
      {"gpus:\n  labels:\n    gpu-a100: gpu:two\n", 3, 15,
       "runs-on label 'gpu:two': the GPU count must be a positive integer or 'all'"},
      {"gpus:\n  telemetry:\n    interval: 50ms\n", 3, 15,
       "gpus.telemetry.interval: 50ms is faster than 10 Hz (at least 100ms)"},
      {"gpus:\n  telemetry:\n    interval: often\n", 3, 15,
       "gpus.telemetry.interval: 'often' is not a duration (e.g. 500ms, 10s, 2m, 7d)"},
      {"gpus:\n  telemetry:\n    enabled: yes\n", 3, 14,
       "gpus.telemetry.enabled: expected true or false, got 'yes'"},
      {"gpus:\n  telemetry:\n    memory_budget: 50%\n", 3, 20,
       "gpus.telemetry.memory_budget: a budget is an amount (40G, 512M), not a percentage"},
      {"gpus:\n  telemetry:\n    rate: 1s\n", 3, 5, ""},
      {"runners: 3\n", 1, 1,
       "kiln.yml: unknown key 'runners' (known: actions, containers, debug, gpus, hipcheck, "
       "host_store, host_store_password_file, jobs, labels, priority, retry, serve, slurm, "
       "tests)"},
      {"host_store: postgresql://kiln:secret@db/kiln\n", 1, 13,
       "host_store: the store URL carries a password: give it in a file "
       "(host_store_password_file), PGPASSWORD or PGPASSFILE instead"},
      {"host_store: state/host.db\nhost_store_password_file: pw\n", 2, 27,
       "host_store_password_file: only for a host_store that is a postgresql:// URL"},
      {"containers:\n  allow: [privileged, host-ipc]\n", 2, 23,
       "containers.allow: 'host-ipc' is not one of host-network, host-pid, host-userns, "
       "host-uts, privileged"},
      {"containers:\n  limits:\n    memory: lots\n", 3, 13,
       "containers.limits.memory: 'lots' is not a size such as 16g or 512m"},
      {"containers:\n  pull: sometimes\n", 2, 9, ""},
      {"gpus: [1, 2\n", 2, 1, ""},
  };
  for (const auto& c : cases) {
    auto config = parse_host_config(c.text, "kiln.yml");
    ASSERT_FALSE(config) << c.text;
    EXPECT_EQ(config.error().code, ErrorCode::invalid_input);
    EXPECT_EQ(config.error().where.file, "kiln.yml");
    EXPECT_EQ(config.error().where.line, c.line) << c.text;
    if (*c.message) {
      EXPECT_EQ(config.error().where.column, c.column) << c.text;
      EXPECT_EQ(config.error().message, c.message);
    }
  }
}

TEST(HostConfig, FoundFromTheFlagOrTheEnvironment) {
  auto dir = fs::temp_directory_path() / ("kiln-config-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "kiln.yml") << "gpus:\n  health:\n    memory_grace: 3s\n";
  auto flagged = find_host_config(dir / "kiln.yml");
  ASSERT_TRUE(flagged);
  EXPECT_EQ(flagged->gpu_health.memory_grace, 3000ms);
  ::setenv("KILN_CONFIG", (dir / "kiln.yml").c_str(), 1);
  auto from_env = find_host_config(std::nullopt);
  ::unsetenv("KILN_CONFIG");
  ASSERT_TRUE(from_env);
  EXPECT_EQ(from_env->file, dir / "kiln.yml");
  auto missing = find_host_config(dir / "nope.yml");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::not_found);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::config

namespace kiln::config {
namespace {

TEST(ServeConfig, EveryKey) {
  auto config = parse_host_config(R"(serve:
  listen: 0.0.0.0:9090
  public_url: https://ci.example.com/
  store: state/kiln.db
  work_dir: /srv/kiln
  api_tokens: [t1, t2]
  max_concurrent_runs: 3
  shutdown_grace: 30s
  trusted_authors: [alice]
  repositories:
    acme/widgets:
      clone_url: /srv/git/widgets.git
      webhook_secret: s3cret
      trusted_authors: [bob]
      statuses:
        api_url: http://127.0.0.1:1/api/v1
        token: forge-token
      checks:
        api_url: https://api.github.com
        app_id: 12345
        installation_id: 678
        private_key_file: keys/app.pem
)",
                                  "/etc/kiln/kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  const auto& serve = config->serve;
  EXPECT_EQ(serve.listen_host, "0.0.0.0");
  EXPECT_EQ(serve.listen_port, 9090);
  EXPECT_EQ(serve.public_url, "https://ci.example.com");
  EXPECT_EQ(serve.store, std::filesystem::path("/etc/kiln/state/kiln.db"));
  EXPECT_EQ(serve.work_dir, std::filesystem::path("/srv/kiln"));
  EXPECT_EQ(serve.api_tokens, (std::vector<std::string>{"t1", "t2"}));
  EXPECT_EQ(serve.max_concurrent_runs, 3);
  EXPECT_EQ(serve.shutdown_grace, std::chrono::seconds(30));
  EXPECT_EQ(serve.trusted_authors, std::vector<std::string>{"alice"});
  ASSERT_EQ(serve.repositories.size(), 1u);
  EXPECT_EQ(serve.repositories[0].name, "acme/widgets");
  EXPECT_EQ(serve.repositories[0].clone_url, "/srv/git/widgets.git");
  EXPECT_EQ(serve.repositories[0].webhook_secret, "s3cret");
  EXPECT_EQ(serve.repositories[0].trusted_authors, std::vector<std::string>{"bob"});
  EXPECT_EQ(serve.repositories[0].statuses_api_url, "http://127.0.0.1:1/api/v1");
  EXPECT_EQ(serve.repositories[0].statuses_token, "forge-token");
  ASSERT_TRUE(serve.repositories[0].checks);
  EXPECT_EQ(serve.repositories[0].checks->api_url, "https://api.github.com");
  EXPECT_EQ(serve.repositories[0].checks->app_id, 12345);
  EXPECT_EQ(serve.repositories[0].checks->installation_id, 678);
  EXPECT_EQ(serve.repositories[0].checks->private_key_file,
            std::filesystem::path("/etc/kiln/keys/app.pem"));
  EXPECT_EQ(serve.repositories[0].checks->key_where.line, 22);
  EXPECT_TRUE(serve.repositories[0].checks->token.empty());
  EXPECT_TRUE(serve.repositories[0].poll_branches.empty());
  EXPECT_FALSE(serve.tls);
  EXPECT_EQ(serve.on_restart, OnRestart::requeue);
  EXPECT_FALSE(serve.bisect.on_regression);
  EXPECT_EQ(serve.bisect.max_commits, 64);
  EXPECT_EQ(serve.bisect.repeat, 3);
}

// serve.dashboard: private closes the reading routes too; it needs a token to read with.
TEST(ServeConfig, PrivateDashboard) {
  auto config = parse_host_config("serve:\n  api_tokens: [t1]\n  dashboard: private\n", "kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  EXPECT_TRUE(config->serve.private_dashboard);
  auto open = parse_host_config("serve:\n  dashboard: public\n", "kiln.yml");
  ASSERT_TRUE(open) << open.error().to_string();
  EXPECT_FALSE(open->serve.private_dashboard);
  auto tokenless = parse_host_config("serve:\n  dashboard: private\n", "kiln.yml");
  ASSERT_FALSE(tokenless);
  EXPECT_EQ(tokenless.error().to_string(),
            "kiln.yml:2:14: error: serve.dashboard: private needs serve.api_tokens");
  auto unknown = parse_host_config("serve:\n  api_tokens: [t]\n  dashboard: secret\n", "kiln.yml");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().to_string(),
            "kiln.yml:3:14: error: serve.dashboard: expected public or private, got 'secret'");
}

TEST(ServeConfig, BisectOnRegression) {
  auto config = parse_host_config(
      "serve:\n  bisect:\n    on_regression: true\n    max_commits: 10\n    repeat: 5\n",
      "kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  EXPECT_TRUE(config->serve.bisect.on_regression);
  EXPECT_EQ(config->serve.bisect.max_commits, 10);
  EXPECT_EQ(config->serve.bisect.repeat, 5);
}

TEST(ServeConfig, TlsPollAndRestart) {
  auto config = parse_host_config(R"(serve:
  tls:
    cert: tls/cert.pem
    key: /secure/key.pem
  on_restart: fail
  repositories:
    acme/widgets:
      clone_url: /srv/git/widgets.git
      webhook_secret: s3cret
      poll:
        branches: [main, refs/heads/release]
        interval: 2m
)",
                                  "/etc/kiln/kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  const auto& serve = config->serve;
  ASSERT_TRUE(serve.tls);
  EXPECT_EQ(serve.tls->cert, std::filesystem::path("/etc/kiln/tls/cert.pem"));
  EXPECT_EQ(serve.tls->key, std::filesystem::path("/secure/key.pem"));
  EXPECT_EQ(serve.tls->cert_where.to_string(), "/etc/kiln/kiln.yml:3:11");
  EXPECT_EQ(serve.tls->key_where.line, 4);
  EXPECT_EQ(serve.on_restart, OnRestart::fail);
  EXPECT_EQ(serve.repositories[0].poll_branches, (std::vector<std::string>{"main", "release"}));
  EXPECT_EQ(serve.repositories[0].poll_interval, std::chrono::minutes(2));
}

TEST(ServeConfig, APostgresqlStoreAndItsPasswordFile) {
  auto config = parse_host_config(
      "serve:\n  store: postgresql://kiln@db.example/kiln\n  store_password_file: secrets/pw\n",
      "/etc/kiln/kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  EXPECT_EQ(config->serve.store_url, "postgresql://kiln@db.example/kiln");
  EXPECT_FALSE(config->serve.store);
  EXPECT_EQ(config->serve.store_password_file, std::filesystem::path("/etc/kiln/secrets/pw"));
}

TEST(ServeConfig, ErrorsSayWhere) {
  struct Case {
    const char* text;
    const char* message;
    int line;
  };
  const Case cases[] = {
      {"serve:\n  listen: nowhere\n", "serve.listen: expected HOST:PORT", 2},
      {"serve:\n  colour: red\n", "serve: unknown key 'colour'", 2},
      {"serve:\n  repositories:\n    acme/w:\n      clone_url: /x\n", "webhook_secret is required",
       3},
      {"serve:\n  repositories:\n    widgets:\n      clone_url: /x\n      webhook_secret: s\n",
       "owner/name", 3},
      {"serve:\n  max_concurrent_runs: 0\n", "at least 1", 2},
      {"serve:\n  on_restart: retry\n", "expected requeue or fail", 2},
      {"serve:\n  tls:\n    cert: c.pem\n", "key is required", 3},
      {"serve:\n  bisect:\n    on_regresion: true\n", "serve.bisect: unknown key 'on_regresion'",
       3},
      {"serve:\n  bisect:\n    on_regression: yes please\n", "expected true or false", 3},
      {"serve:\n  bisect:\n    max_commits: 0\n", "serve.bisect.max_commits: expected a number", 3},
      {"serve:\n  bisect: {repeat: 21}\n", "serve.bisect.repeat: expected a number from 1 to 20",
       2},
      {"serve:\n  tls: {cert: c.pem, key: k.pem, ca: x}\n", "unknown key 'ca'", 2},
      {"serve:\n  repositories:\n    a/b:\n      clone_url: /x\n      webhook_secret: s\n"
       "      poll:\n        interval: 10s\n",
       "branches lists no branch", 7},
      {"serve:\n  repositories:\n    a/b:\n      clone_url: /x\n      webhook_secret: s\n"
       "      poll: {branches: [main], interval: 10ms}\n",
       "shorter than 1s", 6},
      {"serve:\n  store: postgresql://kiln:hunter2@db/kiln\n",
       "serve.store: the store URL carries "
       "a password",
       2},
      {"serve:\n  repositories:\n    a/b:\n      clone_url: /x\n      webhook_secret: s\n"
       "      checks: {api_url: https://api.github.com, app_id: 1}\n",
       "needs token, or app_id, installation_id and private_key_file", 6},
      {"serve:\n  repositories:\n    a/b:\n      clone_url: /x\n      webhook_secret: s\n"
       "      checks:\n        api_url: https://api.github.com\n        token: t\n"
       "        app_id: 1\n",
       "not both", 7},
      {"serve:\n  repositories:\n    a/b:\n      clone_url: /x\n      webhook_secret: s\n"
       "      checks:\n        api_url: api.github.com\n        token: t\n",
       "api_url is required, an http:// or https:// URL", 7},
      {"serve:\n  repositories:\n    a/b:\n      clone_url: /x\n      webhook_secret: s\n"
       "      checks:\n        api_url: https://x\n        app_id: twelve\n"
       "        installation_id: 2\n        private_key_file: k.pem\n",
       "app_id: expected a positive number, got 'twelve'", 8},
      {"serve:\n  repositories:\n    a/b:\n      clone_url: /x\n      webhook_secret: s\n"
       "      checks: {api_url: https://x, token: t, app: 1}\n",
       "unknown key 'app'", 6},
      {"serve:\n  store: kiln.db\n  store_password_file: pw\n",
       "only for a store that is a "
       "postgresql:// URL",
       3},
  };
  for (const auto& c : cases) {
    auto config = parse_host_config(c.text, "kiln.yml");
    ASSERT_FALSE(config) << c.text;
    EXPECT_EQ(config.error().code, ErrorCode::invalid_input);
    EXPECT_NE(config.error().message.find(c.message), std::string::npos) << config.error().message;
    EXPECT_EQ(config.error().where.line, c.line) << c.text;
  }
}

}  // namespace
}  // namespace kiln::config

namespace kiln::config {
namespace {

TEST(SlurmConfig, PoolsAndTheirLabels) {
  auto config = parse_host_config(R"(slurm:
  spool: spool
  bin_dir: /opt/slurm/bin
  pools:
    - labels: [gpu]
      partition: gpu
      account: ml
      qos: high
      exclusive: true
      gpu-model: {h100: h100_80g}
      sbatch_args: [--constraint=ib]
    - labels: [cpu-big]
)",
                                  "/etc/kiln/kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  ASSERT_TRUE(config->slurm);
  const auto& slurm = *config->slurm;
  EXPECT_EQ(slurm.spool, std::filesystem::path("/etc/kiln/spool"));
  EXPECT_EQ(slurm.bin_dir, std::filesystem::path("/opt/slurm/bin"));
  ASSERT_EQ(slurm.pools.size(), 2u);
  const auto& gpu = slurm.pools[0];
  EXPECT_EQ(gpu.partition, "gpu");
  EXPECT_EQ(gpu.account, "ml");
  EXPECT_EQ(gpu.qos, "high");
  EXPECT_TRUE(gpu.exclusive);
  EXPECT_EQ(gpu.gres_types.at("h100"), "h100_80g");
  EXPECT_EQ(gpu.sbatch_args, std::vector<std::string>{"--constraint=ib"});
  // `gpu` takes gpu, gpu:2 (the label or LABEL:...), not gpu-model:h100 alone.
  EXPECT_EQ(slurm.pool_for({"self-hosted", "gpu:2"}), &slurm.pools[0]);
  EXPECT_EQ(slurm.pool_for({"gpu"}), &slurm.pools[0]);
  EXPECT_EQ(slurm.pool_for({"gpu-model:h100"}), nullptr);
  EXPECT_EQ(slurm.pool_for({"cpu-big"}), &slurm.pools[1]);
  EXPECT_EQ(slurm.pool_for({"linux"}), nullptr);
}

TEST(SlurmConfig, ErrorsSayWhere) {
  auto error = [](const std::string& text) {
    auto config = parse_host_config(text, "/k/kiln.yml");
    return config ? std::string("no error") : config.error().to_string();
  };
  EXPECT_EQ(error("slurm:\n  spool: s\n  pools:\n    - labels: [gpu]\n      partitoin: p\n"),
            "/k/kiln.yml:5:7: error: slurm.pools[0]: unknown key 'partitoin' (known: account, "
            "exclusive, features, gpu-model, labels, nodes, partition, qos, sbatch_args)");
  EXPECT_THAT(error("slurm:\n  pools:\n    - labels: [gpu]\n"),
              ::testing::HasSubstr("/k/kiln.yml:2:3: error: slurm.spool: required"));
  EXPECT_THAT(error("slurm:\n  spool: s\n  pools: []\n"),
              ::testing::HasSubstr("/k/kiln.yml:3:10: error: slurm.pools: expected a list"));
  EXPECT_THAT(error("slurm:\n  spool: s\n  pools:\n    - partition: p\n"),
              ::testing::HasSubstr("slurm.pools[0].labels: a pool needs at least one"));
  EXPECT_THAT(error("slurm:\n  spool: s\n  pools:\n    - labels: [gpu]\n      exclusive: yes\n"),
              ::testing::HasSubstr("/k/kiln.yml:5:18: error: slurm.pools[0].exclusive: expected "
                                   "true or false, got 'yes'"));
  EXPECT_THAT(error("slurm:\n  spool: s\n  pools:\n    - labels: [gpu]\n      sbatch_args: "
                    "[constraint=ib]\n"),
              ::testing::HasSubstr("/k/kiln.yml:5:21: error: slurm.pools[0].sbatch_args: "
                                   "'constraint=ib' is not an option"));
}

}  // namespace
}  // namespace kiln::config
