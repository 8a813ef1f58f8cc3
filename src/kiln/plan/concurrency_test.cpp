#include "kiln/plan/concurrency.h"

#include <atomic>
#include <set>
#include <thread>

#include <gtest/gtest.h>

namespace kiln::plan {
namespace {

using Strings = std::vector<std::string>;

TEST(Concurrency, FirstHolderStartsAndNextWaits) {
  ConcurrencyGroups groups;
  auto first = groups.request("deploy", "run-1", false);
  EXPECT_TRUE(first.start_now);
  EXPECT_TRUE(first.cancel.empty());
  auto second = groups.request("deploy", "run-2", false);
  EXPECT_FALSE(second.start_now);
  EXPECT_TRUE(second.cancel.empty());
  EXPECT_EQ(groups.holder("deploy"), "run-1");
  EXPECT_EQ(groups.pending("deploy"), "run-2");
  EXPECT_EQ(groups.release("deploy", "run-1"), "run-2");
  EXPECT_EQ(groups.holder("deploy"), "run-2");
  EXPECT_EQ(groups.pending("deploy"), std::nullopt);
  EXPECT_EQ(groups.release("deploy", "run-2"), std::nullopt);
  EXPECT_EQ(groups.busy_groups(), 0u);
}

TEST(Concurrency, NewerPendingReplacesOlderPending) {
  ConcurrencyGroups groups;
  groups.request("g", "a", false);
  groups.request("g", "b", false);
  auto c = groups.request("g", "c", false);
  EXPECT_FALSE(c.start_now);
  EXPECT_EQ(c.cancel, Strings{"b"});
  EXPECT_EQ(groups.pending("g"), "c");
  // The cancelled pending one releasing later changes nothing.
  EXPECT_EQ(groups.release("g", "b"), std::nullopt);
  EXPECT_EQ(groups.pending("g"), "c");
  EXPECT_EQ(groups.release("g", "a"), "c");
}

TEST(Concurrency, CancelInProgressCancelsHolderAndWaitsForIt) {
  ConcurrencyGroups groups;
  groups.request("ci-refs/heads/main", "a", true);
  groups.request("ci-refs/heads/main", "b", true);  // cancels a, waits
  auto c = groups.request("ci-refs/heads/main", "c", true);
  EXPECT_FALSE(c.start_now);
  EXPECT_EQ(c.cancel, (Strings{"b", "a"}));
  EXPECT_EQ(groups.holder("ci-refs/heads/main"), "a");  // until it has stopped
  EXPECT_EQ(groups.release("ci-refs/heads/main", "a"), "c");
}

TEST(Concurrency, GroupNamesAreCaseInsensitive) {
  ConcurrencyGroups groups;
  EXPECT_TRUE(groups.request("prod", "a", false).start_now);
  EXPECT_FALSE(groups.request("Prod", "b", false).start_now);
  EXPECT_EQ(groups.holder("PROD"), "a");
  EXPECT_TRUE(groups.request("staging", "c", false).start_now);
  EXPECT_EQ(groups.busy_groups(), 2u);
}

TEST(Concurrency, RepeatedRequestIsIdempotent) {
  ConcurrencyGroups groups;
  groups.request("g", "a", false);
  groups.request("g", "b", false);
  EXPECT_TRUE(groups.request("g", "a", true).start_now);
  auto again = groups.request("g", "b", true);
  EXPECT_FALSE(again.start_now);
  EXPECT_TRUE(again.cancel.empty());
  EXPECT_EQ(groups.pending("g"), "b");
}

TEST(Concurrency, ReleaseOfUnknownIsHarmless) {
  ConcurrencyGroups groups;
  EXPECT_EQ(groups.release("none", "x"), std::nullopt);
  groups.request("g", "a", false);
  EXPECT_EQ(groups.release("g", "stranger"), std::nullopt);
  EXPECT_EQ(groups.holder("g"), "a");
}

TEST(Concurrency, NeverTwoHoldersUnderThreads) {
  // Many threads take turns on a few groups; a holder is checked to be alone while it "runs".
  ConcurrencyGroups groups;
  constexpr int k_threads = 8, k_rounds = 300;
  std::atomic<int> inside[3] = {0, 0, 0};
  std::atomic<bool> overlap{false};
  std::atomic<int> completed{0};
  auto worker = [&](int t) {
    for (int r = 0; r < k_rounds; ++r) {
      int g = (t + r) % 3;
      std::string group = "group-" + std::to_string(g);
      std::string id = std::to_string(t) + ":" + std::to_string(r);
      auto decision = groups.request(group, id, false);
      if (!decision.start_now) {
        // Give up the wait (as a cancelled pending run would).
        groups.release(group, id);
        continue;
      }
      if (inside[g].fetch_add(1) != 0) overlap = true;
      inside[g].fetch_sub(1);
      ++completed;
      // Whoever is promoted now holds the group, but in this test it was already abandoned:
      // its owner released it, so release on its behalf if it is still recorded.
      if (auto next = groups.release(group, id)) groups.release(group, *next);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) threads.emplace_back(worker, t);
  for (auto& thread : threads) thread.join();
  EXPECT_FALSE(overlap);
  EXPECT_GT(completed.load(), 0);
  EXPECT_EQ(groups.busy_groups(), 0u);
}

}  // namespace
}  // namespace kiln::plan
