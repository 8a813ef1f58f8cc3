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
  EXPECT_THAT(
      options->args,
      ElementsAre("--device", "/dev/fuse", "--group-add", "video", "--ipc", "host", "--shm-size",
                  "8g", "--ulimit", "memlock=-1", "--cap-add", "SYS_PTRACE", "--security-opt",
                  "seccomp=unconfined", "--env", "A=1", "--volume", "/data:/data:ro", "--user",
                  "1000:1000", "--memory", "16g", "--cpus", "4"));
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

TEST(ParseOptions, TheHostPolicyAllowsAndForces) {
  ContainerPolicy policy;
  policy.allow = {"privileged", "host-network"};
  policy.user = "1000:1000";
  policy.memory = "16g";
  policy.pids_limit = "4096";
  auto options = parse_options("--privileged --network=host --user 0 -m 64g --shm-size 2g",
                               k_where, policy);
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
      "--health-timeout 2s --health-start-period=3s --ulimit nofile=1024:1024 --init",
      k_where);
  ASSERT_TRUE(options) << options.error().to_string();
  EXPECT_TRUE(options->has_health_cmd);
  EXPECT_EQ(options->health_interval, "1s");
  EXPECT_EQ(options->health_retries, "5");
  EXPECT_EQ(options->health_timeout, "2s");
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
