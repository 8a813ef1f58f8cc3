#include "kiln/container/engine.h"

#include <sys/resource.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kiln::container {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A runner that records every argv and answers from a script of results.
struct FakeRunner {
  std::vector<std::vector<std::string>> calls;
  std::vector<core::CommandOutput> answers;
  EngineCli::Runner runner() {
    return [this](const std::vector<std::string>& argv, const std::optional<core::Environment>&,
                  std::chrono::milliseconds) -> Result<core::CommandOutput> {
      calls.push_back(argv);
      if (answers.empty()) return core::CommandOutput{{0, 0}, "", ""};
      auto answer = answers.front();
      answers.erase(answers.begin());
      return answer;
    };
  }
};

core::CommandOutput ok(std::string out) { return {{0, 0}, std::move(out), ""}; }
core::CommandOutput failed(std::string err) { return {{125, 0}, "", std::move(err)}; }

Engine podman() { return {EngineKind::podman, "/usr/bin/podman"}; }
Engine docker() { return {EngineKind::docker, "/usr/bin/docker"}; }

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/kiln-engine-test-XXXXXX";
    path_ = mkdtemp(name);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  void add_program(const std::string& name) {
    auto file = path_ / name;
    std::ofstream(file) << "#!/bin/sh\n";
    std::filesystem::permissions(file, std::filesystem::perms::owner_all);
  }

 private:
  std::filesystem::path path_;
};

TEST(DetectEngine, PodmanFirstThenDocker) {
  TempDir both, only_docker, none;
  both.add_program("podman");
  both.add_program("docker");
  only_docker.add_program("docker");
  auto engine = detect_engine("", both.path().string());
  ASSERT_TRUE(engine) << engine.error().message;
  EXPECT_EQ(engine->kind, EngineKind::podman);
  EXPECT_EQ(engine->program, both.path() / "podman");
  engine = detect_engine("auto", only_docker.path().string());
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->kind, EngineKind::docker);
  engine = detect_engine("", none.path().string());
  ASSERT_FALSE(engine);
  EXPECT_EQ(engine.error().code, ErrorCode::not_found);
}

TEST(DetectEngine, ExplicitChoiceAndPath) {
  TempDir dir;
  dir.add_program("podman");
  dir.add_program("docker");
  auto engine = detect_engine("docker", dir.path().string());
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->kind, EngineKind::docker);
  engine = detect_engine((dir.path() / "podman").string(), "");
  ASSERT_TRUE(engine) << engine.error().message;
  EXPECT_EQ(engine->kind, EngineKind::podman);
  EXPECT_EQ(detect_engine("lxc", dir.path().string()).error().code, ErrorCode::invalid_input);
  TempDir empty;
  EXPECT_EQ(detect_engine("podman", empty.path().string()).error().code, ErrorCode::not_found);
}

TEST(PullPolicy, ParsesTheThreeNames) {
  EXPECT_EQ(parse_pull_policy("never"), PullPolicy::never);
  EXPECT_EQ(parse_pull_policy("missing"), PullPolicy::missing);
  EXPECT_EQ(parse_pull_policy("always"), PullPolicy::always);
  EXPECT_FALSE(parse_pull_policy("if-not-present"));
}

TEST(MutableTag, LatestOrNoTag) {
  EXPECT_TRUE(is_mutable_tag("ubuntu"));
  EXPECT_TRUE(is_mutable_tag("ubuntu:latest"));
  EXPECT_TRUE(is_mutable_tag("localhost:5000/team/cuda"));
  EXPECT_FALSE(is_mutable_tag("localhost:5000/team/cuda:12.4"));
  EXPECT_FALSE(is_mutable_tag("nvcr.io/nvidia/pytorch:24.05-py3"));
  EXPECT_FALSE(is_mutable_tag("ubuntu@sha256:0123456789abcdef"));
}

TEST(EngineCli, RunArgsCarryLabelsInitMountsAndOptions) {
  FakeRunner fake;
  EngineCli cli(podman(), fake.runner());
  RunSpec spec;
  spec.name = "kiln-7-build-job-abc123";
  spec.image = "localhost/kiln-test:1";
  spec.owner = {"7", "build (a)", 1234, 99, "host1"};
  spec.network = "kiln-7-net";
  spec.network_aliases = {"db"};
  spec.env_keys = {"A"};
  spec.volumes = {"/w:/w"};
  spec.ports = {"5432"};
  spec.workdir = "/w/workspace";
  spec.options = {"--shm-size", "1g"};
  spec.entrypoint = "tail";
  spec.command = {"-f", "/dev/null"};
  EXPECT_THAT(cli.run_args(spec),
              ElementsAre("run", "-d", "--name", "kiln-7-build-job-abc123", "--label", "kiln.run=7",
                          "--label", "kiln.job=build (a)", "--label", "kiln.owner-pid=1234",
                          "--label", "kiln.owner-start=99", "--label", "kiln.owner-host=host1",
                          "--network", "kiln-7-net", "--network-alias", "db", "--init", "-e", "A",
                          "-v", "/w:/w", "-p", "5432", "-w", "/w/workspace", "--shm-size", "1g",
                          "--entrypoint", "tail", "localhost/kiln-test:1", "-f", "/dev/null"));
}

TEST(EngineCli, AttachedRunArgsHaveNoDetachAndRemoveOnExit) {
  FakeRunner fake;
  EngineCli cli(podman(), fake.runner());
  RunSpec spec;
  spec.name = "n";
  spec.image = "i:1";
  spec.init = false;
  spec.detach = false;
  spec.remove_on_exit = true;
  EXPECT_THAT(cli.run_args(spec),
              ElementsAre("run", "--rm", "--name", "n", "--label", "kiln.run=", "--label",
                          "kiln.job=", "--label", "kiln.owner-pid=0", "--label",
                          "kiln.owner-start=0", "--label", "kiln.owner-host=", "i:1"));
}

