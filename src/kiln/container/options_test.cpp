#include "kiln/container/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kiln::container {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const SourceLocation k_where{"ci.yml", 7, 16};

TEST(SplitWords, QuotesAndEscapes) {
  auto words = split_words(R"(--a 'b c' "d \"e\" \\ $" f\ g   -h)");
  ASSERT_TRUE(words) << words.error().message;
  EXPECT_THAT(*words, ElementsAre("--a", "b c", "d \"e\" \\ $", "f g", "-h"));
  EXPECT_FALSE(split_words("--a 'b"));
  EXPECT_FALSE(split_words("--a \"b"));
  EXPECT_THAT(*split_words(""), ElementsAre());
}

TEST(ParseOptions, PassesThroughWhatGpuPipelinesUse) {
  auto options = parse_options(
      "--device /dev/fuse --group-add video --ipc=host --shm-size 8g --ulimit memlock=-1 "
      "--cap-add SYS_PTRACE --security-opt seccomp=unconfined -e A=1 -v /data:/data:ro "
      "--user 1000:1000 --memory 16g --cpus 4",
      k_where);
  ASSERT_TRUE(options) << options.error().to_string();
  EXPECT_THAT(options->args,
              // --shm-size is left out under --ipc=host (IpcHostUsesTheHostsShmAndSaysSo).
              ElementsAre("--device", "/dev/fuse", "--group-add", "video", "--ipc", "host",
                          "--ulimit", "memlock=-1", "--cap-add", "SYS_PTRACE", "--security-opt",
                          "seccomp=unconfined", "--env", "A=1", "--volume", "/data:/data:ro",
                          "--user", "1000:1000", "--memory", "16g", "--cpus", "4"));
  EXPECT_FALSE(options->gpus);
  EXPECT_FALSE(options->sets_nofile);
}

TEST(ParseOptions, GluedShortOptions) {
  auto options = parse_options("-eFOO=bar -v/a:/b -u0", k_where);
  ASSERT_TRUE(options) << options.error().to_string();
  EXPECT_THAT(options->args, ElementsAre("--env", "FOO=bar", "--volume", "/a:/b", "--user", "0"));
}

TEST(ParseOptions, RefusesWhatBreaksIsolation) {
  struct Case {
    const char* options;
    const char* says;
  };
  for (const auto& c :
       {Case{"--privileged", "'--privileged' is refused"},
        Case{"--pid=host", "'--pid=host' is refused"},
        Case{"--pid host", "'--pid=host' is refused"},
        Case{"--network=host", "'--network=host' is refused"},
        Case{"--net host", "'--net=host' is refused"},
        Case{"--network bridge", "network of their own"}, Case{"--userns=host", "refused"},
        Case{"-v /:/host", "root file system"}, Case{"-v //:/host", "root file system"},
        Case{"--volume=/var/run/docker.sock:/var/run/docker.sock", "socket"},
        Case{"-v /run/podman/podman.sock:/s", "socket"},
        Case{"--mount type=bind,source=/,target=/h", "root file system"},
        Case{"--rm", "not allowed"}, Case{"--name x", "not allowed"},
        Case{"ubuntu", "not an option"}, Case{"--cpus", "needs a value"},
        Case{"--init=yes", "takes no value"}}) {
    auto options = parse_options(c.options, k_where);
    ASSERT_FALSE(options) << c.options;
    EXPECT_EQ(options.error().code, ErrorCode::invalid_input);
    EXPECT_EQ(options.error().where.to_string(), "ci.yml:7:16");
    EXPECT_THAT(options.error().message, HasSubstr(c.says)) << c.options;
  }
}

