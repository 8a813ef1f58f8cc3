// The step runner with a StepLauncher: the launcher decides where the shell runs, everything
// else (script file, file commands, output, timeout) stays the runner's. The launcher here runs
// the command on the host through `env -i`, so that only what launch() passes reaches it: the
// same shape as `podman exec -e K... CONTAINER argv`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "kiln/exec/step_runner.h"

namespace kiln::exec {
namespace {

using namespace std::chrono_literals;
using ::testing::Contains;
using ::testing::HasSubstr;

class EnvLauncher : public StepLauncher {
 public:
  std::optional<std::filesystem::path> find_program(std::string_view program,
                                                    std::string_view path_list) override {
    looked_up.emplace_back(program);
    if (program == "bash") return std::nullopt;  // as in an image without bash
    return core::find_executable(program, path_list);
  }
  Result<core::SpawnOptions> launch(std::vector<std::string> argv, core::Environment env,
                                    std::filesystem::path cwd) override {
    launched_cwd = cwd;
    launched_env = env;
    core::SpawnOptions spawn;
    spawn.argv = {"/usr/bin/env", "-i", "-C", cwd.string()};
    for (const auto& [key, value] : env) spawn.argv.push_back(key + "=" + value);
    spawn.argv.insert(spawn.argv.end(), argv.begin(), argv.end());
    // As the container launcher does: the token that names this step's processes is
    // KILN_JOB_TOKEN of the environment returned (step_launcher.h).
    spawn.env =
        core::Environment{{"PATH", "/usr/bin:/bin"}, {"KILN_JOB_TOKEN", env["KILN_JOB_TOKEN"]}};
    return spawn;
  }
  void signalled(std::string_view token, int signal) override {
    signals.emplace_back(std::string(token), signal);
  }
  std::optional<std::string> launch_failure(const core::ExitStatus& status) override {
    asked.push_back(status);
    if (status.signal != 0) return fmt::format("env was {}", status.to_string());
    return std::nullopt;
  }
  void stopped(std::string_view token) override {
    ++stops;
    stopped_token = token;
  }

