#include "kiln/exec/file_commands.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

namespace kiln::exec {
namespace {

TEST(FileCommands, SimpleAndHeredocValues) {
  auto r = parse_key_value_file(
      "A=1\n"
      "\n"
      "B=x=y\n"
      "EMPTY=\n"
      "ML<<EOF\n"
      "line 1\n"
      "\n"
      "line 3\n"
      "EOF\n"
      "CRLF<<END\r\n"
      "a\r\n"
      "b\r\n"
      "END\r\n"
      "NONE<<X\n"
      "X\n"
      "ARROW=a<<b\n"
      "HD<<=\n"
      "v\n"
      "=\n"
      "LAST=no newline",
      "GITHUB_ENV");
  ASSERT_TRUE(r) << r.error().to_string();
  KeyValues expected{{"A", "1"},
                     {"B", "x=y"},
                     {"EMPTY", ""},
                     {"ML", "line 1\n\nline 3"},
                     {"CRLF", "a\r\nb"},
                     {"NONE", ""},
                     {"ARROW", "a<<b"},
                     {"HD", "v"},
                     {"LAST", "no newline"}};
  EXPECT_EQ(*r, expected);
}

TEST(FileCommands, Errors) {
  auto missing = parse_key_value_file("A=1\nML<<EOF\nvalue\nEOFX\n", "GITHUB_OUTPUT");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().where.line, 2);
  EXPECT_NE(missing.error().to_string().find("GITHUB_OUTPUT:2"), std::string::npos);
  EXPECT_NE(missing.error().message.find("delimiter 'EOF' not found"), std::string::npos);

  EXPECT_FALSE(parse_key_value_file("=value\n", "f"));
  EXPECT_FALSE(parse_key_value_file("<<EOF\nx\nEOF\n", "f"));
  EXPECT_FALSE(parse_key_value_file("NAME<<\nx\n\n", "f"));
  auto neither = parse_key_value_file("A=1\njust text\n", "f");
  ASSERT_FALSE(neither);
  EXPECT_EQ(neither.error().where.line, 2);
}

TEST(FileCommands, PathFile) {
  EXPECT_EQ(parse_path_file("/a\n\n/b c\r\n/d"), (std::vector<std::string>{"/a", "/b c", "/d"}));
}

TEST(FileCommands, PathAdditionsAcrossSteps) {
  std::vector<std::string> prepended;
  add_path_entries(prepended, {"/one", "/two"});  // step 1
  add_path_entries(prepended, {"/three"});        // step 2
  EXPECT_EQ(compose_path(prepended, "/usr/bin:/bin"), "/three:/two:/one:/usr/bin:/bin");
  add_path_entries(prepended, {"/one"});  // added again: moves to the front
  EXPECT_EQ(compose_path(prepended, "/usr/bin"), "/one:/three:/two:/usr/bin");
  EXPECT_EQ(compose_path({}, "/usr/bin"), "/usr/bin");
  EXPECT_EQ(compose_path({"/x"}, ""), "/x");
}

TEST(FileCommands, CreateExportRemove) {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("kiln-fc-{}", ::getpid());
  auto files = create_file_command_files(dir, "s1");
  ASSERT_TRUE(files) << files.error().to_string();
  for (const auto* f :
       {&files->env, &files->output, &files->path, &files->summary, &files->state}) {
    EXPECT_TRUE(std::filesystem::exists(*f));
    EXPECT_EQ(std::filesystem::file_size(*f), 0u);
  }
  auto other = create_file_command_files(dir, "s2");
  ASSERT_TRUE(other);
  EXPECT_NE(files->env, other->env);
  core::Environment env;
  export_file_command_paths(*files, env);
  EXPECT_EQ(env.at("GITHUB_ENV"), files->env.string());
  EXPECT_EQ(env.at("GITHUB_OUTPUT"), files->output.string());
  EXPECT_EQ(env.at("GITHUB_PATH"), files->path.string());
  EXPECT_EQ(env.at("GITHUB_STEP_SUMMARY"), files->summary.string());
  EXPECT_EQ(env.at("GITHUB_STATE"), files->state.string());
  // Creating the same set again truncates what a step wrote.
  std::ofstream(files->env) << "A=1\n";
  ASSERT_TRUE(create_file_command_files(dir, "s1"));
  auto text = read_file_command(files->env);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln::exec
