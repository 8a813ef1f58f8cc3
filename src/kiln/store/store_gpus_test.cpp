// GPU leases and quarantine in the SQLite store: all-or-nothing grants, reclaim after a kill -9
// of the owner, no double grant between processes racing for the same GPUs.

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "kiln/store/process_identity.h"
#include "kiln/store/sqlite_store.h"
#include "kiln/store/store_backends_test_support.h"

namespace kiln::store {
namespace {

GpuLease lease(std::string uuid, std::string token) {
  GpuLease l;
  l.gpu_uuid = std::move(uuid);
  l.job_token = std::move(token);
  l.holder = "project: CI / " + l.job_token;
  l.run_id = 1;
  return l;
}

class GpuLeaseTest : public testing::StoreBackendTest {
 protected:
  std::unique_ptr<Store> open() {
    auto store = try_open_store();
    EXPECT_TRUE(store) << store.error().to_string();
    return store ? std::move(*store) : nullptr;
  }
};

TEST_P(GpuLeaseTest, AllOrNothingAndReleaseByToken) {
  auto store = open();
  std::vector<GpuLease> first = {lease("GPU-a", "job-1"), lease("GPU-b", "job-1")};
  ASSERT_EQ(store->acquire_gpu_leases(first).value_or(false), true);
  // GPU-b is held: neither GPU-b nor GPU-c is granted.
  std::vector<GpuLease> second = {lease("GPU-c", "job-2"), lease("GPU-b", "job-2")};
  ASSERT_EQ(store->acquire_gpu_leases(second).value_or(true), false);
  auto held = store->list_gpu_leases();
  ASSERT_TRUE(held);
  ASSERT_EQ(held->size(), 2u);
  EXPECT_EQ((*held)[0].gpu_uuid, "GPU-a");
  EXPECT_EQ((*held)[0].holder, "project: CI / job-1");
  EXPECT_EQ((*held)[0].owner.pid, getpid());
  EXPECT_GT((*held)[0].granted_at, 0);

  ASSERT_TRUE(store->release_gpu_leases("job-1"));
  ASSERT_EQ(store->acquire_gpu_leases(second).value_or(false), true);
  held = store->list_gpu_leases();
  ASSERT_EQ(held->size(), 2u);
  EXPECT_EQ((*held)[0].job_token, "job-2");
  ASSERT_TRUE(store->release_gpu_leases("no-such-job"));
}

TEST_P(GpuLeaseTest, TheHolderOfAJobsLeasesCanBeRenamed) {
  auto store = open();
  std::vector<GpuLease> leases = {lease("GPU-a", "job-1"), lease("GPU-b", "job-2")};
  ASSERT_EQ(store->acquire_gpu_leases(leases).value_or(false), true);
  ASSERT_TRUE(store->set_gpu_lease_holder("job-1", "held for debugging"));
  auto held = store->list_gpu_leases();
  ASSERT_TRUE(held);
  ASSERT_EQ(held->size(), 2u);
  EXPECT_EQ((*held)[0].holder, "held for debugging");
  EXPECT_EQ((*held)[1].holder, "project: CI / job-2");
}

TEST_P(GpuLeaseTest, LeasesOfAKilledOwnerAreReclaimed) {
  auto store = open();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    close(ready[0]);
    auto own = try_open_store();
    std::vector<GpuLease> mine = {lease("GPU-a", "crashed-job")};
    if (!own || !(*own)->acquire_gpu_leases(mine).value_or(false)) _exit(1);
    char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(2);
    pause();
    _exit(0);
  }
  testing::ChildGuard guard(child);
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);

  std::vector<GpuLease> want = {lease("GPU-a", "next-job")};
  ASSERT_EQ(store->acquire_gpu_leases(want).value_or(true), false);  // the owner lives
  auto listed = store->list_gpu_leases();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].owner.pid, child);

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  guard.release();
  auto reclaimed = store->reclaim_gpu_leases();
  ASSERT_TRUE(reclaimed);
  ASSERT_EQ(reclaimed->size(), 1u);
  EXPECT_EQ((*reclaimed)[0].job_token, "crashed-job");
  ASSERT_EQ(store->acquire_gpu_leases(want).value_or(false), true);
}

