#include "kiln/workflow/glob.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kiln::workflow {
namespace {

struct Case {
  const char* pattern;
  const char* subject;
  bool expected;
};

// The documented examples of the filter pattern cheat sheet (branches, tags and paths), plus
// the near misses that show what each wildcard must not match.
const Case k_cases[] = {
    // Patterns to match branches and tags.
    {"feature/*", "feature/my-branch", true},
    {"feature/*", "feature/your-branch", true},
    {"feature/*", "feature/beta-a/my-branch", false},
    {"feature/*", "feature/", true},
    {"feature/*", "feature", false},
    {"feature/**", "feature/beta-a/my-branch", true},
    {"feature/**", "feature/your-branch", true},
    {"feature/**", "feature/mona/the/octocat", true},
    {"feature/**", "features/x", false},
    {"main", "main", true},
    {"main", "main2", false},
    {"main", "mai", false},
    {"releases/mona-the-octocat", "releases/mona-the-octocat", true},
    {"*", "main", true},
    {"*", "releases", true},
    {"*", "releases/v1", false},
    {"*", "", true},
    {"**", "all/the/branches", true},
    {"**", "every/tag", true},
    {"*feature", "mona-feature", true},
    {"*feature", "feature", true},
    {"*feature", "ver-10-feature", true},
    {"*feature", "feature-x", false},
    {"*feature", "a/feature", false},
    {"v2*", "v2", true},
    {"v2*", "v2.0", true},
    {"v2*", "v2.9", true},
    {"v2*", "v3.0", false},
    {"v[12].[0-9]+.[0-9]+", "v1.10.1", true},
    {"v[12].[0-9]+.[0-9]+", "v2.0.0", true},
    {"v[12].[0-9]+.[0-9]+", "v3.0.0", false},
    {"v[12].[0-9]+.[0-9]+", "v1..1", false},
    {"v[12].[0-9]+.[0-9]+", "v1.0.0-rc1", false},
    {"v[12].[0-9]+.[0-9]+", "v1x0.0", false},  // '.' is literal, not "any character"
    // Patterns to match file paths.
    {"*", "README.md", true},
    {"*", "server.rb", true},
    {"*", "docs/README.md", false},
    {"*.jsx?", "page.js", true},
    {"*.jsx?", "page.jsx", true},
    {"*.jsx?", "page.jsxx", false},
    {"*.jsx?", "page.ts", false},
    {"**", "all/the/files.md", true},
    {"*.js", "app.js", true},
    {"*.js", "index.js", true},
    {"*.js", "js/index.js", false},
    {"**.js", "index.js", true},
    {"**.js", "js/index.js", true},
    {"**.js", "src/js/app.js", true},
    {"**.js", "src/js/app.jsx", false},
    {"docs/*", "docs/README.md", true},
    {"docs/*", "docs/file.txt", true},
    {"docs/*", "docs/mona/octocat.txt", false},
    {"docs/**", "docs/README.md", true},
    {"docs/**", "docs/mona/octocat.txt", true},
    {"docs/**", "src/docs/a.md", false},
    {"docs/**/*.md", "docs/README.md", true},
    {"docs/**/*.md", "docs/mona/hello-world.md", true},
    {"docs/**/*.md", "docs/a/markdown/file.md", true},
    {"docs/**/*.md", "docs/a/markdown/file.txt", false},
    {"**/docs/**", "docs/hello.md", true},
    {"**/docs/**", "dir/docs/my-file.txt", true},
    {"**/docs/**", "space/docs/plan/space.doc", true},
    {"**/docs/**", "mydocs/a.txt", false},
    {"**/README.md", "README.md", true},
    {"**/README.md", "js/README.md", true},
    {"**/README.md", "js/NOT_README.md", false},
    {"**/*src/**", "a/src/app.js", true},
    {"**/*src/**", "my-src/code/js/app.js", true},
    {"**/*src/**", "source/app.js", false},
    {"**/*-post.md", "my-post.md", true},
    {"**/*-post.md", "path/their-post.md", true},
    {"**/*-post.md", "path/post.md", false},
    {"**/migrate-*.sql", "migrate-10909.sql", true},
    {"**/migrate-*.sql", "db/migrate-v1.0.sql", true},
    {"**/migrate-*.sql", "db/sept/migrate-v1.sql", true},
    {"**/migrate-*.sql", "db/migrate-v1/x.sql", false},
    // `?` and `+` bind to the one character before them; `[]` classes.
    {"Octo*", "Octocat", true},
    {"colou?r", "color", true},
    {"colou?r", "colour", true},
    {"colou?r", "colouur", false},
    {"ab+c", "abbbc", true},
    {"ab+c", "ac", false},
    {"[CB]at", "Cat", true},
    {"[CB]at", "Bat", true},
    {"[CB]at", "Hat", false},
    {"[1-2]00", "100", true},
    {"[1-2]00", "200", true},
    {"[1-2]00", "300", false},
    {"[0-9a-z]", "q", true},
    {"[0-9a-z]", "Q", false},
    {"[a-zA-Z]+", "MixedCase", true},
    {"[a-zA-Z]+", "mixed-case", false},
    // `\` escapes the special characters, so names that contain them can match literally.
    {"release\\+1", "release+1", true},
    {"release\\+1", "releasee1", false},
    {"what\\?", "what?", true},
    {"what\\?", "what", false},
    {"a\\*b", "a*b", true},
    {"a\\*b", "axb", false},
    {"\\[x\\]", "[x]", true},
    {"\\!important", "!important", true},
    // A '!' inside a single pattern is an ordinary character (FilterList strips the prefix).
    {"a!b", "a!b", true},
    // Anchored: the whole subject must match.
    {"src", "src/main.c", false},
    {"main.c", "src/main.c", false},
};

TEST(Glob, DocumentedExamples) {
  int count = 0;
  for (const Case& c : k_cases) {
    auto glob = Glob::compile(c.pattern);
    ASSERT_TRUE(glob) << c.pattern << ": " << glob.error().message;
    EXPECT_EQ(glob->matches(c.subject), c.expected)
        << "pattern '" << c.pattern << "' subject '" << c.subject << "'";
    ++count;
  }
  EXPECT_GE(count, 60);
}

TEST(Glob, KeepsPatternText) {
  auto glob = Glob::compile("docs/**");
  ASSERT_TRUE(glob);
  EXPECT_EQ(glob->pattern(), "docs/**");
}

TEST(Glob, BadPatternsAreErrorsThatSayWhy) {
  struct Bad {
    const char* pattern;
    const char* message_part;
  };
  const Bad bad[] = {
      {"release/[0-9", "never closed"}, {"[", "never closed"},
      {"?abc", "'?' must follow"},      {"+abc", "'+' must follow"},
      {"*?", "'?' must follow"},        {"**+", "'+' must follow"},
      {"a??", "'?' must follow"},       {"trailing\\", "escapes nothing"},
      {"[]", "empty character class"},  {"[z-a]", "invalid range"},
      {"[a-Z]", "invalid range"},       {"[.-9]", "invalid range"},
  };
  for (const Bad& b : bad) {
    auto glob = Glob::compile(b.pattern);
    ASSERT_FALSE(glob) << b.pattern;
    EXPECT_EQ(glob.error().code, ErrorCode::invalid_input);
    EXPECT_NE(glob.error().message.find(b.message_part), std::string::npos)
        << b.pattern << ": " << glob.error().message;
    EXPECT_NE(glob.error().message.find(b.pattern), std::string::npos) << glob.error().message;
  }
}

TEST(Glob, OverlongPatternIsAnError) { EXPECT_FALSE(Glob::compile(std::string(5000, 'a'))); }

TEST(Glob, PathologicalPatternStaysCorrect) {
  // With a backtracking matcher this pattern against a long path that does not match takes
  // exponential time; the NFA answers at once.
  std::string pattern;
  for (int i = 0; i < 30; ++i) pattern += "**/";
  pattern += "a";
  auto glob = Glob::compile(pattern);
  ASSERT_TRUE(glob);
  std::string path;
  for (int i = 0; i < 200; ++i) path += "d/";
  EXPECT_FALSE(glob->matches(path + "b"));
  // Each `**/` may also stand for no directory at all.
  EXPECT_TRUE(glob->matches(path + "a"));
  EXPECT_TRUE(glob->matches("a"));
  // The same with a wildcard at the end, so that the whole path goes through the automaton.
  auto open_end = Glob::compile(pattern + "*");
  ASSERT_TRUE(open_end);
  EXPECT_FALSE(open_end->matches(path + "b"));
  EXPECT_TRUE(open_end->matches(path + "abc"));
  EXPECT_FALSE(open_end->matches(path + "a/c"));

  auto stars = Glob::compile(std::string(200, '*') + "b");
  ASSERT_TRUE(stars);
  EXPECT_FALSE(stars->matches(std::string(3000, 'a')));
  EXPECT_TRUE(stars->matches(std::string(3000, 'a') + "/b"));
}

TEST(Glob, MatchesNonAsciiBytes) {
  auto glob = Glob::compile("docs/*.md");
  ASSERT_TRUE(glob);
  EXPECT_TRUE(glob->matches("docs/\xc3\xa9t\xc3\xa9.md"));
  auto literal = Glob::compile("caf\xc3\xa9");
  ASSERT_TRUE(literal);
  EXPECT_TRUE(literal->matches("caf\xc3\xa9"));
  EXPECT_FALSE(literal->matches("cafe"));
}

TEST(Glob, DefaultConstructedMatchesNothing) {
  Glob none;
  EXPECT_FALSE(none.matches(""));
  EXPECT_FALSE(none.matches("x"));
}

TEST(FilterList, LastMatchingPatternWins) {
  // The documented '*.md', '!README.md' example, then the re-inclusion with 'README*'.
  auto list = FilterList::compile({"*.md", "!README.md"});
  ASSERT_TRUE(list);
  EXPECT_TRUE(list->matches("hello.md"));
  EXPECT_FALSE(list->matches("README.md"));
  EXPECT_FALSE(list->matches("docs/hello.md"));

  auto again = FilterList::compile({"*.md", "!README.md", "README*"});
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->matches("hello.md"));
  EXPECT_TRUE(again->matches("README.md"));
  EXPECT_TRUE(again->matches("README.doc"));
  EXPECT_FALSE(again->matches("docs/hello.md"));
}

