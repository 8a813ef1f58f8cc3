#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "kiln/workflow/loader.h"

namespace kiln::workflow {
namespace {

namespace fs = std::filesystem;

class DiscoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            fmt::format("kiln-discover-{}-{}", ::getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root_);
  }
  void touch(const fs::path& relative, std::string_view text = "on: push\n") {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  std::vector<std::string> names(const std::vector<fs::path>& paths) {
    std::vector<std::string> result;
    for (const fs::path& p : paths) result.push_back(fs::relative(p, root_).string());
    return result;
  }
  fs::path root_;
};

TEST_F(DiscoverTest, RepositoryWorkflowsSortedByName) {
  touch(".github/workflows/zeta.yml");
  touch(".github/workflows/alpha.yaml");
  touch(".github/workflows/notes.txt");
  touch(".github/workflows/nested/inner.yml");
  touch("docker-compose.yml");
  auto found = discover_workflows(root_);
  ASSERT_TRUE(found) << found.error().to_string();
  EXPECT_THAT(names(*found),
              ::testing::ElementsAre(".github/workflows/alpha.yaml", ".github/workflows/zeta.yml"));
}

TEST_F(DiscoverTest, RepositoryWithoutWorkflowsHasNone) {
  fs::create_directories(root_ / ".git");
  touch("docker-compose.yml");
  auto found = discover_workflows(root_);
  ASSERT_TRUE(found);
  EXPECT_TRUE(found->empty());
}

TEST_F(DiscoverTest, PlainDirectoryIsSearchedItself) {
  touch("b.yml");
  touch("a.yml");
  touch("c.json");
  auto found = discover_workflows(root_);
  ASSERT_TRUE(found);
  EXPECT_THAT(names(*found), ::testing::ElementsAre("a.yml", "b.yml"));
}

TEST_F(DiscoverTest, FileIsItself) {
  touch("ci.txt");
  auto found = discover_workflows(root_ / "ci.txt");
  ASSERT_TRUE(found);
  EXPECT_THAT(names(*found), ::testing::ElementsAre("ci.txt"));
}

TEST_F(DiscoverTest, MissingPathIsNotFound) {
  auto found = discover_workflows(root_ / "nope");
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().code, ErrorCode::not_found);
  EXPECT_EQ(found.error().exit_code(), 2);
}

TEST_F(DiscoverTest, LoadFileReportsUnreadableAndUsesDisplayPath) {
  LoadResult missing = load_workflow_file(root_ / "nope.yml", "shown.yml");
  ASSERT_EQ(missing.diagnostics.size(), 1u);
  EXPECT_FALSE(missing.workflow);
  EXPECT_EQ(missing.diagnostics[0].to_string(),
            fmt::format("shown.yml: error: cannot read workflow file '{}'",
                        (root_ / "nope.yml").string()));
  touch("ci.yml", "on: push\njobs:\n  a:\n    runs-on: x\n    steps: []\n");
  LoadResult loaded = load_workflow_file(root_ / "ci.yml", ".github/workflows/ci.yml");
  ASSERT_EQ(loaded.diagnostics.size(), 1u);
  EXPECT_EQ(loaded.diagnostics[0].to_string(),
            ".github/workflows/ci.yml:5:12: error: job 'a' has no steps");
}

}  // namespace
}  // namespace kiln::workflow
