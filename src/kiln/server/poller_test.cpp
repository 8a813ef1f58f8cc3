// Polling of a git remote (a local bare repository): first sight records, a new commit becomes
// one push trigger, nothing triggers twice, and ls_remote reads exactly the refs asked for.

#include "kiln/server/poller.h"

#include <gtest/gtest.h>

#include "kiln/core/subprocess.h"
#include "kiln/store/sqlite_store.h"
#include "kiln/store/test_support.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;

class PollerTest : public store::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    work_ = dir_ / "work";
    bare_ = dir_ / "widgets.git";
    fs::create_directories(work_);
    git(work_, {"init", "-q", "-b", "main"});
    commit("one");
    git(dir_, {"clone", "-q", "--bare", work_.string(), bare_.string()});
    auto opened = store::open_sqlite_store(db_path());
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
    config::ServeRepository repository;
    repository.name = "acme/widgets";
    repository.clone_url = bare_.string();
    repository.webhook_secret = "s";
    repository.poll_branches = {"main", "absent"};
    serve_.repositories.push_back(repository);
  }

  std::string git(const fs::path& cwd, std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"});
    auto out = core::run_command(args, cwd);
    EXPECT_TRUE(out && out->ok()) << (out ? out->err : out.error().message);
    return out ? out->out : "";
  }
  std::string commit(const std::string& message) {
    git(work_, {"commit", "-q", "--allow-empty", "-m", message});
    return git(work_, {"rev-parse", "HEAD"}).substr(0, 40);
  }
  std::string push(const std::string& message) {
    auto sha = commit(message);
    git(work_, {"push", "-q", bare_.string(), "HEAD:refs/heads/main"});
    return sha;
  }

  fs::path work_, bare_;
  std::unique_ptr<store::Store> store_;
  config::ServeConfig serve_;
};

TEST_F(PollerTest, FirstSightRecordsThenANewCommitTriggersOnce) {
  std::vector<std::int64_t> enqueued;
  Poller poller(serve_, *store_, [&](std::int64_t id) { enqueued.push_back(id); });
  const auto& repository = serve_.repositories[0];
  const std::string first = git(work_, {"rev-parse", "HEAD"}).substr(0, 40);

  auto seen = poller.poll_once(repository);
  ASSERT_TRUE(seen) << seen.error().message;
  EXPECT_TRUE(seen->empty()) << "the first sight of a branch triggers nothing";
  auto head = store_->get_poll_head("acme/widgets", "refs/heads/main");
  ASSERT_TRUE(head && head->has_value());
  EXPECT_EQ(**head, first);
  auto absent = store_->get_poll_head("acme/widgets", "refs/heads/absent");
  ASSERT_TRUE(absent);
  EXPECT_FALSE(absent->has_value());

  const std::string second = push("two");
  auto created = poller.poll_once(repository);
  ASSERT_TRUE(created) << created.error().message;
  ASSERT_EQ(created->size(), 1u);
  EXPECT_EQ(enqueued, *created);
  auto trigger = store_->get_trigger(created->front());
  ASSERT_TRUE(trigger) << trigger.error().message;
  EXPECT_EQ(trigger->event, "push");
  EXPECT_EQ(trigger->ref, "refs/heads/main");
  EXPECT_EQ(trigger->sha, second);
  EXPECT_EQ(trigger->delivery, poll_delivery("acme/widgets", "refs/heads/main", second));
  EXPECT_EQ(trigger->status, store::TriggerStatus::queued);
  EXPECT_EQ(trigger->payload["before"], first);
  EXPECT_EQ(trigger->payload["after"], second);

  auto again = poller.poll_once(repository);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->empty()) << "an unchanged branch triggers nothing";
  // A lost head record (an older store) does not run the same commit twice: the delivery id.
  ASSERT_TRUE(store_->set_poll_head("acme/widgets", "refs/heads/main", first));
  auto redone = poller.poll_once(repository);
  ASSERT_TRUE(redone);
  EXPECT_TRUE(redone->empty());
  EXPECT_EQ(enqueued.size(), 1u);
}

TEST_F(PollerTest, LsRemoteReadsExactRefsAndFailsOnAMissingRemote) {
  git(work_, {"push", "-q", bare_.string(), "HEAD:refs/heads/feature/main"});
  auto heads = ls_remote(bare_.string(), {"refs/heads/main"});
  ASSERT_TRUE(heads) << heads.error().message;
  ASSERT_EQ(heads->size(), 1u);  // not refs/heads/feature/main, which ends the same way
  EXPECT_EQ(heads->begin()->first, "refs/heads/main");
  auto missing = ls_remote((dir_ / "nowhere.git").string(), {"refs/heads/main"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::io_error);
}

}  // namespace
}  // namespace kiln::server
