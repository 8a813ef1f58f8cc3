#include "kiln/config/priority_config.h"

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/config/host_config.h"

namespace kiln::config {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view k_classes = R"(priority:
  aging: 5m
  classes:
    - name: release
      branch: [main, 'release/*']
      event: push
    - name: pull-request
      event: [pull_request, pull_request_target]
    - name: nightly
      repository: 'ml/*'
      label: nightly
)";

TEST(PriorityConfig, ClassesInOrderAndTheDefaultBelowThem) {
  auto config = parse_host_config(k_classes, "kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  const auto& policy = config->priority;
  ASSERT_EQ(policy.classes.size(), 3u);
  EXPECT_EQ(policy.aging, 5min);
  auto rank = [&](PriorityFacts facts) { return policy.classify(facts); };
  EXPECT_EQ(rank({"a/b", "main", "push", {}}).name, "release");
  EXPECT_EQ(rank({"a/b", "release/2.1", "push", {}}).rank, 0);
  // Every key of a class must match: a pull request into main is not a release.
  EXPECT_EQ(rank({"a/b", "main", "pull_request", {}}).name, "pull-request");
  EXPECT_EQ(rank({"a/b", "main", "pull_request_target", {}}).rank, 1);
  EXPECT_EQ(rank({"ml/train", "dev", "schedule", {"self-hosted", "nightly"}}).name, "nightly");
  auto other = rank({"ml/train", "dev", "schedule", {"self-hosted"}});
  EXPECT_EQ(other.name, "default");
  EXPECT_EQ(other.rank, 3);
  EXPECT_EQ(rank({"web/site", "feature/x", "push", {"nightly"}}).name, "default");
}

TEST(PriorityConfig, NoClassesPutEveryJobInTheDefaultClass) {
  auto config = parse_host_config("", "kiln.yml");
  ASSERT_TRUE(config);
  EXPECT_TRUE(config->priority.classes.empty());
  EXPECT_EQ(config->priority.aging, 10min);
  auto placed = config->priority.classify({"a/b", "main", "push", {}});
  EXPECT_EQ(placed.rank, 0);
  EXPECT_EQ(placed.name, "default");
}

TEST(PriorityConfig, AgingRaisesOneClassPerPeriodUpToTheTop) {
  PriorityPolicy policy;
  policy.aging = 10min;
  EXPECT_EQ(policy.effective_rank(3, 0ms), 3);
  EXPECT_EQ(policy.effective_rank(3, 9min), 3);
  EXPECT_EQ(policy.effective_rank(3, 10min), 2);
  EXPECT_EQ(policy.effective_rank(3, 25min), 1);
  EXPECT_EQ(policy.effective_rank(3, 30min), 0);
  EXPECT_EQ(policy.effective_rank(3, 24h), 0);
  EXPECT_EQ(policy.effective_rank(0, 24h), 0);
}

TEST(PriorityConfig, ErrorsSayWhere) {
  struct Case {
    const char* text;
    int line, column;
    const char* message;
  };
  const Case cases[] = {
      {"priority:\n  order: []\n", 2, 3, "priority: unknown key 'order' (known: aging, classes)"},
      {"priority:\n  aging: soon\n", 2, 10,
       "priority.aging: 'soon' is not a duration (e.g. 500ms, 10s, 2m, 7d)"},
      {"priority:\n  aging: 0s\n", 2, 10,
       "priority.aging: must be more than 0 (it is what keeps a low class from waiting "
       "forever)"},
      {"priority:\n  classes: {name: x}\n", 2, 12,
       "priority.classes: expected a list of classes, highest first"},
      {"priority:\n  classes:\n    - {name: a, branch: main, weight: 3}\n", 3, 31,
       "priority.classes[0]: unknown key 'weight' (known: branch, event, label, name, "
       "repository)"},
      {"priority:\n  classes:\n    - {branch: main}\n", 3, 7, "priority.classes[0].name: required"},
      {"priority:\n  classes:\n    - {name: 'a b', branch: main}\n", 3, 14,
       "priority.classes[0].name: 'a b' is not a name (letters, digits, '-', '_', '.')"},
      {"priority:\n  classes:\n    - {name: default, branch: main}\n", 3, 14,
       "priority.classes[0].name: 'default' is the class of the jobs no class matches, below "
       "every listed class"},
      {"priority:\n  classes:\n    - {name: a, branch: main}\n    - {name: a, event: push}\n", 4,
       14, "priority.classes[1].name: 'a' is already a class"},
      {"priority:\n  classes:\n    - {name: a, event: pull-request}\n", 3, 24,
       "priority.classes[0].event: unknown event 'pull-request' (known: push, pull_request, "
       "pull_request_target, workflow_dispatch, schedule, image_version)"},
      {"priority:\n  classes:\n    - {name: a, label: []}\n", 3, 24,
       "priority.classes[0].label: empty list (leave the key out: any)"},
      {"priority:\n  classes:\n    - {name: a}\n", 3, 7,
       "priority.classes[0]: a class needs at least one of repository, branch, event, label (one "
       "that matches every job leaves the classes below it empty)"},
      {"priority:\n  classes:\n    - {name: a, branch: {main: 1}}\n", 3, 25,
       "priority.classes[0].branch: expected a single value"},
  };
  for (const auto& c : cases) {
    auto config = parse_host_config(c.text, "kiln.yml");
    ASSERT_FALSE(config) << c.text;
    EXPECT_EQ(config.error().code, ErrorCode::invalid_input) << c.text;
    EXPECT_EQ(config.error().where.to_string(), fmt::format("kiln.yml:{}:{}", c.line, c.column))
        << c.text;
    EXPECT_EQ(config.error().message, c.message) << c.text;
  }
}

}  // namespace
}  // namespace kiln::config
