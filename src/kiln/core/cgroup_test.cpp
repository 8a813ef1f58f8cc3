// Job cgroups against trees laid out as the kernel lays out /sys/fs/cgroup (v1 or hybrid, and
// v2): where they are made and what is written. The real kernel's side (limits enforced, OOM
// kills counted, membership) is tests/integration/job_limits_test.sh's.

#include "kiln/core/cgroup.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "kiln/core/proc_stat.h"

namespace kiln::core {
namespace {

namespace fs = std::filesystem;
using Layout = CgroupHost::Layout;

class Cgroup : public ::testing::Test {
 protected:
  void SetUp() override {
    mount_ = fs::temp_directory_path() / ("kiln-cgroup-test-" + std::to_string(::getpid()));
    fs::remove_all(mount_);
    fs::create_directories(mount_);
  }
  void TearDown() override { fs::remove_all(mount_); }
  static std::string read(const fs::path& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  void v1_tree() {
    fs::create_directories(mount_ / "memory/svc/kiln");
    fs::create_directories(mount_ / "pids/svc");
    fs::create_directories(mount_ / "cpu,cpuacct");
    fs::create_directory_symlink("cpu,cpuacct", mount_ / "cpu");
    fs::create_directories(mount_ / "unified");  // hybrid: an empty unified hierarchy beside
  }
  static constexpr std::string_view k_v1_self =
      "12:pids:/svc\n4:memory:/svc/kiln\n2:cpu,cpuacct:/\n1:name=systemd:/svc\n0::/svc\n";
  void v2_tree(std::string_view controllers) {
    std::ofstream(mount_ / "cgroup.controllers") << "cpuset cpu io memory pids\n";
    fs::create_directories(mount_ / "system.slice/kiln.service");
    std::ofstream(mount_ / "system.slice/kiln.service/cgroup.controllers") << controllers;
    std::ofstream(mount_ / "system.slice/kiln.service/cgroup.subtree_control") << "";
  }
  fs::path mount_;
};

TEST_F(Cgroup, V1JobCgroupsAreMadeBelowKilnsOwnInEachHierarchy) {
  v1_tree();
  auto host = find_cgroup_host(mount_, k_v1_self);
  ASSERT_EQ(host.layout, Layout::v1) << host.why_not;
  ASSERT_EQ(host.parents.size(), 3u);
  EXPECT_EQ(host.parents[0], mount_ / "memory/svc/kiln");
  EXPECT_EQ(host.parents[1], mount_ / "pids/svc");
  EXPECT_EQ(host.parents[2], mount_ / "cpu");

  auto group = JobCgroup::create(host, {.memory_bytes = 64ull << 20, .pids = 32, .cpus = 1.5});
  ASSERT_TRUE(group) << group.error().message;
  ASSERT_EQ(group->directories().size(), 3u);
  const auto& dirs = group->directories();
  EXPECT_EQ(dirs[0].parent_path(), mount_ / "memory/svc/kiln");
  EXPECT_TRUE(dirs[0].filename().string().starts_with("kiln-job-" + std::to_string(::getpid())));
  EXPECT_EQ(read(dirs[0] / "memory.limit_in_bytes"), "67108864");
  EXPECT_FALSE(fs::exists(dirs[0] / "memory.memsw.limit_in_bytes"));  // no swap accounting here
  EXPECT_EQ(read(dirs[1] / "pids.max"), "32");
  EXPECT_EQ(read(dirs[2] / "cpu.cfs_period_us"), "100000");
  EXPECT_EQ(read(dirs[2] / "cpu.cfs_quota_us"), "150000");
  EXPECT_TRUE(group->members().empty());
}

TEST_F(Cgroup, V2EnablesTheControllersInKilnsCgroup) {
  v2_tree("cpuset cpu io memory pids\n");
  auto host = find_cgroup_host(mount_, "0::/system.slice/kiln.service\n");
  ASSERT_EQ(host.layout, Layout::v2) << host.why_not;
  ASSERT_EQ(host.parents.size(), 1u);
  const fs::path parent = mount_ / "system.slice/kiln.service";
  EXPECT_EQ(host.parents[0], parent);

  auto group = JobCgroup::create(host, {.memory_bytes = 1ull << 30, .pids = 0, .cpus = 2});
  ASSERT_TRUE(group) << group.error().message;
  EXPECT_EQ(read(parent / "cgroup.subtree_control"), "+memory +pids +cpu");
  const fs::path dir = group->directories().front();
  EXPECT_EQ(dir.parent_path(), parent);
  EXPECT_EQ(read(dir / "memory.max"), "1073741824");
  EXPECT_FALSE(fs::exists(dir / "pids.max"));  // no pids limit asked
  EXPECT_EQ(read(dir / "cpu.max"), "200000 100000");
}

TEST_F(Cgroup, HostsWithoutTheControllersSayWhy) {
  EXPECT_EQ(find_cgroup_host(mount_, k_v1_self).why_not,
            "no cgroup memory hierarchy under " + mount_.string());
  v2_tree("cpu io\n");
  auto host = find_cgroup_host(mount_, "0::/system.slice/kiln.service\n");
  EXPECT_EQ(host.layout, Layout::none);
  EXPECT_NE(host.why_not.find("has no memory controller"), std::string::npos) << host.why_not;
  auto group = JobCgroup::create(host, {.memory_bytes = 1 << 30, .pids = 0, .cpus = 0});
  ASSERT_FALSE(group);
  EXPECT_NE(group.error().message.find("this host cannot give jobs cgroups"), std::string::npos);
}

TEST_F(Cgroup, CgroupsOfDeadKilnProcessesAreRemovedLiveOnesKept) {
  v1_tree();
  auto host = find_cgroup_host(mount_, k_v1_self);
  ASSERT_EQ(host.layout, Layout::v1) << host.why_not;
  auto self = read_proc_stat(::getpid());
  ASSERT_TRUE(self);
  const fs::path parent = mount_ / "pids/svc";
  // No process has the largest pid Linux gives: that kiln is gone.
  fs::create_directory(parent / "kiln-job-4194303-1-0");
  const std::string live =
      "kiln-job-" + std::to_string(::getpid()) + "-" + std::to_string(self->start) + "-999";
  fs::create_directory(parent / live);
  fs::create_directory(parent / "someone-else");
  auto group = JobCgroup::create(host, {.memory_bytes = 0, .pids = 8, .cpus = 0});
  ASSERT_TRUE(group) << group.error().message;
  EXPECT_FALSE(fs::exists(parent / "kiln-job-4194303-1-0"));
  EXPECT_TRUE(fs::exists(parent / live));
  EXPECT_TRUE(fs::exists(parent / "someone-else"));
}

TEST(CgroupLimits, DescribeThemselves) {
  EXPECT_EQ((CgroupLimits{.memory_bytes = 64ull << 20, .pids = 32, .cpus = 1.5}).describe(),
            "memory 64 MiB, pids 32, cpus 1.5");
  EXPECT_EQ((CgroupLimits{.memory_bytes = 16ull << 30, .pids = 0, .cpus = 0}).describe(),
            "memory 16 GiB");
  EXPECT_FALSE(CgroupLimits{}.any());
}

}  // namespace
}  // namespace kiln::core
