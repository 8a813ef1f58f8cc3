// Triggers of `kiln serve` in the SQLite store: delivery de-duplication that survives a reopen,
// updates, and listing by status.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "kiln/store/sqlite_store.h"
#include "kiln/store/store_backends_test_support.h"

namespace kiln::store {
namespace {

Trigger push_trigger(std::string delivery) {
  Trigger trigger;
  trigger.delivery = std::move(delivery);
  trigger.repository = "demo";
  trigger.event = "push";
  trigger.ref = "refs/heads/main";
  trigger.sha = "0123456789abcdef0123456789abcdef01234567";
  trigger.sender = "alice";
  trigger.payload = {{"ref", "refs/heads/main"}};
  return trigger;
}

class TriggerStoreTest : public testing::StoreBackendTest {
 protected:
  std::unique_ptr<Store> open() {
    auto store = try_open_store();
    EXPECT_TRUE(store) << store.error().message;
    return std::move(*store);
  }
};

TEST_P(TriggerStoreTest, DuplicateDeliveryIsNotCreatedAgainEvenAfterReopen) {
  std::int64_t first_id = 0;
  {
    auto store = open();
    auto first = store->create_trigger(push_trigger("d-1"));
    ASSERT_TRUE(first) << first.error().message;
    ASSERT_TRUE(first->has_value());
    first_id = **first;
    auto again = store->create_trigger(push_trigger("d-1"));
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->has_value());
  }
  auto store = open();
  auto after_reopen = store->create_trigger(push_trigger("d-1"));
  ASSERT_TRUE(after_reopen);
  EXPECT_FALSE(after_reopen->has_value());
  auto other = store->create_trigger(push_trigger("d-2"));
  ASSERT_TRUE(other && other->has_value());
  EXPECT_NE(**other, first_id);
  auto all = store->list_triggers(std::nullopt, 0);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 2u);
}

TEST_P(TriggerStoreTest, ASecondTriggerWithTheSameIdentityIsAReplayEvenAfterReopen) {
  {
    auto store = open();
    auto first = push_trigger("d-1");
    first.identity = "push:abc";
    auto created = store->create_trigger(first);
    ASSERT_TRUE(created && created->has_value());
  }
  auto store = open();
  auto replay = push_trigger("d-2");  // a new delivery id, the same payload
  replay.identity = "push:abc";
  auto again = store->create_trigger(replay);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->has_value());
  auto other = push_trigger("d-3");
  other.identity = "push:def";
  auto created = store->create_trigger(other);
  ASSERT_TRUE(created && created->has_value());
  auto none_a = store->create_trigger(push_trigger("d-4"));  // no identity: not checked
  auto none_b = store->create_trigger(push_trigger("d-5"));
  ASSERT_TRUE(none_a && none_a->has_value() && none_b && none_b->has_value());
}

TEST_P(TriggerStoreTest, TriggersWithoutDeliveryAreNeverDuplicates) {
  auto store = open();
  auto a = store->create_trigger(push_trigger(""));
  auto b = store->create_trigger(push_trigger(""));
  ASSERT_TRUE(a && a->has_value());
  ASSERT_TRUE(b && b->has_value());
  EXPECT_NE(**a, **b);
  auto read = store->get_trigger(**a);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->delivery, "");
}

TEST_P(TriggerStoreTest, UpdateAndListByStatus) {
  auto store = open();
  auto id = store->create_trigger(push_trigger("x"));
  ASSERT_TRUE(id && id->has_value());
  auto waiting = push_trigger("y");
  waiting.status = TriggerStatus::waiting_approval;
  ASSERT_TRUE(store->create_trigger(waiting));

  auto trigger = store->get_trigger(**id);
  ASSERT_TRUE(trigger);
  EXPECT_EQ(trigger->status, TriggerStatus::queued);
  EXPECT_EQ(trigger->payload["ref"], "refs/heads/main");
  trigger->status = TriggerStatus::finished;
  trigger->run_ids = nlohmann::json::array({4, 5});
  trigger->message = "done";
  ASSERT_TRUE(store->update_trigger(*trigger));
  auto read = store->get_trigger(**id);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->status, TriggerStatus::finished);
  EXPECT_EQ(read->run_ids, nlohmann::json::array({4, 5}));
  EXPECT_EQ(read->message, "done");

  auto waiting_list = store->list_triggers(TriggerStatus::waiting_approval, 0);
  ASSERT_TRUE(waiting_list);
  ASSERT_EQ(waiting_list->size(), 1u);
  EXPECT_EQ(waiting_list->front().delivery, "y");
  EXPECT_FALSE(store->get_trigger(9999));
  Trigger missing;
  missing.id = 9999;
  EXPECT_FALSE(store->update_trigger(missing));
}

}  // namespace
}  // namespace kiln::store