TEST(ParseOptions, IpcHostUsesTheHostsShmAndSaysSo) {
  for (const char* text : {"--ipc=host --shm-size 16G", "--shm-size=16G --ipc host"}) {
    auto options = parse_options(text, k_where);
    ASSERT_TRUE(options) << options.error().to_string();
    EXPECT_THAT(options->args, ElementsAre("--ipc", "host")) << text;
    ASSERT_THAT(options->notes, ::testing::SizeIs(1));
    EXPECT_THAT(options->notes[0], HasSubstr("--shm-size 16G is not passed: with --ipc=host"));
  }
  auto private_ipc = parse_options("--ipc private --shm-size=2gb", k_where);
  ASSERT_TRUE(private_ipc);
  EXPECT_THAT(private_ipc->args, ElementsAre("--ipc", "private", "--shm-size", "2gb"));
  EXPECT_THAT(private_ipc->notes, ::testing::IsEmpty());
}

TEST(ParseOptions, ValuesTheEnginesWouldRefuseAreRefusedHere) {
  struct Case {
    const char* options;
    const char* says;
  };
  for (const auto& c : {
           Case{"-v--net", "'-v--net' is ambiguous: it reads as '-v' with the value '--net'"},
           Case{"-v --net", "'-v' would take '--net' as its value, which is an option"},
           Case{"--device --privileged", "would take '--privileged' as its value"},
           Case{"-e-x", "ambiguous"},
           Case{"--device=", "has an empty value"},
           Case{"--shm-size 16Q", "'16Q' is not a size"},
           Case{"--shm-size=-1", "'-1' is not a size"},
           Case{"--ulimit memlock", "NAME=SOFT[:HARD]"},
           Case{"--ulimit memlok=-1", "NAME=SOFT[:HARD]"},
           Case{"--ulimit nofile=lots", "must be integers"},
           Case{"--ulimit nofile=4096:1024", "soft limit is above the hard limit"},
           Case{"--cap-add SYS_PTRAC", "'SYS_PTRAC' is not a Linux capability"},
           Case{"--cap-add ALL", "name the ones it needs"},
           Case{"--security-opt seccomp", "is not a security option"},
           Case{"--security-opt secomp=unconfined", "is not a security option"},
           Case{"--ipc=container:other", "joins the IPC namespace of another container"},
           Case{"--ipc=shared", "is not an IPC mode"},
           Case{"--privileged", "containers: allow: [privileged]"},
           Case{"--network host", "containers: allow: [host-network]"},
           // Durations as podman reads them (Go's): no days, a unit on every number.
           Case{"--health-interval 1d", "'1d' is not a duration (e.g. 500ms, 30s, 1m30s)"},
           Case{"--health-timeout=10", "'10' is not a duration"},
           Case{"--health-start-period soon", "'soon' is not a duration"},
           Case{"--health-retries three", "'three' is not a number of retries"},
           Case{"--health-retries=-1", "'-1' is not a number of retries"},
       }) {
    auto options = parse_options(c.options, k_where);
    ASSERT_FALSE(options) << c.options;
    EXPECT_EQ(options.error().where.to_string(), "ci.yml:7:16");
    EXPECT_THAT(options.error().message, HasSubstr(c.says)) << c.options;
  }
}

TEST(ParseOptions, WhatGpuWorkflowsWriteIsAccepted) {
  for (const char* text :
       {"--ulimit memlock=-1", "--ulimit memlock=-1:-1", "--ulimit stack=67108864",
        "--cap-add SYS_PTRACE", "--cap-add=sys_nice --cap-add CAP_IPC_LOCK",
        "--security-opt seccomp=unconfined", "--security-opt seccomp:unconfined",
        "--security-opt no-new-privileges", "--group-add video --group-add render",
        "--memory-swap -1 --pids-limit -1", "--shm-size 1.5g", "--entrypoint \"\""}) {
    auto options = parse_options(text, k_where);
    EXPECT_TRUE(options) << text << ": " << options.error().to_string();
  }
  ContainerPolicy privileged;
  privileged.allow = {"privileged"};
  EXPECT_TRUE(parse_options("--cap-add ALL", k_where, privileged));
  ContainerPolicy host_network;
  host_network.allow = {"host-network"};
  auto options = parse_options("--network host", k_where, host_network);
  ASSERT_TRUE(options);
  EXPECT_TRUE(options->host_network);
}

