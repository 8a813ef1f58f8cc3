#include "kiln/exec/subreaper.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

#include "kiln/core/proc_stat.h"

namespace kiln::exec {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using core::same_process;

fs::path holders_file(const fs::path& lifeline) { return lifeline.string() + ".holders"; }
fs::path killed_file(const fs::path& lifeline) { return lifeline.string() + ".killed"; }

fs::path& program_slot() {
  static fs::path program;
  return program;
}

}  // namespace

void set_subreaper_program(fs::path program) { program_slot() = std::move(program); }
const fs::path& subreaper_program() { return program_slot(); }

Result<JobSubreaper> JobSubreaper::start(const fs::path& program, const fs::path& dir) {
  JobSubreaper subreaper;
  subreaper.program_ = program;
  subreaper.lifeline_ = dir / "subreaper.lifeline";
  std::error_code ec;
  fs::remove(holders_file(subreaper.lifeline_), ec);
  fs::remove(killed_file(subreaper.lifeline_), ec);
  int fd = ::open(subreaper.lifeline_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return fail(ErrorCode::io_error, "cannot create {}: {}", subreaper.lifeline_.string(),
                std::strerror(errno));
  ::close(fd);
  return subreaper;
}

std::vector<std::string> JobSubreaper::wrap(std::vector<std::string> argv,
                                            const core::RunAs* user) const {
  std::vector<std::string> wrapped = {program_.string()};
  if (user) wrapped.insert(wrapped.end(), {"--user", user->to_argument()});
  for (const auto& dir : cgroup_) wrapped.insert(wrapped.end(), {"--cgroup", dir.string()});
  wrapped.insert(wrapped.end(), {lifeline_.string(), std::to_string(::getpid()), "--"});
  wrapped.insert(wrapped.end(), std::make_move_iterator(argv.begin()),
                 std::make_move_iterator(argv.end()));
  return wrapped;
}

std::vector<std::string> JobSubreaper::end(std::chrono::milliseconds patience) {
  std::error_code ec;
  fs::remove(lifeline_, ec);
  std::vector<std::pair<pid_t, unsigned long long>> holders;
  {
    std::ifstream in(holders_file(lifeline_));
    long long pid = 0;
    unsigned long long start = 0;
    while (in >> pid >> start) holders.emplace_back(static_cast<pid_t>(pid), start);
  }
  const auto give_up = Clock::now() + patience;
  for (const auto& [pid, start] : holders)
    while (same_process(pid, start) && Clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::vector<std::string> killed;
  {
    std::ifstream in(killed_file(lifeline_));
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) killed.push_back(line);
  }
  fs::remove(holders_file(lifeline_), ec);
  fs::remove(killed_file(lifeline_), ec);
  return killed;
}

}  // namespace kiln::exec
