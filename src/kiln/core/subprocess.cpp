#include "kiln/core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

extern char** environ;

namespace kiln::core {
namespace {

constexpr std::string_view k_default_path = "/usr/local/bin:/usr/bin:/bin";

std::string errno_text(int error) { return std::strerror(error); }

std::string signal_name(int signal) {
  switch (signal) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGALRM:
      return "SIGALRM";
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    default:
      return fmt::format("SIG{}", signal);
  }
}

// posix_spawn attributes and file actions, destroyed on every path.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Where to cut a piece of at most `max` bytes off `data` (longer than max) without splitting a
// UTF-8 sequence: before the lead byte of a sequence that `max` would cut through.
std::size_t utf8_cut(std::string_view data, std::size_t max) {
  for (std::size_t cut = max; cut > 0 && cut + 3 >= max; --cut) {
    if ((static_cast<unsigned char>(data[cut]) & 0xC0) != 0x80) return cut;
  }
  return max;
}

}  // namespace

Environment current_environment() {
  Environment env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    auto eq = text.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return env;
}

std::string ExitStatus::to_string() const {
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, signal_name(signal));
  return fmt::format("exit code {}", exit_code);
}

ExitStatus ExitStatus::from_wait_status(int status) {
  if (WIFSIGNALED(status)) return {.exit_code = -1, .signal = WTERMSIG(status)};
  if (WIFEXITED(status)) return {.exit_code = WEXITSTATUS(status), .signal = 0};
  return {};
}

std::optional<std::filesystem::path> find_executable(std::string_view program,
                                                     std::string_view path_list) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string_view::npos) {
    std::string p(program);
    if (::access(p.c_str(), X_OK) == 0) return std::filesystem::path(p);
    return std::nullopt;
  }
  std::size_t start = 0;
  while (start <= path_list.size()) {
    auto end = path_list.find(':', start);
    if (end == std::string_view::npos) end = path_list.size();
    std::string dir(path_list.substr(start, end - start));
    if (dir.empty()) dir = ".";  // an empty PATH entry means the current directory
    std::filesystem::path candidate = std::filesystem::path(dir) / std::string(program);
    std::error_code ec;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate, ec)) {
      return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

Result<Subprocess> Subprocess::spawn(SpawnOptions options) {
  if (options.argv.empty()) return fail(ErrorCode::internal, "spawn: empty argv");
  if (options.max_line_bytes == 0) options.max_line_bytes = 64 * 1024;

  std::string path_list;
  if (options.env) {
    auto it = options.env->find("PATH");
    path_list = it != options.env->end() ? it->second : std::string(k_default_path);
  } else {
    const char* p = std::getenv("PATH");
    path_list = p != nullptr ? p : std::string(k_default_path);
  }
  auto program = find_executable(options.argv[0], path_list);
  if (!program) {
    return fail(ErrorCode::not_found, "cannot run '{}': not found in PATH", options.argv[0]);
  }

  Subprocess child;
  child.max_line_bytes_ = options.max_line_bytes;
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  auto close_pipes = [&] {
    for (int* fd : {&out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1]}) close_fd(*fd);
  };
  if (options.output != OutputMode::discard) {
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
      return fail(ErrorCode::io_error, "pipe: {}", errno_text(errno));
    }
    if (options.output == OutputMode::separate && ::pipe2(err_pipe, O_CLOEXEC) != 0) {
      int error = errno;
      close_pipes();
      return fail(ErrorCode::io_error, "pipe: {}", errno_text(error));
    }
  }

  SpawnSetup setup;
  posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
  switch (options.output) {
    case OutputMode::separate:
      posix_spawn_file_actions_adddup2(&setup.actions, out_pipe[1], 1);
      posix_spawn_file_actions_adddup2(&setup.actions, err_pipe[1], 2);
      break;
    case OutputMode::merged:
      posix_spawn_file_actions_adddup2(&setup.actions, out_pipe[1], 1);
      posix_spawn_file_actions_adddup2(&setup.actions, out_pipe[1], 2);
      break;
    case OutputMode::discard:
      posix_spawn_file_actions_addopen(&setup.actions, 1, "/dev/null", O_WRONLY, 0);
      posix_spawn_file_actions_addopen(&setup.actions, 2, "/dev/null", O_WRONLY, 0);
      break;
  }
  // Whatever another part of Kiln opened without O_CLOEXEC stays out of the child.
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, 3);
  std::string cwd = options.cwd.string();
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&setup.actions, cwd.c_str());

  // A new process group, so that signals reach the whole tree; default signal handling and an
  // empty mask, whatever this process blocks or ignores (SIGPIPE, signals for a signal thread).
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setpgroup(&setup.attr, 0);
  posix_spawnattr_setsigdefault(&setup.attr, &all);
  posix_spawnattr_setsigmask(&setup.attr, &none);
  posix_spawnattr_setflags(&setup.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> argv;
  for (auto& arg : options.argv) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  if (options.env) {
    for (const auto& [key, value] : *options.env) env_strings.push_back(key + "=" + value);
    for (auto& entry : env_strings) envp.push_back(entry.data());
    envp.push_back(nullptr);
  }

  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, program->c_str(), &setup.actions, &setup.attr, argv.data(),
                         options.env ? envp.data() : environ);
  close_fd(out_pipe[1]);
  close_fd(err_pipe[1]);
  if (rc != 0) {
    close_pipes();
    if (!cwd.empty() && rc == ENOENT && !std::filesystem::exists(options.cwd)) {
      return fail(ErrorCode::io_error, "cannot run '{}': working directory '{}' does not exist",
                  options.argv[0], cwd);
    }
    return fail(ErrorCode::io_error, "cannot run '{}': {}", program->string(), errno_text(rc));
  }
  child.pid_ = pid;
  child.out_fd_ = out_pipe[0];
  child.err_fd_ = err_pipe[0];
  for (int fd : {child.out_fd_, child.err_fd_}) {
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  // A pidfd turns "the child exited" into a poll() event; without one we poll every 20 ms.
  child.pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  return child;
}