TEST(EngineCli, EnsureImageReadsTheImagesEnvironment) {
  FakeRunner fake;
  fake.answers = {ok("sha256:abc reg/x@sha256:def\nPATH=/opt/bin:/bin\nLANG=C.UTF-8\n")};
  EngineCli cli(podman(), fake.runner());
  auto info = cli.ensure_image("reg/x:1", PullPolicy::missing);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->id, "sha256:abc");
  EXPECT_EQ(info->digest, "reg/x@sha256:def");
  EXPECT_THAT(info->env, ElementsAre("PATH=/opt/bin:/bin", "LANG=C.UTF-8"));
}

TEST(EngineCli, EnsureImageTakesTheDigestOfItsOwnRepository) {
  FakeRunner fake;
  fake.answers = {ok("sha256:abc other/y@sha256:1,localhost:5000/x@sha256:2\n")};
  EngineCli cli(podman(), fake.runner());
  auto info = cli.ensure_image("localhost:5000/x:1", PullPolicy::missing);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->digest, "localhost:5000/x@sha256:2");
}

TEST(EngineCli, EnsureImageMissingPullsThenInspects) {
  FakeRunner fake;
  fake.answers = {failed("Error: no such image"), ok(""), ok("sha256:abc reg/x@sha256:def,o\n")};
  EngineCli cli(podman(), fake.runner());
  auto info = cli.ensure_image("reg/x:1", PullPolicy::missing);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_TRUE(info->pulled);
  EXPECT_EQ(info->id, "sha256:abc");
  EXPECT_EQ(info->digest, "reg/x@sha256:def");
  ASSERT_EQ(fake.calls.size(), 3u);
  EXPECT_THAT(fake.calls[1], ElementsAre("/usr/bin/podman", "pull", "--quiet", "reg/x:1"));
}

TEST(EngineCli, EnsureImagePresentDoesNotPull) {
  FakeRunner fake;
  fake.answers = {ok("abc \n")};
  EngineCli cli(docker(), fake.runner());
  auto info = cli.ensure_image("x:1", PullPolicy::missing);
  ASSERT_TRUE(info);
  EXPECT_FALSE(info->pulled);
  EXPECT_EQ(info->id, "sha256:abc");
  EXPECT_EQ(fake.calls.size(), 1u);
}

TEST(EngineCli, EnsureImageAlwaysPullsAndNeverRefuses) {
  FakeRunner always;
  always.answers = {ok(""), ok("sha256:1 ")};
  EngineCli cli(podman(), always.runner());
  ASSERT_TRUE(cli.ensure_image("x:1", PullPolicy::always));
  EXPECT_EQ(always.calls.front()[1], "pull");

  FakeRunner never;
  never.answers = {failed("Error: x:1: image not known")};
  EngineCli strict(podman(), never.runner());
  auto info = strict.ensure_image("x:1", PullPolicy::never);
  ASSERT_FALSE(info);
  EXPECT_THAT(info.error().message, HasSubstr("pull policy is 'never'"));
  EXPECT_EQ(never.calls.size(), 1u);
}

TEST(EngineCli, PullFailureNamesTheImageAndTheEnginesReason) {
  FakeRunner fake;
  fake.answers = {failed("no such image"),
                  failed("Trying to pull...\nError: initializing source: no such host\n")};
  EngineCli cli(podman(), fake.runner());
  auto info = cli.ensure_image("reg.invalid/x:1", PullPolicy::missing);
  ASSERT_FALSE(info);
  EXPECT_THAT(info.error().message, HasSubstr("cannot pull image 'reg.invalid/x:1'"));
  EXPECT_THAT(info.error().message, HasSubstr("no such host"));
}

TEST(EngineCli, DockerCredentialsGoThroughAConfigDirectory) {
  FakeRunner fake;
  fake.answers = {failed("missing"), ok(""), ok("sha256:1 ")};
  EngineCli cli(docker(), fake.runner());
  ASSERT_TRUE(cli.ensure_image("x:1", PullPolicy::missing, "/tmp/auth/config.json"));
  EXPECT_THAT(fake.calls[1],
              ElementsAre("/usr/bin/docker", "--config", "/tmp/auth", "pull", "x:1"));
}

TEST(EngineCli, RemovalIsForcedAndIgnoresMissingObjects) {
  FakeRunner fake;
  fake.answers = {ok(""), failed("Error: network not found")};
  EngineCli cli(podman(), fake.runner());
  EXPECT_TRUE(cli.remove_container("c1"));
  EXPECT_TRUE(cli.remove_network("n1"));
  EXPECT_THAT(fake.calls[0],
              ElementsAre("/usr/bin/podman", "rm", "-f", "-v", "-t", "0", "--ignore", "c1"));
  EXPECT_THAT(fake.calls[1], ElementsAre("/usr/bin/podman", "network", "rm", "-f", "n1"));
}

TEST(DefaultUlimits, WithinKilnsOwnLimitsAndOnlyWhenNotGiven) {
  rlimit nofile{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &nofile), 0);
  auto args = default_ulimit_args(false, false);
  if (nofile.rlim_max != RLIM_INFINITY) {
    EXPECT_THAT(args,
                ::testing::Contains(fmt::format("nofile={}:{}", nofile.rlim_cur, nofile.rlim_max)));
  }
  EXPECT_THAT(default_ulimit_args(true, true), ElementsAre());
  for (const auto& arg : default_ulimit_args(true, false))
    EXPECT_THAT(arg, ::testing::Not(HasSubstr("nofile")));
}

}  // namespace
}  // namespace kiln::container
