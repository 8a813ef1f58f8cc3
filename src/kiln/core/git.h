#pragma once
// The one way Kiln runs git (the checkout action, the server's fetches and polls, the engine's
// look at a repository): with an environment fit for scripted use. A hook or a git alias that
// runs kiln exports GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE and the like; inherited, they would
// point every git command of Kiln at the caller's repository instead of the one it names.

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/core/subprocess.h"

namespace kiln::core {

// This process's environment without the variables that redirect git (GIT_DIR & co.), with no
// terminal prompt (GIT_TERMINAL_PROMPT=0), no pager and the C locale (messages to parse).
Environment git_environment();

struct GitOutput {
  int exit_code = -1;  // 128 when git was killed by a signal
  std::string out;
  std::string err;
  bool ok() const { return exit_code == 0; }
  // The last non-empty line of stderr (or stdout): git's reason, for one-line error messages.
  std::string reason() const;
};

// Runs `git ARGS...` in `cwd` with git_environment(). Spawn failures and timeouts are errors;
// a non-zero exit is reported in GitOutput.
Result<GitOutput> run_git(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                          std::chrono::milliseconds timeout = std::chrono::minutes(10));

// While one lives, run_git on this thread runs git through `prefix` (kiln-subreaper --as
// UID:GID:GROUPS --, for a job with kiln.yml jobs.user) with HOME and GIT_CONFIG_GLOBAL in
// `home`: kiln, as root, must not run git in a work tree the job's user controls (its
// .git/config can name commands), so the checkout's git is the user's own.
class GitWrapper {
 public:
  GitWrapper(std::vector<std::string> prefix, std::string home);
  ~GitWrapper();
  GitWrapper(const GitWrapper&) = delete;
  GitWrapper& operator=(const GitWrapper&) = delete;

 private:
  const GitWrapper* previous_;
  std::vector<std::string> prefix_;
  std::string home_;
  friend Result<GitOutput> run_git(const std::vector<std::string>&, const std::filesystem::path&,
                                   std::chrono::milliseconds);
};

}  // namespace kiln::core
