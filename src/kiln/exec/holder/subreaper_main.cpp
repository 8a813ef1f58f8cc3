// kiln-subreaper: the holder of one step's processes (exec/subreaper.h has the design). Static
// and self-contained (libc and libstdc++ only), so that starting it costs about a millisecond
// per step; the kiln binary, with its shared libraries, took 28 ms.
//
//   kiln-subreaper --as UID:GID:GROUPS -- COMMAND...     COMMAND as that user, nothing held
//   kiln-subreaper [--user UID:GID:GROUPS] [--cgroup DIR]... LIFELINE KILN-PID -- COMMAND...
//                                                       the step's leader (what kiln waits for);
//                                                       --user: the command runs as that user
//                                                       (kiln.yml jobs.user), the holder as root;
//                                                       --cgroup: all of them in that cgroup
//                                                       (jobs.limits, core/cgroup.h)
//   kiln-subreaper --hold LIFELINE KILN-PID KILN-START SHELL-PID STATUS-FD   the holder

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kiln/core/proc_stat.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr std::string_view k_job_token_variable = "KILN_JOB_TOKEN";

using kiln::core::read_proc_stat;
using kiln::core::same_process;

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    if (auto stat = read_proc_stat(pid); stat && stat->ppid == parent && stat->state != 'Z')
      found.push_back(pid);
  }
  return found;
}

void reap_zombies() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

void append_line(const fs::path& file, const std::string& line) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string text = line + "\n";
  (void)!::write(fd, text.data(), text.size());
  ::close(fd);
}

fs::path holders_file(const fs::path& lifeline) { return lifeline.string() + ".holders"; }
fs::path killed_file(const fs::path& lifeline) { return lifeline.string() + ".killed"; }

// "pid 1234 (sleep)", for the job's log.
std::string describe(pid_t pid) {
  return "pid " + std::to_string(pid) + " (" + kiln::core::process_name(pid) + ")";
}

// Kills every process reparented to this one until none is left: killing one makes its
// children orphans, which come here too. Their process groups go with them (never ours).
void kill_subtree(const fs::path& lifeline) {
  const pid_t self = ::getpid();
  const pid_t own_group = ::getpgrp();
  std::set<pid_t> reported;
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < give_up) {
    auto children = children_of(self);
    if (children.empty()) {
      reap_zombies();
      if (::waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    for (pid_t child : children) ::kill(child, SIGSTOP);  // none forks while the rest dies
    for (pid_t child : children) {
      const std::string description = describe(child);
      auto stat = read_proc_stat(child);
      if (stat && stat->pgrp > 1 && stat->pgrp != own_group) ::kill(-stat->pgrp, SIGKILL);
      if (::kill(child, SIGKILL) == 0 && reported.insert(child).second)
        append_line(killed_file(lifeline), description);
    }
    reap_zombies();
  }
}

// --user UID:GID:G1,G2 (core::RunAs::to_argument).
struct User {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};
bool parse_number(std::string_view text, unsigned long& out) {
  if (text.empty() || text.size() > 10) return false;
  out = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<unsigned long>(c - '0');
  }
  return out <= 0xFFFFFFFEul;
}
std::optional<User> parse_user(std::string_view text) {
  User user;
  unsigned long value = 0;
  const auto a = text.find(':');
  if (a == std::string_view::npos) return std::nullopt;
  const auto b = text.find(':', a + 1);
  if (b == std::string_view::npos || !parse_number(text.substr(0, a), value) || value == 0)
    return std::nullopt;
  user.uid = static_cast<uid_t>(value);
  if (!parse_number(text.substr(a + 1, b - a - 1), value)) return std::nullopt;
  user.gid = static_cast<gid_t>(value);
  for (std::string_view rest = text.substr(b + 1); !rest.empty();) {
    const auto comma = rest.find(',');
    if (!parse_number(rest.substr(0, comma), value)) return std::nullopt;
    user.groups.push_back(static_cast<gid_t>(value));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return user;
}
// Becomes the user for good (groups, then group, then user), or says why not and exits 126:
// a step must never run as root when jobs.user says otherwise.
void become(const User& user) {
  if (::setgroups(user.groups.size(), user.groups.data()) != 0 || ::setgid(user.gid) != 0 ||
      ::setuid(user.uid) != 0 || ::getuid() != user.uid || ::geteuid() != user.uid ||
      ::setuid(0) == 0) {
    std::fprintf(stderr, "kiln: cannot run the step as user %u (jobs.user): %s\n",
                 static_cast<unsigned>(user.uid), std::strerror(errno));
    ::_exit(126);
  }
}

[[noreturn]] void exit_like(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    ::signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(sig);
    ::_exit(128 + sig);
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 125);
}

// The holder after its re-execution (or in place when that failed).
int hold(const fs::path& lifeline, pid_t kiln, unsigned long long kiln_start, pid_t shell,
         int status_fd) {
  ::signal(SIGPIPE, SIG_IGN);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) ::signal(sig, SIG_IGN);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (auto stat = read_proc_stat(::getpid()))
    append_line(holders_file(lifeline),
                std::to_string(::getpid()) + " " + std::to_string(stat->start));
  // Until the shell ends: its status goes to the step's leader; orphans are reaped meanwhile.
  while (true) {
    int status = 0;
    pid_t done = ::waitpid(-1, &status, 0);
    if (done < 0 && errno == EINTR) continue;
    if (done == shell || done < 0) {
      if (done == shell) (void)!::write(status_fd, &status, sizeof status);
      ::close(status_fd);
      break;
    }
  }
  // Then hold what the step left until the job ends (or kiln is gone).
  while (true) {
    reap_zombies();
    if (::waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD) return 0;
    std::error_code ec;
    if (!fs::exists(lifeline, ec) || !same_process(kiln, kiln_start)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill_subtree(lifeline);
  return 0;
}

// Moves this process into the job's cgroup (its cgroup.procs in DIR), before it forks anything:
// the holder and the step inherit it. A step never runs outside the cgroup its limits are in.
bool join_cgroup(const char* dir) {
  const std::string procs = std::string(dir) + "/cgroup.procs";
  const std::string pid = std::to_string(::getpid());
  int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
  bool joined = fd >= 0 && ::write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size());
  const int error = errno;
  if (fd >= 0) ::close(fd);
  if (!joined)
    std::fprintf(stderr, "kiln: cannot put the step in its cgroup %s (jobs.limits): %s\n", dir,
                 std::strerror(error));
  return joined;
}

