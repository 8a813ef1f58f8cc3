#include "kiln/server/webhook.h"

#include <gtest/gtest.h>

namespace kiln::server {
namespace {

using json = nlohmann::json;

const std::string k_sha = "0123456789abcdef0123456789abcdef01234567";

config::ServeConfig serve_config() {
  config::ServeConfig config;
  config.trusted_authors = {"alice"};
  config::ServeRepository repo;
  repo.name = "acme/widgets";
  repo.clone_url = "/srv/git/widgets.git";
  repo.webhook_secret = "s";
  repo.trusted_authors = {"bob"};
  config.repositories.push_back(repo);
  return config;
}

std::string push_body(std::string after = k_sha) {
  return json{{"ref", "refs/heads/main"},
              {"before", std::string(40, '0')},
              {"after", after},
              {"repository", {{"full_name", "acme/widgets"}}},
              {"sender", {{"login", "carol"}}}}
      .dump();
}

std::string pull_body(std::string action, std::string head_repo, std::string author) {
  return json{{"action", action},
              {"number", 7},
              {"repository", {{"full_name", "acme/widgets"}}},
              {"sender", {{"login", author}}},
              {"pull_request",
               {{"number", 7},
                {"user", {{"login", author}}},
                {"head", {{"sha", k_sha}, {"ref", "topic"}, {"repo", {{"full_name", head_repo}}}}},
                {"base", {{"ref", "main"}, {"repo", {{"full_name", "acme/widgets"}}}}}}}}
      .dump();
}

TEST(Webhook, PushBecomesAQueuedTrigger) {
  auto event = parse_webhook("push", push_body());
  ASSERT_TRUE(event) << event.error().message;
  EXPECT_EQ(event->repository, "acme/widgets");
  EXPECT_EQ(event->ref, "refs/heads/main");
  EXPECT_EQ(event->sha, k_sha);
  EXPECT_EQ(event->ignored, "");
  auto config = serve_config();
  const auto* repo = find_repository(config, event->repository);
  ASSERT_NE(repo, nullptr);
  auto trigger = make_trigger(*event, "delivery-1", config, *repo);
  EXPECT_EQ(trigger.status, store::TriggerStatus::queued);
  EXPECT_EQ(trigger.delivery, "delivery-1");
  EXPECT_EQ(trigger.repository, "acme/widgets");
  EXPECT_EQ(trigger.event, "push");
  EXPECT_EQ(trigger.sha, k_sha);
  EXPECT_EQ(trigger.sender, "carol");
  EXPECT_EQ(trigger.payload["after"], k_sha);
}

TEST(Webhook, BranchDeletionAndOtherEventsAreIgnored) {
  auto deleted = parse_webhook("push", push_body(std::string(40, '0')));
  ASSERT_TRUE(deleted);
  EXPECT_NE(deleted->ignored, "");
  auto ping = parse_webhook("ping", R"({"zen": "hi"})");
  ASSERT_TRUE(ping);
  EXPECT_NE(ping->ignored, "");
  auto closed = parse_webhook("pull_request", pull_body("closed", "acme/widgets", "carol"));
  ASSERT_TRUE(closed);
  EXPECT_NE(closed->ignored, "");
}

TEST(Webhook, MalformedPayloadsAreInvalidInput) {
  for (auto [name, body] : std::initializer_list<std::pair<const char*, const char*>>{
           {"push", "{not json"},
           {"push", "[1, 2]"},
           {"push", R"({"ref": "refs/heads/main", "after": "abc"})"},
           {"pull_request", R"({"action": "opened", "repository": {"full_name": "a/b"}})"},
       }) {
    auto event = parse_webhook(name, body);
    ASSERT_FALSE(event) << body;
    EXPECT_EQ(event.error().code, ErrorCode::invalid_input);
  }
}

TEST(Webhook, UnknownRepositoryIsNotFound) {
  EXPECT_EQ(find_repository(serve_config(), "acme/other"), nullptr);
}

TEST(Webhook, ForkPullRequestOfAStrangerWaitsForApproval) {
  auto config = serve_config();
  const auto& repo = config.repositories[0];
  auto event = parse_webhook("pull_request", pull_body("opened", "mallory/widgets", "mallory"));
  ASSERT_TRUE(event) << event.error().message;
  EXPECT_TRUE(event->from_fork);
  EXPECT_EQ(event->ref, "refs/pull/7/head");
  EXPECT_FALSE(is_trusted(*event, config, repo));
  auto trigger = make_trigger(*event, "d", config, repo);
  EXPECT_EQ(trigger.status, store::TriggerStatus::waiting_approval);
  EXPECT_NE(trigger.message.find("mallory"), std::string::npos);
}

TEST(Webhook, TrustedAuthorsAndSameRepositoryPullRequestsRunAtOnce) {
  auto config = serve_config();
  const auto& repo = config.repositories[0];
  for (auto [head_repo, author] : std::initializer_list<std::pair<const char*, const char*>>{
           {"alice/widgets", "alice"},   // trusted server-wide
           {"bob/widgets", "bob"},       // trusted for this repository
           {"acme/widgets", "mallory"},  // not a fork: the author could push anyway
       }) {
    auto event = parse_webhook("pull_request", pull_body("synchronize", head_repo, author));
    ASSERT_TRUE(event) << event.error().message;
    EXPECT_EQ(make_trigger(*event, "d", config, repo).status, store::TriggerStatus::queued)
        << author;
  }
}

TEST(Webhook, WorkflowDispatchTakesRefAndInputs) {
  auto event = parse_webhook(
      "workflow_dispatch",
      json{{"ref", "main"},
           {"workflow", ".github/workflows/deploy.yml"},
           {"inputs", {{"target", "gpu-7"}, {"dry", true}, {"count", 3}, {"note", nullptr}}},
           {"repository", {{"full_name", "acme/widgets"}}},
           {"sender", {{"login", "carol"}}}}
          .dump());
  ASSERT_TRUE(event) << event.error().message;
  EXPECT_EQ(event->event, "workflow_dispatch");
  EXPECT_EQ(event->ref, "refs/heads/main");
  EXPECT_EQ(event->sha, "");
  EXPECT_EQ(event->ignored, "");
  EXPECT_EQ(event->payload["ref"], "refs/heads/main");
  EXPECT_EQ(event->payload["inputs"]["target"], "gpu-7");
  EXPECT_EQ(event->payload["inputs"]["dry"], "true");
  EXPECT_EQ(event->payload["inputs"]["count"], "3");
  EXPECT_EQ(event->payload["inputs"]["note"], "");
  auto config = serve_config();
  auto trigger = make_trigger(*event, "d", config, config.repositories[0]);
  EXPECT_EQ(trigger.status, store::TriggerStatus::queued);
  EXPECT_EQ(trigger.event, "workflow_dispatch");
}

TEST(Webhook, MalformedWorkflowDispatchIsRefused) {
  const json base = {{"ref", "refs/heads/main"}, {"repository", {{"full_name", "acme/widgets"}}}};
  auto without_ref = base;
  without_ref.erase("ref");
  auto bad_inputs = base;
  bad_inputs["inputs"] = json::array({"a"});
  auto nested_input = base;
  nested_input["inputs"] = {{"a", {{"b", 1}}}};
  auto escaping = base;
  escaping["workflow"] = ".github/workflows/../../etc/passwd";
  auto elsewhere = base;
  elsewhere["workflow"] = "/etc/passwd";
  for (const auto& body : {without_ref, bad_inputs, nested_input, escaping, elsewhere}) {
    auto event = parse_webhook("workflow_dispatch", body.dump());
    ASSERT_FALSE(event) << body.dump();
    EXPECT_EQ(event.error().code, ErrorCode::invalid_input) << body.dump();
  }
}

TEST(Webhook, PayloadIdentityIsTheEventAndTheBodysDigest) {
  const std::string body = push_body();
  auto event = parse_webhook("push", body);
  ASSERT_TRUE(event);
  const auto identity = payload_identity(*event, body);
  EXPECT_TRUE(identity.starts_with("push:")) << identity;
  EXPECT_EQ(identity.size(), 5u + 64u);
  EXPECT_EQ(identity, payload_identity(*event, body));  // a replay: the same body
  EXPECT_NE(identity, payload_identity(*event, body + " "));
  auto dispatch = parse_webhook("workflow_dispatch",
                                R"({"ref": "main", "repository": {"full_name": "acme/widgets"}})");
  ASSERT_TRUE(dispatch);
  EXPECT_EQ(payload_identity(*dispatch, "{}"), "");  // no moment in it: not checked
}

TEST(Webhook, EventTimeFromThePayload) {
  auto push = json::parse(push_body());
  push["repository"]["pushed_at"] = 1764635707;
  auto event = parse_webhook("push", push.dump());
  ASSERT_TRUE(event);
  EXPECT_EQ(event_time(*event), 1764635707000);
  push["repository"]["pushed_at"] = "2025-12-02T00:35:07Z";
  event = parse_webhook("push", push.dump());
  EXPECT_EQ(event_time(*event), 1764635707000);
  push["repository"]["pushed_at"] = "2025-12-02T02:35:07.250+02:00";
  event = parse_webhook("push", push.dump());
  EXPECT_EQ(event_time(*event), 1764635707000);
  push["repository"]["pushed_at"] = "yesterday";
  event = parse_webhook("push", push.dump());
  EXPECT_EQ(event_time(*event), std::nullopt);
  auto pull = json::parse(pull_body("opened", "mallory/widgets", "mallory"));
  pull["pull_request"]["updated_at"] = "2025-12-02T00:35:07Z";
  event = parse_webhook("pull_request", pull.dump());
  ASSERT_TRUE(event);
  EXPECT_EQ(event_time(*event), 1764635707000);
  event = parse_webhook("push", push_body());
  EXPECT_EQ(event_time(*event), std::nullopt);  // Gitea and Forgejo send no pushed_at
}

TEST(Webhook, EventsOutsideTheReplayWindowAreRefused) {
  auto push = json::parse(push_body());
  const std::int64_t now = 1764635707000;
  auto at = [&](std::int64_t ms) {
    push["repository"]["pushed_at"] = ms / 1000;
    return check_event_time(*parse_webhook("push", push.dump()), now);
  };
  EXPECT_TRUE(at(now));
  EXPECT_TRUE(at(now - 23 * 3'600'000));
  EXPECT_TRUE(at(now + 4 * 60'000));
  EXPECT_FALSE(at(now - 25 * 3'600'000));
  EXPECT_FALSE(at(now + 6 * 60'000));
  EXPECT_TRUE(check_event_time(*parse_webhook("push", push_body()), now));  // no time: no window
}

}  // namespace
}  // namespace kiln::server
