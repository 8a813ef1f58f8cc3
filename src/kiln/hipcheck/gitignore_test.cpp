#include "kiln/hipcheck/gitignore.h"

#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "kiln/hipcheck/walk.h"

namespace kiln::hipcheck {
namespace {

namespace fs = std::filesystem;

TEST(Glob, StarsQuestionMarksAndClasses) {
  EXPECT_TRUE(glob_match("*.cu", "a.cu"));
  EXPECT_FALSE(glob_match("*.cu", "a.cuh"));
  EXPECT_FALSE(glob_match("*.cu", "d/a.cu"));  // '*' stops at '/'
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "a/c"));
  EXPECT_TRUE(glob_match("[a-c]x", "bx"));
  EXPECT_FALSE(glob_match("[!a-c]x", "bx"));
  EXPECT_TRUE(glob_match("[!a-c]x", "dx"));
  EXPECT_TRUE(glob_match("\\*x", "*x"));
  EXPECT_FALSE(glob_match("\\*x", "ax"));
}

TEST(Glob, DoubleStars) {
  EXPECT_TRUE(glob_match("**/gen", "gen"));
  EXPECT_TRUE(glob_match("**/gen", "a/b/gen"));
  EXPECT_TRUE(glob_match("a/**/b", "a/b"));
  EXPECT_TRUE(glob_match("a/**/b", "a/x/y/b"));
  EXPECT_FALSE(glob_match("a/**/b", "ab"));
  EXPECT_TRUE(glob_match("a/**", "a/x/y"));
  EXPECT_FALSE(glob_match("a/**", "b/x"));
}

TEST(IgnoreRules, GitignoreSemantics) {
  IgnoreRules rules;
  rules.add("", "# comment\n*.gen.cu\nbuild/\n/top.cu\n!keep.gen.cu\ndocs/*.h\n\\#hash.cu\n");
  rules.add("sub", "local.cu\n/anchored.cu\n");
  EXPECT_TRUE(rules.ignored("x.gen.cu", false));
  EXPECT_TRUE(rules.ignored("deep/x.gen.cu", false));
  EXPECT_FALSE(rules.ignored("keep.gen.cu", false));
  EXPECT_TRUE(rules.ignored("build", true));
  EXPECT_TRUE(rules.ignored("a/build", true));
  EXPECT_FALSE(rules.ignored("build", false));  // "build/" only matches directories
  EXPECT_TRUE(rules.ignored("top.cu", false));
  EXPECT_FALSE(rules.ignored("a/top.cu", false));
  EXPECT_TRUE(rules.ignored("docs/x.h", false));
  EXPECT_FALSE(rules.ignored("docs/a/x.h", false));
  EXPECT_TRUE(rules.ignored("#hash.cu", false));
  EXPECT_TRUE(rules.ignored("sub/local.cu", false));
  EXPECT_TRUE(rules.ignored("sub/x/local.cu", false));
  EXPECT_FALSE(rules.ignored("local.cu", false));
  EXPECT_TRUE(rules.ignored("sub/anchored.cu", false));
  EXPECT_FALSE(rules.ignored("sub/x/anchored.cu", false));
}

class TempTree : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    root_ = fs::temp_directory_path() / ("kiln_hipcheck_walk_" + std::to_string(rd()));
    fs::create_directories(root_);
  }
  void TearDown() override {
    if (!HasFailure())
      fs::remove_all(root_);
    else
      std::fprintf(stderr, "left %s for inspection\n", root_.c_str());
  }
  void write(const std::string& rel, const std::string& text = "") {
    fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::vector<std::string> found(const std::vector<std::string>& ext = default_extensions()) {
    auto files = find_sources({root_.string()}, ext);
    EXPECT_TRUE(files) << files.error().to_string();
    std::vector<std::string> rel;
    for (const std::string& f : *files)
      rel.push_back(fs::path(f).lexically_relative(root_).generic_string());
    return rel;
  }
  fs::path root_;
};

using Strings = std::vector<std::string>;

TEST_F(TempTree, WalksRecursivelyBySortedPathAndExtension) {
  write("b.cu");
  write("a/z.hip");
  write("a/y.txt");
  write("a/x.cpp");
  write("c/README.md");
  write(".git/objects/x.cu");
  EXPECT_EQ(found(), (Strings{"a/x.cpp", "a/z.hip", "b.cu"}));
  EXPECT_EQ(found({".hip", ".txt"}), (Strings{"a/y.txt", "a/z.hip"}));
}

TEST_F(TempTree, HonoursGitignoreFilesAtEveryLevel) {
  write(".git/HEAD");
  write(".gitignore", "build/\n*.gen.cu\n");
  write("build/out.cu");
  write("src/k.gen.cu");
  write("src/k.cu");
  write("src/.gitignore", "vendor/\n!k.gen.cu\n");
  write("src/vendor/v.cu");
  write("third/t.cu");
  write(".git/info/exclude", "third/\n");
  EXPECT_EQ(found(), (Strings{"src/k.cu", "src/k.gen.cu"}));
  // Scanning a subdirectory still applies the .gitignore files above it.
  write("src/deep/x.gen.cu");
  auto files = find_sources({(root_ / "src" / "deep").string()}, default_extensions());
  ASSERT_TRUE(files);
  EXPECT_TRUE(files->empty());
}

TEST_F(TempTree, NamedFilesAreTakenAsTheyAreAndMissingOnesAreErrors) {
  write("notes.txt");
  write(".gitignore", "*.txt\n");
  std::string file = (root_ / "notes.txt").string();
  auto files = find_sources({file, file}, default_extensions());
  ASSERT_TRUE(files);
  EXPECT_EQ(*files, (Strings{file}));
  auto missing = find_sources({(root_ / "nope").string()}, default_extensions());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().exit_code(), 2);
  EXPECT_EQ(missing.error().to_string(),
            (root_ / "nope").string() + ": error: no such file or directory");
}

}  // namespace
}  // namespace kiln::hipcheck
