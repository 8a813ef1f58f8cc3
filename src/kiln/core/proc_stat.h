#pragma once
// One process's /proc/PID/stat, the fields Kiln reads: its state, parent, process group and
// start time; and its name (/proc/PID/comm). Header-only and libc-only, so that the static step
// holder (exec/holder) can use it as well as the store (process identity) and the step subreaper.

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

namespace kiln::core {

struct ProcStat {
  char state = '?';
  pid_t ppid = 0;
  pid_t pgrp = 0;
  unsigned long long start = 0;  // field 22, in clock ticks since boot
};

inline std::optional<ProcStat> read_proc_stat(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buffer[1024];
  ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  buffer[n] = '\0';
  // The name (field 2) may hold spaces and ')': the fields after it start after the last ')'.
  const char* close = std::strrchr(buffer, ')');
  if (!close) return std::nullopt;
  ProcStat stat;
  // state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime
  // cstime priority nice threads itrealvalue starttime
  if (std::sscanf(close + 1,
                  " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                  &stat.state, &stat.ppid, &stat.pgrp, &stat.start) != 4)
    return std::nullopt;
  return stat;
}

// The process `pid` is the one that started at `start` and is not a zombie.
inline bool same_process(pid_t pid, unsigned long long start) {
  auto stat = read_proc_stat(pid);
  return stat && stat->start == start && stat->state != 'Z';
}

// The process's name (/proc/PID/comm, as `ps` shows it), "?" when it cannot be read.
inline std::string process_name(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/comm", static_cast<int>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "?";
  char buffer[64];
  ssize_t n = ::read(fd, buffer, sizeof buffer);
  ::close(fd);
  std::string name = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  return name.empty() ? "?" : name;
}

}  // namespace kiln::core
