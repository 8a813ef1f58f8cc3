#include "kiln/plan/event.h"

#include <gtest/gtest.h>

namespace kiln::plan {
namespace {

TEST(Event, RefNames) {
  Event push{.name = "push", .ref = "refs/heads/feature/x"};
  EXPECT_TRUE(push.is_branch());
  EXPECT_FALSE(push.is_tag());
  EXPECT_EQ(push.ref_name(), "feature/x");
  Event tag{.name = "push", .ref = "refs/tags/v1.2.0"};
  EXPECT_TRUE(tag.is_tag());
  EXPECT_EQ(tag.ref_name(), "v1.2.0");
  Event pr{.name = "pull_request", .ref = "refs/pull/7/merge"};
  EXPECT_FALSE(pr.is_branch() || pr.is_tag());
  EXPECT_EQ(pr.ref_name(), "refs/pull/7/merge");
}

TEST(Event, FromPushPayload) {
  auto payload = nlohmann::json::parse(R"({"ref": "refs/heads/main", "before": "aaa",
      "after": "bbb", "commits": []})");
  auto event = event_from_payload("push", payload);
  ASSERT_TRUE(event) << event.error().message;
  EXPECT_EQ(event->name, "push");
  EXPECT_EQ(event->ref, "refs/heads/main");
  EXPECT_EQ(event->before, "aaa");
  EXPECT_EQ(event->sha, "bbb");
  EXPECT_FALSE(event->changed_files_known);
  EXPECT_EQ(event->payload, payload);
}

TEST(Event, FromPullRequestPayload) {
  auto event = event_from_payload("pull_request", nlohmann::json::parse(R"({
      "action": "synchronize", "number": 7,
      "pull_request": {"number": 7, "base": {"ref": "main", "sha": "111"},
                       "head": {"ref": "feature", "sha": "222"}}})"));
  ASSERT_TRUE(event) << event.error().message;
  EXPECT_EQ(event->action, "synchronize");
  EXPECT_EQ(event->base_ref, "main");
  EXPECT_EQ(event->head_ref, "feature");
  EXPECT_EQ(event->sha, "222");
  EXPECT_EQ(event->ref, "refs/pull/7/merge");
}

TEST(Event, FromDispatchPayload) {
  auto event = event_from_payload("workflow_dispatch", nlohmann::json::parse(R"({
      "ref": "refs/heads/main", "inputs": {"level": "warning", "dry": true, "n": 3}})"));
  ASSERT_TRUE(event) << event.error().message;
  EXPECT_EQ(event->inputs.at("level"), "warning");
  EXPECT_EQ(event->inputs.at("dry"), "true");
  EXPECT_EQ(event->inputs.at("n"), "3");
}

TEST(Event, PayloadErrors) {
  EXPECT_FALSE(event_from_payload("push", nlohmann::json::array()));
  auto bad_ref = event_from_payload("push", nlohmann::json::parse(R"({"ref": 5})"));
  ASSERT_FALSE(bad_ref);
  EXPECT_NE(bad_ref.error().message.find("'ref' must be a string"), std::string::npos);
  auto bad_base = event_from_payload(
      "pull_request", nlohmann::json::parse(R"({"pull_request": {"base": {"ref": []}}})"));
  ASSERT_FALSE(bad_base);
  EXPECT_NE(bad_base.error().message.find("pull_request.base.ref"), std::string::npos);
  EXPECT_FALSE(event_from_payload("workflow_dispatch", nlohmann::json::parse(R"({"inputs": 1})")));
}

}  // namespace
}  // namespace kiln::plan
