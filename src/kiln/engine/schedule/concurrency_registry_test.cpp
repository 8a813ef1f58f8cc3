// The server-wide concurrency registry: two owners (two triggers' engine calls) sharing groups.

#include "kiln/engine/schedule/concurrency_registry.h"

#include <gtest/gtest.h>

namespace kiln::engine {
namespace {

struct Recorder : ConcurrencyRegistry::Listener {
  std::vector<std::string> grants, cancels;
  void granted(const std::string& id) override { grants.push_back(id); }
  void cancelled(const std::string& id, const std::string& group) override {
    cancels.push_back(id + "@" + group);
  }
};

TEST(ConcurrencyRegistry, NewerRunOfAnotherOwnerWaitsAndIsGrantedOnRelease) {
  ConcurrencyRegistry registry;
  Recorder a, b;
  const int first = registry.join(a), second = registry.join(b);
  EXPECT_TRUE(registry.request(first, "deploy", "run:1", false).start_now);
  auto waiting = registry.request(second, "Deploy", "run:2", false);  // names fold case
  EXPECT_FALSE(waiting.start_now);
  EXPECT_TRUE(waiting.cancel.empty());
  EXPECT_TRUE(a.cancels.empty());
  // The same local id in another owner is another claim.
  EXPECT_EQ(registry.release(first, "deploy", "run:1"), std::nullopt);
  EXPECT_EQ(b.grants, std::vector<std::string>{"run:2"});
  EXPECT_EQ(registry.release(second, "deploy", "run:2"), std::nullopt);
  EXPECT_EQ(registry.busy_groups(), 0u);
}

TEST(ConcurrencyRegistry, CancelInProgressReachesTheHolderOfAnotherOwner) {
  ConcurrencyRegistry registry;
  Recorder a, b;
  const int first = registry.join(a), second = registry.join(b);
  EXPECT_TRUE(registry.request(first, "g", "run:1", false).start_now);
  auto newer = registry.request(second, "g", "run:1", true);
  EXPECT_FALSE(newer.start_now);
  EXPECT_TRUE(newer.cancel.empty());
  EXPECT_EQ(a.cancels, std::vector<std::string>{"run:1@g"});
  EXPECT_TRUE(b.cancels.empty());
}

TEST(ConcurrencyRegistry, AnOlderPendingClaimIsCancelledWhereverItLives) {
  ConcurrencyRegistry registry;
  Recorder a, b, c;
  const int first = registry.join(a), second = registry.join(b), third = registry.join(c);
  EXPECT_TRUE(registry.request(first, "g", "run:1", false).start_now);
  EXPECT_FALSE(registry.request(second, "g", "run:2", false).start_now);
  EXPECT_FALSE(registry.request(third, "g", "run:3", false).start_now);
  EXPECT_EQ(b.cancels, std::vector<std::string>{"run:2@g"});
  EXPECT_TRUE(a.cancels.empty());
  // A pending claim of the caller itself is returned, not delivered.
  auto own = registry.request(third, "h", "run:4", false);
  EXPECT_TRUE(own.start_now);
  EXPECT_FALSE(registry.request(first, "h", "run:5", false).start_now);
  auto replaced = registry.request(first, "h", "run:6", false);
  EXPECT_EQ(replaced.cancel, std::vector<std::string>{"run:5"});
  EXPECT_TRUE(a.cancels.empty());
}

TEST(ConcurrencyRegistry, LeavingReleasesWhatTheOwnerHeld) {
  ConcurrencyRegistry registry;
  Recorder a, b;
  const int first = registry.join(a), second = registry.join(b);
  EXPECT_TRUE(registry.request(first, "g", "run:1", false).start_now);
  EXPECT_FALSE(registry.request(second, "g", "run:2", false).start_now);
  registry.leave(first);
  EXPECT_EQ(b.grants, std::vector<std::string>{"run:2"});
  registry.leave(second);
  EXPECT_EQ(registry.busy_groups(), 0u);
}

}  // namespace
}  // namespace kiln::engine