TEST(ParseOptions, TheHostPolicyAllowsAndForces) {
  ContainerPolicy policy;
  policy.allow = {"privileged", "host-network"};
  policy.user = "1000:1000";
  policy.memory = "16g";
  policy.pids_limit = "4096";
  auto options =
      parse_options("--privileged --network=host --user 0 -m 64g --shm-size 2g", k_where, policy);
  ASSERT_TRUE(options) << options.error().to_string();
  apply_forced(options->args, policy);
  EXPECT_THAT(options->args,
              ElementsAre("--privileged", "--network", "host", "--shm-size", "2g", "--user",
                          "1000:1000", "--memory", "16g", "--pids-limit", "4096"));
  // Only what the policy names: --pid=host is still refused.
  EXPECT_FALSE(parse_options("--pid=host", k_where, policy));
  EXPECT_FALSE(parse_options("--privileged", k_where));
  std::vector<std::string> none;
  apply_forced(none, policy);
  EXPECT_THAT(none, ElementsAre("--user", "1000:1000", "--memory", "16g", "--pids-limit", "4096"));
}

TEST(NumericUser, UidAndGid) {
  EXPECT_EQ(numeric_user("1000"), (std::pair<unsigned, unsigned>{1000, 1000}));
  EXPECT_EQ(numeric_user("1000:44"), (std::pair<unsigned, unsigned>{1000, 44}));
  EXPECT_FALSE(numeric_user("runner"));
  EXPECT_FALSE(numeric_user("1000:video"));
  EXPECT_FALSE(numeric_user(""));
}

TEST(ParseOptions, GpuRequestsAreTakenOutForTheGrant) {
  auto options = parse_options(
      "--gpus all --device /dev/kfd --device=/dev/dri/renderD129 --device nvidia.com/gpu=all "
      "--device /dev/nvidia3 --device /dev/fuse",
      k_where);
  ASSERT_TRUE(options) << options.error().to_string();
  EXPECT_EQ(options->gpus, "all");
  EXPECT_THAT(options->dropped_devices,
              ElementsAre("/dev/kfd", "/dev/dri/renderD129", "nvidia.com/gpu=all", "/dev/nvidia3"));
  EXPECT_THAT(options->args, ElementsAre("--device", "/dev/fuse"));
}

TEST(ParseOptions, HealthAndLimitsAreNoted) {
  auto options = parse_options(
      "--health-cmd \"pg_isready -U postgres\" --health-interval 1s --health-retries 5 "
      "--health-timeout 1m30s --health-start-period=3s --ulimit nofile=1024:1024 --init",
      k_where);
  ASSERT_TRUE(options) << options.error().to_string();
  EXPECT_TRUE(options->has_health_cmd);
  EXPECT_EQ(options->health_interval, "1s");
  EXPECT_EQ(options->health_retries, "5");
  EXPECT_EQ(options->health_timeout, "1m30s");
  EXPECT_EQ(options->health_start_period, "3s");
  EXPECT_TRUE(options->sets_nofile);
  EXPECT_FALSE(options->sets_nproc);
  EXPECT_TRUE(options->sets_init);
  EXPECT_THAT(options->args, ::testing::Contains("pg_isready -U postgres"));
}

TEST(RefusedVolume, NamedVolumesAndOrdinaryPathsAreAllowed) {
  EXPECT_FALSE(refused_volume("cache:/cache"));
  EXPECT_FALSE(refused_volume("/data:/data"));
  EXPECT_FALSE(refused_volume("/home/ci/.cache:/root/.cache:rw"));
  EXPECT_TRUE(refused_volume("/:/host:ro"));
  EXPECT_TRUE(refused_volume("/var/run/docker.sock:/var/run/docker.sock"));
  EXPECT_TRUE(refused_volume("/run:/run"));
}

}  // namespace
}  // namespace kiln::container