Subprocess::Subprocess(Subprocess&& other) noexcept { *this = std::move(other); }

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::exchange(other.pidfd_, -1);
    out_fd_ = std::exchange(other.out_fd_, -1);
    err_fd_ = std::exchange(other.err_fd_, -1);
    out_ = std::move(other.out_);
    err_ = std::move(other.err_);
    max_line_bytes_ = other.max_line_bytes_;
    status_ = std::exchange(other.status_, std::nullopt);
    after_read_ = std::move(other.after_read_);
  }
  return *this;
}

Subprocess::~Subprocess() { release(); }

void Subprocess::release() {
  close_fd(out_fd_);
  close_fd(err_fd_);
  if (pid_ > 0) {
    if (!status_) ::kill(-pid_, SIGKILL);
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
  close_fd(pidfd_);
  pid_ = -1;
}

bool Subprocess::poll_exit() {
  if (status_) return true;
  if (pid_ <= 0) return false;
  siginfo_t info{};
  // WNOWAIT: learn the status but leave the zombie, which keeps the pgid from being reused.
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == ECHILD) status_ = ExitStatus{};  // reaped behind our back (SIGCHLD ignored)
    return status_.has_value();
  }
  if (info.si_pid != pid_) return false;
  if (info.si_code == CLD_EXITED) {
    status_ = ExitStatus{.exit_code = info.si_status, .signal = 0};
  } else {
    status_ = ExitStatus{.exit_code = -1, .signal = info.si_status};
  }
  return true;
}

void Subprocess::flush(LineBuffer& buffer, Stream stream, const LineCallback& on_line) {
  auto& data = buffer.data;
  std::size_t start = 0;
  while (true) {
    auto nl = data.find('\n', start);
    if (nl == std::string::npos) break;
    std::size_t end = nl;
    if (end > start && data[end - 1] == '\r') --end;
    if (on_line) on_line(stream, std::string_view(data).substr(start, end - start), false);
    start = nl + 1;
  }
  while (data.size() - start > max_line_bytes_) {
    std::size_t cut = utf8_cut(std::string_view(data).substr(start), max_line_bytes_);
    if (on_line) on_line(stream, std::string_view(data).substr(start, cut), true);
    start += cut;
  }
  data.erase(0, start);
}

void Subprocess::close_pipe(int& fd, LineBuffer& buffer, Stream stream,
                            const LineCallback& on_line) {
  close_fd(fd);
  flush(buffer, stream, on_line);
  if (!buffer.data.empty()) {
    if (on_line) on_line(stream, buffer.data, false);
    buffer.data.clear();
  }
}

void Subprocess::read_ready(int fd, LineBuffer& buffer, Stream stream,
                            const LineCallback& on_line) {
  char chunk[16384];
  // Bounded, so that one chatty stream cannot starve the other or the deadline check.
  for (int round = 0; round < 16; ++round) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n > 0) {
      buffer.data.append(chunk, static_cast<std::size_t>(n));
      flush(buffer, stream, on_line);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // EOF or a read error: this stream is done.
    close_pipe(stream == Stream::out ? out_fd_ : err_fd_, buffer, stream, on_line);
    return;
  }
}

