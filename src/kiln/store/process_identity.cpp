#include "kiln/store/process_identity.h"

#include <unistd.h>

#include <array>
#include <optional>
#include <string_view>

#include "kiln/core/proc_stat.h"

namespace kiln::store {

using core::read_proc_stat;

std::string host_name() {
  std::array<char, 256> buffer{};
  if (gethostname(buffer.data(), buffer.size() - 1) != 0) return {};
  return std::string(buffer.data());
}

Result<ProcessIdentity> identify_process(int pid) {
  auto stat = read_proc_stat(pid);
  if (!stat) return fail(ErrorCode::not_found, "no process with pid {}", pid);
  return ProcessIdentity{pid, static_cast<std::int64_t>(stat->start), host_name()};
}

ProcessIdentity current_process() {
  int pid = static_cast<int>(getpid());
  auto self = identify_process(pid);
  if (self) return *self;
  return ProcessIdentity{pid, 0, host_name()};  // no /proc: the pid alone must do
}

bool is_process_alive(const ProcessIdentity& owner) {
  if (owner.pid <= 0) return false;
  auto stat = read_proc_stat(owner.pid);
  if (!stat) return false;
  // A zombie has exited; only its exit status is left for the parent to collect.
  if (stat->state == 'Z' || stat->state == 'X') return false;
  return owner.start_time == 0 || static_cast<std::int64_t>(stat->start) == owner.start_time;
}

}  // namespace kiln::store
