#include "kiln/exec/kernel_oom.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace kiln::exec {

std::optional<std::string> oom_kill_message(std::string_view record) {
  // PRIORITY,SEQUENCE,TIME,FLAGS[,...];MESSAGE\n then continuation lines " KEY=VALUE".
  auto semicolon = record.find(';');
  if (semicolon == std::string_view::npos) return std::nullopt;
  auto message = record.substr(semicolon + 1);
  if (auto newline = message.find('\n'); newline != std::string_view::npos)
    message = message.substr(0, newline);
  // "Out of memory: Killed process N" (the host ran out), "Memory cgroup out of memory: Killed
  // process N" (a cgroup's limit); older kernels say "Kill process N ... or sacrifice child".
  if (message.find("out of memory: Killed process") == std::string_view::npos &&
      message.find("Out of memory: Killed process") == std::string_view::npos &&
      message.find("Out of memory: Kill process") == std::string_view::npos)
    return std::nullopt;
  return std::string(message);
}

OomWatch::OomWatch(const std::filesystem::path& device) {
  fd_ = ::open(device.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    unreadable_ = fmt::format("cannot read {}: {}", device.string(), std::strerror(errno));
    return;
  }
  if (::lseek(fd_, 0, SEEK_END) < 0) {
    unreadable_ = fmt::format("cannot seek in {}: {}", device.string(), std::strerror(errno));
    ::close(fd_);
    fd_ = -1;
  }
}

OomWatch::~OomWatch() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<std::string> OomWatch::kills() {
  std::vector<std::string> found;
  if (fd_ < 0) return found;
  // Each read() of /dev/kmsg returns one whole record; EAGAIN at the end, EPIPE when records
  // were overwritten before they were read (the read goes on with the next one).
  std::array<char, 8192> buffer{};
  for (;;) {
    ssize_t n = ::read(fd_, buffer.data(), buffer.size());
    if (n < 0 && errno == EPIPE) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (auto message = oom_kill_message({buffer.data(), static_cast<std::size_t>(n)}))
      found.push_back(std::move(*message));
  }
  return found;
}

}  // namespace kiln::exec
