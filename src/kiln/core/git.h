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

}  // namespace kiln::core
