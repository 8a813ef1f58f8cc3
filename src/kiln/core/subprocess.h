#pragma once
// Child processes: spawn with an explicit argv, environment and working directory, read their
// output line by line as it is produced, wait with a deadline, and stop a whole process tree.
//
// Every child is started in a new process group (its pgid is its pid), so that a signal sent to
// the group reaches the shell and everything it started in the foreground. Processes that leave
// the group (setsid, double fork) are out of reach here: exec/process_tracker.h finds those.
//
// All descriptors this file creates are close-on-exec, and children get every descriptor
// above 2 closed, so no child inherits a pipe or file of Kiln or of another child.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::core {

using Clock = std::chrono::steady_clock;
using Environment = std::map<std::string, std::string>;

// The environment of this process, as a map.
Environment current_environment();

// How a process ended: an exit code, or the signal that killed it.
struct ExitStatus {
  int exit_code = -1;  // valid when signal == 0
  int signal = 0;      // the terminating signal, 0 when the process exited

  bool success() const { return signal == 0 && exit_code == 0; }
  // "exit code 3" or "killed by signal 9 (SIGKILL)".
  std::string to_string() const;
  // Decodes a waitpid()/waitid() status word.
  static ExitStatus from_wait_status(int status);
};

enum class OutputMode {
  separate,  // stdout and stderr through two pipes, reported as two streams
  merged,    // stderr joins the stdout pipe: one stream, ordered as written
  discard,   // both go to /dev/null
};

enum class Stream { out, err };

// Called once per line, without its "\n" (and without a "\r" before it). A line longer than
// max_line_bytes arrives in pieces of at most that size, each but the last with partial=true;
// pieces are cut at a UTF-8 character boundary. An unterminated last line is delivered at EOF.
using LineCallback = std::function<void(Stream stream, std::string_view line, bool partial)>;

struct SpawnOptions {
  std::vector<std::string> argv{};   // argv[0] without '/' is looked up in the child's PATH
  std::optional<Environment> env{};  // the complete environment; nullopt inherits this process's
  std::filesystem::path cwd{};       // empty: this process's working directory
  OutputMode output = OutputMode::separate;
  std::size_t max_line_bytes = 64 * 1024;
};

// Finds `program` in the ':'-separated `path_list` (as execvp would). A name containing '/'
// is returned as is when it is executable.
std::optional<std::filesystem::path> find_executable(std::string_view program,
                                                     std::string_view path_list);

// A running (or finished, not yet forgotten) child process. Move-only. The destructor of a
// Subprocess whose process still runs kills its process group and reaps it, so no child
// outlives the object by accident and no zombie is left behind. Used by one thread at a time;
// another thread stops a pump() through its wake_fd.
class Subprocess {
 public:
  static Result<Subprocess> spawn(SpawnOptions options);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }  // also the process group id

  enum class PumpResult {
    finished,  // the process exited and its output is drained: status() is set
    deadline,  // the deadline passed first; the process may still run
    woken,     // wake_fd became readable first (cancellation); the process may still run
  };

  // Reads output and calls on_line until the process has exited and its pipes are drained, the
  // deadline passes, or `wake_fd` (if >= 0) becomes readable. After the process exits, output
  // is read until EOF or until nothing came for `drain_idle`: a background child that inherited
  // the pipes does not keep the caller waiting (its later output is lost).
  Result<PumpResult> pump(const LineCallback& on_line,
                          std::optional<Clock::time_point> deadline = std::nullopt,
                          int wake_fd = -1,
                          std::chrono::milliseconds drain_idle = std::chrono::milliseconds(200));

  // Called by pump() after the lines of each read of the pipes went to on_line: whoever takes
  // the lines can store and show them a block at a time (a pipe read is up to 256 KiB).
  void set_after_read(std::function<void()> callback) { after_read_ = std::move(callback); }

  // Sends `signal` to the whole process group (no-op once the process is reaped).
  void signal_group(int signal);

  // SIGTERM to the group; keeps reading output for up to `grace` or until the leader exits;
  // then SIGKILL to the group (whatever ignored SIGTERM) and waits for the leader. Returns how
  // the leader ended. When the leader had already exited, what is left of its group gets SIGTERM
  // and SIGKILL at once.
  Result<ExitStatus> terminate(std::chrono::milliseconds grace, const LineCallback& on_line = {});

  // Set once the process has exited (after pump() returned finished, or terminate()).
  const std::optional<ExitStatus>& status() const { return status_; }

  // The leader stays a zombie until the Subprocess is destroyed: while it exists its pid, and so
  // the process group id, cannot be reused, and signal_group() cannot hit a stranger.

 private:
  Subprocess() = default;
  struct LineBuffer {
    std::string data;
  };
  void release();
  bool poll_exit();  // true when the leader has exited (status_ set; not reaped yet)
  void close_pipe(int& fd, LineBuffer& buffer, Stream stream, const LineCallback& on_line);
  void read_ready(int fd, LineBuffer& buffer, Stream stream, const LineCallback& on_line);
  void flush(LineBuffer& buffer, Stream stream, const LineCallback& on_line);

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  LineBuffer out_, err_;
  std::size_t max_line_bytes_ = 64 * 1024;
  std::optional<ExitStatus> status_;
  std::function<void()> after_read_;
};

// The output of a short helper command.
struct CommandOutput {
  ExitStatus status;
  std::string out;  // all of stdout
  std::string err;  // all of stderr
  bool ok() const { return status.success(); }
};

// Runs a short command (git, tar...) to completion and collects its output. Spawn failures are
// io_error; passing `timeout` kills the command's group and returns a timeout error. A non-zero
// exit is not an error here: look at status.
Result<CommandOutput> run_command(const std::vector<std::string>& argv,
                                  const std::filesystem::path& cwd = {},
                                  const std::optional<Environment>& env = std::nullopt,
                                  std::chrono::milliseconds timeout = std::chrono::minutes(10));

}  // namespace kiln::core
