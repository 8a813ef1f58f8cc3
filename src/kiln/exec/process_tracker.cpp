#include "kiln/exec/process_tracker.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "kiln/core/proc_stat.h"

namespace kiln::exec {
namespace {

using core::process_name;

// With read(2), not a stream: a process that exits while its file is read makes read() fail
// with ESRCH, which libstdc++'s filebuf turns into an exception (seen with container processes,
// which come and go while a job ends).
std::string read_proc_file(pid_t pid, const char* name) {
  int fd = ::open(fmt::format("/proc/{}/{}", pid, name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text;
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

// The process group from /proc/PID/stat (field 5, after the parenthesised name).
std::optional<pid_t> process_group(pid_t pid) {
  auto stat = read_proc_file(pid, "stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  char state = 0;
  int ppid = 0, pgrp = 0;
  if (std::sscanf(stat.c_str() + close + 1, " %c %d %d", &state, &ppid, &pgrp) != 3) {
    return std::nullopt;
  }
  return static_cast<pid_t>(pgrp);
}

bool environment_has(std::string_view environ_text, std::string_view entry, TokenMatch match) {
  std::size_t start = 0;
  while (start < environ_text.size()) {
    auto end = environ_text.find('\0', start);
    if (end == std::string_view::npos) end = environ_text.size();
    auto variable = environ_text.substr(start, end - start);
    if (match == TokenMatch::exact ? variable == entry : variable.starts_with(entry)) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

std::string new_job_token() {
  std::random_device random;
  std::uint64_t a = (std::uint64_t{random()} << 32) ^ random();
  std::uint64_t b =
      (std::uint64_t{random()} << 32) ^ random() ^ static_cast<std::uint64_t>(::getpid());
  return fmt::format("kiln-{:016x}{:016x}", a, b);
}

std::string job_token_of(pid_t pid) {
  auto environ_text = read_proc_file(pid, "environ");
  const std::string prefix = fmt::format("{}=", k_job_token_variable);
  std::size_t start = 0;
  while (start < environ_text.size()) {
    auto end = environ_text.find('\0', start);
    if (end == std::string::npos) end = environ_text.size();
    std::string_view variable(environ_text.data() + start, end - start);
    if (variable.starts_with(prefix)) return std::string(variable.substr(prefix.size()));
    start = end + 1;
  }
  return {};
}

std::string describe_process(pid_t pid) {
  return fmt::format("pid {} ({})", pid, process_name(pid));
}

std::vector<pid_t> find_job_processes(std::string_view token, TokenMatch match) {
  std::vector<pid_t> found;
  if (token.empty()) return found;
  const std::string entry = fmt::format("{}={}", k_job_token_variable, token);
  const pid_t self = ::getpid();
  const uid_t uid = ::geteuid();
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == self) continue;
    struct stat info{};
    if (::stat(it->path().c_str(), &info) != 0 || info.st_uid != uid) continue;
    // Unreadable (gone, or not ours) and zombies (empty environ) simply do not match.
    if (environment_has(read_proc_file(pid, "environ"), entry, match)) found.push_back(pid);
  }
  return found;
}

Result<std::vector<std::string>> kill_job_processes(std::string_view token,
                                                    std::chrono::milliseconds patience,
                                                    TokenMatch match) {
  if (token.empty()) return fail(ErrorCode::internal, "kill_job_processes: empty job token");
  if (!std::filesystem::is_directory("/proc/self")) {
    return fail(ErrorCode::unsupported, "kill_job_processes needs /proc");
  }
  const pid_t own_group = ::getpgrp();
  const auto give_up = std::chrono::steady_clock::now() + patience;
  std::map<pid_t, std::string> killed;  // pid -> name, each reported once
  std::vector<std::string> report;
  while (true) {
    auto pids = find_job_processes(token, match);
    if (pids.empty()) break;
    if (std::chrono::steady_clock::now() >= give_up) {
      for (pid_t pid : pids)
        report.push_back(fmt::format("pid {} ({}) did not die", pid, process_name(pid)));
      break;
    }
    // Stop them all first, so that none forks a replacement while the others die.
    for (pid_t pid : pids) ::kill(pid, SIGSTOP);
    for (pid_t pid : pids) {
      auto name = process_name(pid);
      auto group = process_group(pid);
      // The group may hold members that cleared their environment; never our own group.
      if (group && *group > 1 && *group != own_group) ::kill(-*group, SIGKILL);
      if (::kill(pid, SIGKILL) == 0 && !killed.contains(pid)) {
        killed.emplace(pid, name);
        report.push_back(fmt::format("pid {} ({})", pid, name));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return report;
}

Status start_orphan_reaper(const std::filesystem::path& program, const std::string& prefix) {
  if (prefix.empty()) return fail(ErrorCode::internal, "start_orphan_reaper: empty prefix");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return fail(ErrorCode::io_error, "cannot create the watchdog pipe: {}", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID);
  std::string program_text = program.string();
  std::vector<char*> argv = {const_cast<char*>("kiln"), const_cast<char*>("internal-reaper"),
                             const_cast<char*>(prefix.c_str()), nullptr};
  pid_t pid = 0;
  int error =
      ::posix_spawn(&pid, program_text.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(fds[0]);
  if (error != 0) {
    ::close(fds[1]);
    return fail(ErrorCode::io_error, "cannot start the watchdog {}: {}", program_text,
                std::strerror(error));
  }
  // fds[1] stays open until this process ends; its closing wakes the watchdog. The watchdog is
  // not waited for: when this process ends first, init reaps it.
  return {};
}

int run_orphan_reaper(const std::string& prefix) {
  char byte = 0;
  while (true) {
    auto n = ::read(STDIN_FILENO, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
  }
  auto killed = kill_job_processes(prefix, std::chrono::seconds(10), TokenMatch::prefix);
  return killed ? 0 : 1;
}

}  // namespace kiln::exec