namespace kiln::store {
namespace {

class PollHeadStoreTest : public testing::StoreBackendTest {};

TEST_P(PollHeadStoreTest, LastSeenCommitPerBranchSurvivesReopen) {
  const std::string a(40, 'a'), b(40, 'b');
  {
    auto store = try_open_store();
    ASSERT_TRUE(store) << store.error().message;
    auto none = (*store)->get_poll_head("acme/widgets", "refs/heads/main");
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_FALSE(none->has_value());
    ASSERT_TRUE((*store)->set_poll_head("acme/widgets", "refs/heads/main", a));
    ASSERT_TRUE((*store)->set_poll_head("acme/widgets", "refs/heads/main", b));
    ASSERT_TRUE((*store)->set_poll_head("acme/widgets", "refs/heads/dev", a));
  }
  auto store = try_open_store();
  ASSERT_TRUE(store) << store.error().message;
  auto main = (*store)->get_poll_head("acme/widgets", "refs/heads/main");
  ASSERT_TRUE(main && main->has_value());
  EXPECT_EQ(**main, b);
  auto dev = (*store)->get_poll_head("acme/widgets", "refs/heads/dev");
  ASSERT_TRUE(dev && dev->has_value());
  EXPECT_EQ(**dev, a);
  auto other = (*store)->get_poll_head("acme/gadgets", "refs/heads/main");
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->has_value());
}

class RerunStoreTest : public testing::StoreBackendTest {};

TEST_P(RerunStoreTest, CountsByStatusAndTheRerunField) {
  auto store = try_open_store();
  ASSERT_TRUE(store) << store.error().message;
  auto none = (*store)->count_triggers();
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  Trigger rerun = push_trigger("");
  rerun.rerun = {{"run", 7}, {"failed_only", true}};
  auto id = (*store)->create_trigger(rerun);
  ASSERT_TRUE(id && id->has_value());
  auto waiting = push_trigger("w");
  waiting.status = TriggerStatus::waiting_approval;
  ASSERT_TRUE((*store)->create_trigger(waiting));
  ASSERT_TRUE((*store)->create_trigger(push_trigger("q")));
  auto read = (*store)->get_trigger(**id);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->rerun["run"], 7);
  EXPECT_EQ(read->rerun["failed_only"], true);
  auto plain = (*store)->list_triggers(TriggerStatus::waiting_approval, 0);
  ASSERT_TRUE(plain && plain->size() == 1);
  EXPECT_TRUE(plain->front().rerun.is_null());
  auto counts = (*store)->count_triggers();
  ASSERT_TRUE(counts);
  EXPECT_EQ((*counts)[TriggerStatus::queued], 2);
  EXPECT_EQ((*counts)[TriggerStatus::waiting_approval], 1);
  EXPECT_FALSE(counts->contains(TriggerStatus::finished));
}

TEST_P(RerunStoreTest, AReRunIsTheNextAttemptWithTheSameNumber) {
  auto store = try_open_store();
  ASSERT_TRUE(store) << store.error().message;
  store::Run run;
  run.repository = "acme/widgets";
  run.workflow_path = ".github/workflows/ci.yml";
  run.workflow_name = "ci";
  run.event = "push";
  auto first = (*store)->create_run(run);
  auto second = (*store)->create_run(run);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->attempt, 1);
  EXPECT_EQ(first->rerun_of, 0);
  EXPECT_EQ(second->number, 2);
  store::Run again = run;
  again.attempt = 2;
  again.rerun_of = first->id;
  again.number = first->number;
  auto rerun = (*store)->create_run(again);
  ASSERT_TRUE(rerun) << rerun.error().message;
  EXPECT_EQ(rerun->number, 1);  // GitHub keeps run_number across attempts
  auto read = (*store)->get_run(rerun->id);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->attempt, 2);
  EXPECT_EQ(read->rerun_of, first->id);
  EXPECT_EQ((*store)->get_run(first->id)->attempt, 1);
  // A later first attempt still counts on from the highest number.
  auto third = (*store)->create_run(run);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->number, 3);
}

TEST_P(TriggerStoreTest, OneOfTwoClaimsWinsAndADeadClaimersTriggersAreOrphaned) {
  auto first = try_open_store();
  auto second = try_open_store();  // its own connection, as another replica's
  ASSERT_TRUE(first && second);
  auto queued = [&](std::string delivery) {
    Trigger trigger;
    trigger.delivery = std::move(delivery);
    trigger.repository = "acme/widgets";
    trigger.event = "push";
    trigger.status = TriggerStatus::queued;
    return **(*first)->create_trigger(trigger);
  };
  const auto id = queued("d1");
  std::atomic<int> claimed{0};
  std::thread a([&] { claimed += (*first)->claim_trigger(id).value_or(false) ? 1 : 0; });
  std::thread b([&] { claimed += (*second)->claim_trigger(id).value_or(false) ? 1 : 0; });
  a.join();
  b.join();
  EXPECT_EQ(claimed.load(), 1);
  EXPECT_EQ((*second)->get_trigger(id)->status, TriggerStatus::running);
  EXPECT_FALSE(*(*first)->claim_trigger(id));  // running: not claimed again

  // This process beat at 1000: stale before 2000, not before 500.
  ASSERT_TRUE((*first)->beat(1000));
  EXPECT_EQ(*(*second)->list_orphaned_triggers(2000), std::vector<std::int64_t>{id});
  EXPECT_TRUE((*second)->list_orphaned_triggers(500)->empty());
  ASSERT_TRUE((*first)->beat(3000));
  EXPECT_TRUE((*second)->list_orphaned_triggers(2000)->empty());

  // A claimer of this host that died is gone at once, however fresh its last beat.
  const auto other = queued("d2");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto own = try_open_store();
    _exit(own && (*own)->claim_trigger(other).value_or(false) && (*own)->beat(5000) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(*(*second)->list_orphaned_triggers(2000), std::vector<std::int64_t>{other});
}

INSTANTIATE_TEST_SUITE_P(Backends, TriggerStoreTest, testing::backends(), testing::backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, PollHeadStoreTest, testing::backends(), testing::backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, RerunStoreTest, testing::backends(), testing::backend_name);

}  // namespace
}  // namespace kiln::store
