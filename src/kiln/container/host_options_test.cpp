#include "kiln/container/host_options.h"

#include <sys/resource.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kiln::container {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

HostFacts host_without_render() {
  HostFacts host;
  host.groups = {{"video", 44}, {"root", 0}};
  host.can_raise_limits = false;
  host.limits[RLIMIT_MEMLOCK] = {8388608, 8388608};
  host.limits[RLIMIT_NOFILE] = {1024, 20000};
  return host;
}

TEST(AdaptToHost, DeviceGroupsBecomeTheHostsIds) {
  std::vector<std::string> args{"--group-add", "video", "--group-add", "render",
                                "--group-add", "users", "--ipc",       "host"};
  auto adapted = adapt_to_host(args, host_without_render());
  EXPECT_THAT(args, ElementsAre("--group-add", "44", "--group-add", "users", "--ipc", "host"));
  ASSERT_THAT(adapted.notes, SizeIs(2));
  EXPECT_THAT(adapted.notes[0], HasSubstr("--group-add video is passed as the host's group id 44"));
  EXPECT_THAT(adapted.notes[1], HasSubstr("this host has no 'render' group"));
  EXPECT_THAT(adapted.warnings, IsEmpty());
}

TEST(AdaptToHost, UlimitsAboveWhatTheHostAllowsAreLoweredWithAWarning) {
  std::vector<std::string> args{"--ulimit",         "memlock=-1", "--ulimit",
                                "nofile=1024:4096", "--ulimit",   "nofile=1024:65536"};
  auto adapted = adapt_to_host(args, host_without_render());
  EXPECT_THAT(args, ElementsAre("--ulimit", "memlock=8388608:8388608", "--ulimit",
                                "nofile=1024:4096", "--ulimit", "nofile=1024:20000"));
  ASSERT_THAT(adapted.warnings, SizeIs(2));
  EXPECT_THAT(adapted.warnings[0],
              HasSubstr("--ulimit memlock=-1 is above this host's hard limit (8388608)"));
  EXPECT_THAT(adapted.warnings[0], HasSubstr("--ulimit memlock=8388608:8388608 is used"));
  // Kiln with CAP_SYS_RESOURCE: the engine can raise them, nothing changes.
  HostFacts root = host_without_render();
  root.can_raise_limits = true;
  std::vector<std::string> unchanged{"--ulimit", "memlock=-1"};
  EXPECT_THAT(adapt_to_host(unchanged, root).warnings, IsEmpty());
  EXPECT_THAT(unchanged, ElementsAre("--ulimit", "memlock=-1"));
}

TEST(ThisHost, ReadsItsLimits) {
  auto host = this_host();
  EXPECT_TRUE(host.groups.contains("root"));
  EXPECT_TRUE(host.limits.contains(RLIMIT_NOFILE));
}

}  // namespace
}  // namespace kiln::container