int run_leader(int argc, char** argv) {
  std::optional<User> user;
  while (argc > 2 &&
         (std::string_view(argv[1]) == "--user" || std::string_view(argv[1]) == "--cgroup")) {
    if (std::string_view(argv[1]) == "--cgroup") {
      if (!join_cgroup(argv[2])) return 125;
    } else if (user = parse_user(argv[2]); !user) {
      std::fprintf(stderr, "kiln-subreaper: bad --user '%s' (UID:GID:GROUPS)\n", argv[2]);
      return 125;
    }
    argc -= 2;
    argv += 2;
  }
  if (argc < 5 || std::string_view(argv[3]) != "--") {
    std::fprintf(stderr,
                 "kiln-subreaper [--user UID:GID:GROUPS] [--cgroup DIR]... LIFELINE KILN-PID -- "
                 "COMMAND...\n");
    return 125;
  }
  const fs::path lifeline = argv[1];
  const pid_t kiln = static_cast<pid_t>(std::atoi(argv[2]));
  const auto kiln_stat = read_proc_stat(kiln);
  const pid_t group = ::getpgrp();
  int status_pipe[2];
  if (::pipe(status_pipe) != 0) {
    std::perror("kiln-subreaper: pipe");
    return 125;
  }
  ::fcntl(status_pipe[0], F_SETFD, FD_CLOEXEC);
  const pid_t holder = ::fork();
  if (holder < 0) {
    std::perror("kiln-subreaper: fork");
    return 125;
  }
  if (holder == 0) {
    ::setpgid(0, 0);  // a signal to the step's group does not reach the holder
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    const pid_t shell = ::fork();
    if (shell == 0) {
      ::close(status_pipe[1]);
      ::setpgid(0, group);
      if (user) become(*user);
      char** command = argv + 4;
      if (std::strchr(command[0], '/'))
        ::execv(command[0], command);
      else
        ::execvp(command[0], command);
      std::fprintf(stderr, "kiln: cannot run %s: %s\n", command[0], std::strerror(errno));
      ::_exit(127);
    }
    int devnull = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) ::dup2(devnull, fd);
    if (devnull > 2) ::close(devnull);
    if (shell < 0) {
      int status = 127 << 8;
      (void)!::write(status_pipe[1], &status, sizeof status);
      ::_exit(0);
    }
    // Re-executed without the job token, so a dying kiln's watchdog (which kills by token)
    // lets it kill its subtree first.
    std::vector<std::string> env_text;
    for (char** entry = environ; *entry; ++entry)
      if (!std::string_view(*entry).starts_with(k_job_token_variable)) env_text.push_back(*entry);
    std::vector<char*> env;
    for (auto& entry : env_text) env.push_back(entry.data());
    env.push_back(nullptr);
    std::string args[] = {"kiln-subreaper",
                          "--hold",
                          lifeline.string(),
                          std::to_string(kiln),
                          std::to_string(kiln_stat ? kiln_stat->start : 0),
                          std::to_string(shell),
                          std::to_string(status_pipe[1])};
    std::vector<char*> hold_argv;
    for (auto& arg : args) hold_argv.push_back(arg.data());
    hold_argv.push_back(nullptr);
    ::execve("/proc/self/exe", hold_argv.data(), env.data());
    ::_exit(hold(lifeline, kiln, kiln_stat ? kiln_stat->start : 0, shell, status_pipe[1]));
  }
  ::close(status_pipe[1]);
  // The shell decides how a signal to the step ends it; this process only reports that.
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) ::signal(sig, SIG_IGN);
  int status = 0;
  ssize_t got = 0;
  do {
    got = ::read(status_pipe[0], &status, sizeof status);
  } while (got < 0 && errno == EINTR);
  if (got != sizeof status) {
    std::fprintf(stderr, "kiln: the step's holder process went away\n");
    return 125;
  }
  exit_like(status);
}

int run_holder(int argc, char** argv) {
  if (argc != 7) return 125;
  return hold(argv[2], static_cast<pid_t>(std::atoi(argv[3])), std::stoull(argv[4]),
              static_cast<pid_t>(std::atoi(argv[5])), std::atoi(argv[6]));
}

}  // namespace

// --as UID:GID:GROUPS -- COMMAND...: only the switch (for kiln's own git in a job's work tree).
int run_as(int argc, char** argv) {
  auto user = argc > 4 && std::string_view(argv[3]) == "--" ? parse_user(argv[2]) : std::nullopt;
  if (!user) {
    std::fprintf(stderr, "kiln-subreaper --as UID:GID:GROUPS -- COMMAND...\n");
    return 125;
  }
  become(*user);
  ::execvp(argv[4], argv + 4);
  std::fprintf(stderr, "kiln: cannot run %s: %s\n", argv[4], std::strerror(errno));
  return 127;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--hold") return run_holder(argc, argv);
  if (argc > 1 && std::string_view(argv[1]) == "--as") return run_as(argc, argv);
  return run_leader(argc, argv);
}
