#include "kiln/exec/artifact_glob.h"

#include <gtest/gtest.h>

#include "kiln/exec/actions_test_support.h"

namespace kiln::exec {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_file;

TEST(MatchPathPattern, StarStaysInOneSegment) {
  EXPECT_TRUE(match_path_pattern("a/*.txt", "a/b.txt"));
  EXPECT_TRUE(match_path_pattern("a/*.txt", "a/.hidden.txt"));  // dot files match, like dot:true
  EXPECT_FALSE(match_path_pattern("a/*.txt", "a/b/c.txt"));
  EXPECT_FALSE(match_path_pattern("a/*.txt", "a/b.txt.bak"));
  EXPECT_TRUE(match_path_pattern("*", "name"));
  EXPECT_TRUE(match_path_pattern("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(match_path_pattern("a*b*c", "aXXbYY"));
}

TEST(MatchPathPattern, GlobstarSpansSegments) {
  EXPECT_TRUE(match_path_pattern("a/**/z", "a/z"));
  EXPECT_TRUE(match_path_pattern("a/**/z", "a/b/c/z"));
  EXPECT_FALSE(match_path_pattern("a/**/z", "a/b/c/y"));
  EXPECT_TRUE(match_path_pattern("**", "x/y/z"));
  EXPECT_TRUE(match_path_pattern("**/*.tmp", "deep/er/f.tmp"));
}

TEST(MatchPathPattern, QuestionMarkClassesAndEscapes) {
  EXPECT_TRUE(match_path_pattern("foo?.txt", "foo1.txt"));
  EXPECT_FALSE(match_path_pattern("foo?.txt", "foo.txt"));  // exactly one character
  EXPECT_TRUE(match_path_pattern("[abc]rtifact", "artifact"));
  EXPECT_FALSE(match_path_pattern("[abc]rtifact", "drtifact"));
  EXPECT_TRUE(match_path_pattern("v[0-9]", "v7"));
  EXPECT_TRUE(match_path_pattern("v[!0-9]", "vx"));
  EXPECT_FALSE(match_path_pattern("v[!0-9]", "v3"));
  EXPECT_TRUE(match_path_pattern("a\\*b", "a*b"));
  EXPECT_FALSE(match_path_pattern("a\\*b", "axb"));
  EXPECT_TRUE(match_path_pattern("[x", "[x"));  // an unclosed class is a literal
}

TEST(LeastCommonAncestor, ComparesWholeSegments) {
  EXPECT_EQ(least_common_ancestor({"/w/a/b/c", "/w/a/bc/d"}), fs::path("/w/a"));
  EXPECT_EQ(least_common_ancestor({"/w/a/b"}), fs::path("/w/a/b"));
  EXPECT_EQ(least_common_ancestor({"/x/a", "/y/b"}), fs::path("/"));
}

class SearchFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = temp_.path();
    for (const char* file : {"out/bin/tool", "out/bin/tool.tmp", "out/lib/x.a", "out/lib/sub/y.tmp",
                             "out/.cache/state", "notes.txt", "docs/a/readme.md"}) {
      write_file(base_ / file, file);
    }
  }
  std::vector<std::string> found(const std::vector<std::string>& patterns,
                                 PathSearchOptions options = {}) {
    auto result = search_files(patterns, base_, options);
    EXPECT_TRUE(result.has_value());
    std::vector<std::string> relative;
    if (!result) return relative;
    for (const auto& file : result->files) relative.push_back(file.lexically_relative(base_));
    return relative;
  }
  TempDir temp_;
  fs::path base_;
};

TEST_F(SearchFilesTest, DirectoryTakesEverythingBelowIt) {
  EXPECT_EQ(found({"out/lib"}), (std::vector<std::string>{"out/lib/sub/y.tmp", "out/lib/x.a"}));
  EXPECT_EQ(found({"out/lib/"}), found({"out/lib"}));
}

TEST_F(SearchFilesTest, ExclusionsApplyInOrder) {
  EXPECT_EQ(found({"out", "!**/*.tmp"}),
            (std::vector<std::string>{"out/.cache/state", "out/bin/tool", "out/lib/x.a"}));
  // A later positive pattern takes a file back.
  EXPECT_EQ(found({"out/bin", "!**/*.tmp", "out/bin/*.tmp"}),
            (std::vector<std::string>{"out/bin/tool", "out/bin/tool.tmp"}));
  // Excluding a directory excludes what is below it.
  EXPECT_EQ(found({"out", "!out/lib"}),
            (std::vector<std::string>{"out/.cache/state", "out/bin/tool", "out/bin/tool.tmp"}));
}

TEST_F(SearchFilesTest, WildcardsAndSearchPaths) {
  auto result = search_files({"out/*/x.?", "docs/**/*.md"}, base_);
  ASSERT_TRUE(result.has_value());
  ASSERT_EQ(result->files.size(), 2u);
  EXPECT_EQ(result->files[0], base_ / "docs/a/readme.md");
  EXPECT_EQ(result->files[1], base_ / "out/lib/x.a");
  EXPECT_EQ(result->search_paths, (std::vector<fs::path>{base_ / "docs", base_ / "out"}));
}

TEST_F(SearchFilesTest, SearchPathsBelowAnotherAreDropped) {
  auto result = search_files({"out", "out/bin/tool", "!out/lib"}, base_);
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->search_paths, (std::vector<fs::path>{base_ / "out"}));
}

TEST_F(SearchFilesTest, HiddenFilesCanBeSkipped) {
  EXPECT_EQ(found({"out/**/state"}), (std::vector<std::string>{"out/.cache/state"}));
  EXPECT_TRUE(found({"out/**/state"}, {.include_hidden = false}).empty());
  // Like @actions/glob, only the names from the search path down are looked at: naming a
  // hidden directory skips it, naming a file inside one does not.
  EXPECT_TRUE(found({"out/.cache"}, {.include_hidden = false}).empty());
  EXPECT_EQ(found({"out/.cache/state"}, {.include_hidden = false}),
            (std::vector<std::string>{"out/.cache/state"}));
}

TEST_F(SearchFilesTest, MissingPathsAndCommentsFindNothing) {
  EXPECT_TRUE(found({"no/such/dir", "# out"}).empty());
  EXPECT_TRUE(found({"notes.txt/"}).empty());  // a trailing slash wants a directory
  EXPECT_EQ(found({"./out/../notes.txt"}), (std::vector<std::string>{"notes.txt"}));
}

TEST_F(SearchFilesTest, AbsolutePatternsKeepTheirRoot) {
  EXPECT_EQ(found({(base_ / "docs").string()}), (std::vector<std::string>{"docs/a/readme.md"}));
}

}  // namespace
}  // namespace kiln::exec
