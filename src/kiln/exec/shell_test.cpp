#include "kiln/exec/shell.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace kiln::exec {
namespace {

const std::string k_path = "/usr/local/bin:/usr/bin:/bin";

std::vector<std::string> args_of(std::string_view shell, std::string_view path = k_path) {
  auto s = resolve_shell(shell, path);
  EXPECT_TRUE(s) << (s ? "" : s.error().to_string());
  return s ? s->argv_for("/tmp/s.x") : std::vector<std::string>{};
}

TEST(Shell, BuiltinTemplatesAsOnGitHubLinux) {
  auto def = args_of("");
  ASSERT_EQ(def.size(), 3u);
  EXPECT_TRUE(def[0].ends_with("/bash"));
  EXPECT_EQ(def[1], "-e");
  EXPECT_EQ(def[2], "/tmp/s.x");

  auto bash = args_of("bash");
  EXPECT_EQ(std::vector<std::string>(bash.begin() + 1, bash.end()),
            (std::vector<std::string>{"--noprofile", "--norc", "-eo", "pipefail", "/tmp/s.x"}));
  auto sh = args_of("sh");
  EXPECT_TRUE(sh[0].ends_with("/sh"));
  EXPECT_EQ(std::vector<std::string>(sh.begin() + 1, sh.end()),
            (std::vector<std::string>{"-e", "/tmp/s.x"}));
  auto py = args_of("python");
  EXPECT_TRUE(py[0].ends_with("/python") || py[0].ends_with("/python3"));
  EXPECT_EQ(py.size(), 2u);

  EXPECT_EQ(resolve_shell("bash", k_path)->extension, ".sh");
  EXPECT_EQ(resolve_shell("sh", k_path)->extension, ".sh");
  EXPECT_EQ(resolve_shell("python", k_path)->extension, ".py");
  EXPECT_EQ(resolve_shell("perl {0}", k_path)->extension, "");
}

TEST(Shell, DefaultFallsBackToShWithoutBash) {
  // A PATH with sh but not bash.
  auto dir =
      std::filesystem::temp_directory_path() / fmt::format("kiln-shell-nobash-{}", ::getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "sh");
  std::filesystem::create_symlink("/bin/sh", dir / "sh");
  auto s = resolve_shell("", dir.string());
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->name, "sh");
  EXPECT_EQ(s->argv_for("/f"), (std::vector<std::string>{(dir / "sh").string(), "-e", "/f"}));
  auto bash = resolve_shell("bash", dir.string());
  ASSERT_FALSE(bash);
  EXPECT_EQ(bash.error().code, ErrorCode::not_found);
  std::filesystem::remove_all(dir);
}

TEST(Shell, CustomTemplates) {
  auto perl = args_of("perl {0}");
  EXPECT_TRUE(perl[0].ends_with("/perl"));
  EXPECT_EQ(perl[1], "/tmp/s.x");
  auto quoted = args_of(R"(bash -c "echo \"hi\"; . '{0}'" x)");
  EXPECT_EQ(std::vector<std::string>(quoted.begin() + 1, quoted.end()),
            (std::vector<std::string>{"-c", "echo \"hi\"; . '/tmp/s.x'", "x"}));
  auto twice = args_of("bash {0} {0}");
  EXPECT_EQ(twice[1], twice[2]);

  auto no_placeholder = resolve_shell("perl -w", k_path);
  ASSERT_FALSE(no_placeholder);
  EXPECT_EQ(no_placeholder.error().code, ErrorCode::invalid_input);
  EXPECT_FALSE(resolve_shell("\"bash {0}", k_path));
  EXPECT_EQ(resolve_shell("no-such-shell-xyz {0}", k_path).error().code, ErrorCode::not_found);
  EXPECT_EQ(resolve_shell("cmd", k_path).error().code, ErrorCode::unsupported);
}

TEST(Shell, PwshTemplateAndScript) {
  // pwsh is rarely installed: check the template through a fake pwsh.
  auto dir = std::filesystem::temp_directory_path() / fmt::format("kiln-shell-pwsh-{}", ::getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "pwsh");
  std::filesystem::create_symlink("/bin/true", dir / "pwsh");
  auto s = resolve_shell("pwsh", dir.string());
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->extension, ".ps1");
  EXPECT_EQ(s->argv_for("/t/a.ps1"),
            (std::vector<std::string>{(dir / "pwsh").string(), "-command", ". '/t/a.ps1'"}));
  auto text = s->script_contents("Write-Host hi\r\n");
  EXPECT_TRUE(text.starts_with("$ErrorActionPreference = 'stop'\n"));
  EXPECT_NE(text.find("Write-Host hi\n"), std::string::npos);
  EXPECT_NE(text.find("exit $LASTEXITCODE"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Shell, SplitWords) {
  EXPECT_EQ(*split_shell_words("  a  b\t\"c d\" e\"f g\"h '{0}' "),
            (std::vector<std::string>{"a", "b", "c d", "ef gh", "'{0}'"}));
  EXPECT_EQ(*split_shell_words("\"\""), (std::vector<std::string>{""}));
}

}  // namespace
}  // namespace kiln::exec