TEST(FilterList, SubProjectExample) {
  auto list = FilterList::compile({"sub-project/**", "!sub-project/docs/**"});
  ASSERT_TRUE(list);
  EXPECT_TRUE(list->matches("sub-project/index.js"));
  EXPECT_TRUE(list->matches("sub-project/src/index.js"));
  EXPECT_FALSE(list->matches("sub-project/docs/readme.md"));
  EXPECT_FALSE(list->matches("other/index.js"));
}

TEST(FilterList, BranchesWithNegation) {
  auto list = FilterList::compile({"releases/**", "!releases/**-alpha"});
  ASSERT_TRUE(list);
  EXPECT_TRUE(list->matches("releases/10"));
  EXPECT_TRUE(list->matches("releases/beta/mona"));
  EXPECT_FALSE(list->matches("releases/10-alpha"));
  EXPECT_FALSE(list->matches("releases/beta/3-alpha"));
  EXPECT_FALSE(list->matches("main"));
}

TEST(FilterList, EscapedBangIsPositive) {
  auto list = FilterList::compile({"\\!odd"});
  ASSERT_TRUE(list);
  EXPECT_TRUE(list->matches("!odd"));
}

TEST(FilterList, EmptyListAndErrors) {
  auto empty = FilterList::compile({});
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->matches("anything"));
  auto bad = FilterList::compile({"ok/**", "!bad["});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad["), std::string::npos);
}

}  // namespace
}  // namespace kiln::workflow