Result<Subprocess::PumpResult> Subprocess::pump(const LineCallback& on_line,
                                                std::optional<Clock::time_point> deadline,
                                                int wake_fd, std::chrono::milliseconds drain_idle) {
  if (pid_ <= 0) return fail(ErrorCode::internal, "pump on a process that was not started");
  while (true) {
    bool exited = poll_exit();
    if (exited && out_fd_ < 0 && err_fd_ < 0) return PumpResult::finished;

    int timeout_ms = -1;
    auto now = Clock::now();
    if (deadline) {
      if (now >= *deadline) return PumpResult::deadline;
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - now).count();
      timeout_ms = static_cast<int>(std::min<long long>(left, 1 << 30));
    }
    auto cap = [&](long long ms) {
      if (timeout_ms < 0 || ms < timeout_ms) timeout_ms = static_cast<int>(ms);
    };
    if (exited) cap(drain_idle.count());
    if (!exited && pidfd_ < 0) cap(20);

    pollfd fds[4];
    int count = 0;
    int out_index = -1, err_index = -1, pid_index = -1, wake_index = -1;
    if (out_fd_ >= 0) fds[out_index = count++] = {out_fd_, POLLIN, 0};
    if (err_fd_ >= 0) fds[err_index = count++] = {err_fd_, POLLIN, 0};
    if (!exited && pidfd_ >= 0) fds[pid_index = count++] = {pidfd_, POLLIN, 0};
    if (wake_fd >= 0) fds[wake_index = count++] = {wake_fd, POLLIN, 0};

    int ready = ::poll(fds, static_cast<nfds_t>(count), timeout_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return fail(ErrorCode::io_error, "poll: {}", errno_text(errno));
    }
    if (ready == 0) {
      if (exited) {
        // Drained as far as we wait: whoever still holds the pipes is a background process.
        if (out_fd_ >= 0) close_pipe(out_fd_, out_, Stream::out, on_line);
        if (err_fd_ >= 0) close_pipe(err_fd_, err_, Stream::err, on_line);
        if (after_read_) after_read_();
        return PumpResult::finished;
      }
      continue;  // the deadline check at the top decides
    }
    if (out_index >= 0 && fds[out_index].revents != 0)
      read_ready(out_fd_, out_, Stream::out, on_line);
    if (err_index >= 0 && fds[err_index].revents != 0)
      read_ready(err_fd_, err_, Stream::err, on_line);
    if (after_read_ && ((out_index >= 0 && fds[out_index].revents != 0) ||
                        (err_index >= 0 && fds[err_index].revents != 0)))
      after_read_();
    if (wake_index >= 0 && fds[wake_index].revents != 0) return PumpResult::woken;
    (void)pid_index;  // its event only ends the poll; poll_exit() reads the status
  }
}

void Subprocess::signal_group(int signal) {
  if (pid_ > 0) ::kill(-pid_, signal);
}

Result<ExitStatus> Subprocess::terminate(std::chrono::milliseconds grace,
                                         const LineCallback& on_line) {
  if (pid_ <= 0) return fail(ErrorCode::internal, "terminate on a process that was not started");
  signal_group(SIGTERM);
  if (!status_) {
    KILN_TRY(auto result, pump(on_line, Clock::now() + grace, -1, std::chrono::milliseconds(50)));
    (void)result;
  }
  // Whatever is left of the group (the leader, children that ignore SIGTERM) dies now.
  signal_group(SIGKILL);
  if (!status_) {
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) != 0 &&
           errno == EINTR) {
    }
    poll_exit();
  }
  KILN_TRY(auto drained, pump(on_line, Clock::now() + std::chrono::seconds(1), -1,
                              std::chrono::milliseconds(50)));
  (void)drained;
  if (!status_) return fail(ErrorCode::io_error, "process {} did not end after SIGKILL", pid_);
  return *status_;
}

Result<CommandOutput> run_command(const std::vector<std::string>& argv,
                                  const std::filesystem::path& cwd,
                                  const std::optional<Environment>& env,
                                  std::chrono::milliseconds timeout) {
  KILN_TRY(auto child, Subprocess::spawn({.argv = argv, .env = env, .cwd = cwd}));
  CommandOutput output;
  auto collect = [&](Stream stream, std::string_view line, bool partial) {
    std::string& text = stream == Stream::out ? output.out : output.err;
    text.append(line);
    if (!partial) text.push_back('\n');
  };
  KILN_TRY(auto result, child.pump(collect, Clock::now() + timeout));
  if (result != Subprocess::PumpResult::finished) {
    (void)child.terminate(std::chrono::milliseconds(500), collect);
    return fail(ErrorCode::timeout, "'{}' did not finish within {} ms", argv.front(),
                timeout.count());
  }
  output.status = *child.status();
  return output;
}

}  // namespace kiln::core
