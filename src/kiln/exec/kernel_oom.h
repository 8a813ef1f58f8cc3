#pragma once
// The kernel's OOM-killer records written while a job runs, read from the kernel log
// (/dev/kmsg): the evidence that a step ended by SIGKILL was killed for memory, by the kernel's
// OOM killer or a cgroup's memory limit (docs/failures.md). Where the log cannot be read (no
// permission, no device), the watch is inert and says so, and no job is called `oom`.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::exec {

// The message of one /dev/kmsg record ("6,5743,83990917452,-;MESSAGE") when it is the
// OOM killer's kill ("Out of memory: Killed process 1653 (python3) ...", "Memory cgroup out of
// memory: Killed process ..."); nullopt for any other record.
std::optional<std::string> oom_kill_message(std::string_view record);

class OomWatch {
 public:
  // Starts at the log's current end: records already there are not this job's.
  explicit OomWatch(const std::filesystem::path& device = "/dev/kmsg");
  ~OomWatch();
  OomWatch(const OomWatch&) = delete;
  OomWatch& operator=(const OomWatch&) = delete;

  bool readable() const { return fd_ >= 0; }
  // Why the log cannot be read ("" when it can).
  const std::string& unreadable_reason() const { return unreadable_; }
  // The OOM kills logged since the start (or since the last call), their messages in order.
  std::vector<std::string> kills();

 private:
  int fd_ = -1;
  std::string unreadable_;
};

}  // namespace kiln::exec
