#include "kiln/core/git.h"

#include <fmt/core.h>

#include "kiln/core/text.h"

namespace kiln::core {

Environment git_environment() {
  Environment env = current_environment();
  for (const char* name : {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                           "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX",
                           "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES"}) {
    env.erase(name);
  }
  env["GIT_TERMINAL_PROMPT"] = "0";
  env["GIT_PAGER"] = "cat";
  env["LC_ALL"] = "C";
  return env;
}

std::string GitOutput::reason() const {
  std::string_view text = trim(err);
  if (text.empty()) text = trim(out);
  auto newline = text.rfind('\n');
  if (newline != std::string_view::npos) text = trim(text.substr(newline + 1));
  if (text.empty()) return fmt::format("git exited with code {}", exit_code);
  return std::string(text);
}

namespace {
thread_local const GitWrapper* t_wrapper = nullptr;
}  // namespace

GitWrapper::GitWrapper(std::vector<std::string> prefix, std::string home)
    : previous_(t_wrapper), prefix_(std::move(prefix)), home_(std::move(home)) {
  t_wrapper = this;
}

GitWrapper::~GitWrapper() { t_wrapper = previous_; }

Result<GitOutput> run_git(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                          std::chrono::milliseconds timeout) {
  std::vector<std::string> argv;
  Environment env = git_environment();
  if (t_wrapper) {
    argv = t_wrapper->prefix_;
    if (!t_wrapper->home_.empty()) {
      env["HOME"] = t_wrapper->home_;
      env["GIT_CONFIG_GLOBAL"] = t_wrapper->home_ + "/.gitconfig";  // whatever kiln's own says
    }
  }
  argv.push_back("git");
  argv.insert(argv.end(), args.begin(), args.end());
  KILN_TRY(auto output, run_command(argv, cwd, env, timeout));
  GitOutput result;
  result.exit_code = output.status.signal == 0 ? output.status.exit_code : 128;
  result.out = std::move(output.out);
  result.err = std::move(output.err);
  return result;
}

}  // namespace kiln::core