TEST_P(GpuLeaseTest, RacingProcessesNeverShareAGpu) {
  // Four processes each try, 200 times, to lease two of four GPUs and release them; each one
  // checks, while it holds them, that the store shows no other holder of its GPUs.
  (void)open();  // migrate once, before the race
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    pid_t child = fork();
    if (child == 0) {
      auto store = try_open_store();
      if (!store) _exit(1);
      for (int i = 0; i < 200; ++i) {
        auto token = fmt::format("p{}-{}", p, i);
        int a = (p + i) % 4, b = (p + i + 1) % 4;
        std::vector<GpuLease> want = {lease(fmt::format("GPU-{}", a), token),
                                      lease(fmt::format("GPU-{}", b), token)};
        auto got = (*store)->acquire_gpu_leases(want);
        if (!got) _exit(2);
        if (!*got) continue;
        auto held = (*store)->list_gpu_leases();
        if (!held) _exit(3);
        for (const auto& l : *held)
          if ((l.gpu_uuid == want[0].gpu_uuid || l.gpu_uuid == want[1].gpu_uuid) &&
              l.job_token != token)
            _exit(4);  // a double grant
        if (!(*store)->release_gpu_leases(token)) _exit(5);
      }
      _exit(0);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child exited with " << WEXITSTATUS(status);
  }
  EXPECT_TRUE(open()->list_gpu_leases()->empty());
}

TEST_P(GpuLeaseTest, QuarantineIsReplacedListedAndReleased) {
  auto store = open();
  ASSERT_TRUE(store->quarantine_gpu({"GPU-b", "memory did not come back", 0, 600, false}));
  ASSERT_TRUE(store->quarantine_gpu({"GPU-a", "uncorrected ECC errors", 5, 0, true}));
  ASSERT_TRUE(store->quarantine_gpu({"GPU-b", "xid 79", 7, 0, true}));
  auto listed = store->list_gpu_quarantine();
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].gpu_uuid, "GPU-a");
  EXPECT_EQ((*listed)[1].memory_limit_mib, 0u);  // replaced, not merged
  EXPECT_TRUE((*listed)[1].manual_release);
  EXPECT_EQ((*listed)[1].reason, "xid 79");
  EXPECT_EQ((*listed)[1].since, 7);
  EXPECT_EQ(store->release_gpu_quarantine("GPU-b").value_or(false), true);
  EXPECT_EQ(store->release_gpu_quarantine("GPU-b").value_or(true), false);
  EXPECT_EQ(store->list_gpu_quarantine()->size(), 1u);
  ASSERT_TRUE(store->quarantine_gpu({"GPU-c", "memory did not come back", 0, 600, false}));
  EXPECT_EQ(store->list_gpu_quarantine()->back().memory_limit_mib, 600u);
  EXPECT_FALSE(store->list_gpu_quarantine()->back().manual_release);
}

TEST_P(GpuLeaseTest, HostsSharingAStoreKeepTheirGpusApartAndListTheFleet) {
  // Another host, as far as the store can tell: a child in a UTS namespace of its own with
  // another host name leases and quarantines GPUs, then exits.
  (void)open();  // migrate once
  pid_t child = fork();
  if (child == 0) {
    if (unshare(CLONE_NEWUTS) != 0) _exit(77);
    static constexpr std::string_view k_name = "kiln-other-host";
    if (sethostname(k_name.data(), k_name.size()) != 0) _exit(77);
    auto store = try_open_store();
    if (!store) _exit(1);
    if (!(*store)->acquire_gpu_leases(std::vector{lease("GPU-a", "other-job")}).value_or(false))
      _exit(2);
    if (!(*store)->quarantine_gpu({"GPU-b", "xid 79", 3, 0, true})) _exit(3);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no UTS namespace here (needs root)";
  ASSERT_EQ(WEXITSTATUS(status), 0);

  auto store = open();
  // This host's view: none of the other host's leases or quarantine; its dead owner's lease is
  // not this host's to reclaim.
  EXPECT_TRUE(store->list_gpu_leases()->empty());
  EXPECT_TRUE(store->list_gpu_quarantine()->empty());
  EXPECT_TRUE(store->reclaim_gpu_leases()->empty());
  ASSERT_EQ(store->acquire_gpu_leases(std::vector{lease("GPU-a", "mine")}).value_or(false), true);
  // The fleet's view: both hosts, each row naming its host.
  auto leases = store->list_fleet_gpu_leases();
  ASSERT_TRUE(leases);
  ASSERT_EQ(leases->size(), 2u);
  std::set<std::string> holders;
  for (const auto& l : *leases) holders.insert(l.owner.host + "/" + l.job_token);
  EXPECT_TRUE(holders.contains("kiln-other-host/other-job"));
  EXPECT_TRUE(holders.contains(host_name() + "/mine"));
  auto quarantined = store->list_fleet_gpu_quarantine();
  ASSERT_TRUE(quarantined);
  ASSERT_EQ(quarantined->size(), 1u);
  EXPECT_EQ((*quarantined)[0].host, "kiln-other-host");
  EXPECT_EQ((*quarantined)[0].reason, "xid 79");
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuLeaseTest, testing::backends(), testing::backend_name);

}  // namespace
}  // namespace kiln::store