  std::vector<std::string> looked_up;
  std::filesystem::path launched_cwd;
  core::Environment launched_env;
  int stops = 0;
  std::string stopped_token;
  std::vector<std::pair<std::string, int>> signals;
  std::vector<core::ExitStatus> asked;  // launch_failure()
};

class StepLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            fmt::format("kiln-launcher-{}-{}", ::getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(root_ / "work");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  StepRequest request(std::string script) {
    StepRequest r;
    r.script = std::move(script);
    r.working_directory = root_ / "work";
    r.env = {{"PATH", "/usr/bin:/bin"}, {"GREETING", "hello"}};
    r.temp_dir = root_ / "tmp";
    r.job_token = "kiln-test-token";
    r.launcher = &launcher_;
    return r;
  }

  std::filesystem::path root_;
  EnvLauncher launcher_;
  RecordingLogSink sink_;
  Masker masker_;
};

TEST_F(StepLauncherTest, TheShellIsFoundAndRunWhereTheLauncherSays) {
  auto result = run_step(
      request("echo \"$GREETING from $(pwd)\"\necho out=1 >> \"$GITHUB_OUTPUT\""), sink_, masker_);
  ASSERT_TRUE(result) << result.error().to_string();
  EXPECT_EQ(result->outcome, StepOutcome::success);
  // The default shell is bash, else sh: the launcher said there is no bash.
  EXPECT_THAT(launcher_.looked_up, Contains("bash"));
  EXPECT_THAT(launcher_.looked_up, Contains("sh"));
  EXPECT_THAT(sink_.texts(LogKind::output),
              Contains(fmt::format("hello from {}", (root_ / "work").string())));
  EXPECT_EQ(result->outputs["out"], "1");
  EXPECT_EQ(launcher_.launched_cwd, root_ / "work");
  // The launcher gets the step's whole environment: file-command paths and the job token too.
  EXPECT_TRUE(launcher_.launched_env.contains("GITHUB_OUTPUT"));
  EXPECT_EQ(launcher_.launched_env["KILN_JOB_TOKEN"], "kiln-test-token");
}

TEST_F(StepLauncherTest, AMissingShellIsAnErrorAndTheDirectoryIsTheLaunchersToCheck) {
  auto r = request("echo hi");
  r.shell = "python";
  r.env["PATH"] = "/nonexistent";
  auto result = run_step(r, sink_, masker_);
  ASSERT_FALSE(result);
  EXPECT_THAT(result.error().message, HasSubstr("was not found"));

  // A directory that only exists where the launcher runs the step is not refused by the runner.
  auto elsewhere = request("echo ran");
  elsewhere.working_directory = "/";
  auto ran = run_step(elsewhere, sink_, masker_);
  ASSERT_TRUE(ran) << ran.error().to_string();
  EXPECT_EQ(launcher_.launched_cwd, "/");
}

// The launcher tells its command's own failure (the engine client killed) from the step's exit:
// it is asked about a command that ended by itself and failed, and only then.
TEST_F(StepLauncherTest, TheLauncherSaysWhetherAFailedCommandWasItsOwnFailure) {
  auto ok = run_step(request("true"), sink_, masker_);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(launcher_.asked.empty());
  EXPECT_FALSE(ok->launch_failure);

  auto failed = run_step(request("exit 3"), sink_, masker_);
  ASSERT_TRUE(failed);
  ASSERT_EQ(launcher_.asked.size(), 1u);
  EXPECT_EQ(launcher_.asked[0].exit_code, 3);
  EXPECT_FALSE(failed->launch_failure);

  // The spawned command killed (`env` execs the shell: it is the shell here), as a `podman exec`
  // killed mid-step would be.
  auto killed = run_step(request("kill -9 $$"), sink_, masker_);
  ASSERT_TRUE(killed);
  EXPECT_EQ(killed->outcome, StepOutcome::failure);
  ASSERT_TRUE(killed->launch_failure);
  EXPECT_EQ(*killed->launch_failure, "env was killed by signal 9 (SIGKILL)");

  // A command kiln stopped (timeout, cancel) is not the launcher's failure.
  launcher_.asked.clear();
  auto r = request("sleep 30");
  r.timeout = 300ms;
  auto timed_out = run_step(r, sink_, masker_, nullptr, {.kill_grace = 200ms});
  ASSERT_TRUE(timed_out);
  EXPECT_TRUE(launcher_.asked.empty());
  EXPECT_FALSE(timed_out->launch_failure);
}

TEST_F(StepLauncherTest, ATimedOutStepIsReportedToTheLauncher) {
  auto r = request("sleep 30");
  r.timeout = 300ms;
  auto result = run_step(r, sink_, masker_, nullptr, {.kill_grace = 200ms});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcome, StepOutcome::timed_out);
  EXPECT_EQ(launcher_.stops, 1);
  EXPECT_EQ(launcher_.stopped_token, "kiln-test-token");
  EXPECT_TRUE(launcher_.signals.empty());  // a timeout is no cancel: no SIGINT
}

// A cancelled step: SIGINT, then SIGTERM, each passed to the launcher for what it started (a
// `podman exec` forwards neither into the container).
TEST_F(StepLauncherTest, ACancelledStepsSignalsArePassedToTheLauncher) {
  auto r = request("trap '' INT TERM; echo ready; sleep 30");
  CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    cancel.cancel();
  });
  auto result =
      run_step(r, sink_, masker_, &cancel, {.kill_grace = 200ms, .interrupt_grace = 200ms});
  canceller.join();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcome, StepOutcome::cancelled);
  std::vector<std::pair<std::string, int>> expected{{"kiln-test-token", SIGINT},
                                                    {"kiln-test-token", SIGTERM}};
  EXPECT_EQ(launcher_.signals, expected);
  EXPECT_EQ(launcher_.stops, 1);
}

}  // namespace
}  // namespace kiln::exec
