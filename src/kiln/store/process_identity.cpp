#include "kiln/store/process_identity.h"

#include <unistd.h>

#include <array>
#include <charconv>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string_view>

namespace kiln::store {
namespace {

struct ProcStat {
  char state = '?';
  std::int64_t start_time = 0;
};

// /proc/<pid>/stat: "pid (comm) state ppid ...". comm may hold spaces and parentheses, so the
// fields are counted from the last ')'. Field 3 is the state, field 22 the start time.
std::optional<ProcStat> read_proc_stat(int pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  ProcStat stat;
  std::string field;
  for (int number = 3; number <= 22 && fields >> field; ++number) {
    if (number == 3) stat.state = field.empty() ? '?' : field[0];
    if (number == 22) {
      auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), stat.start_time);
      if (ec != std::errc{} || end != field.data() + field.size()) return std::nullopt;
      return stat;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string host_name() {
  std::array<char, 256> buffer{};
  if (gethostname(buffer.data(), buffer.size() - 1) != 0) return {};
  return std::string(buffer.data());
}

Result<ProcessIdentity> identify_process(int pid) {
  auto stat = read_proc_stat(pid);
  if (!stat) return fail(ErrorCode::not_found, "no process with pid {}", pid);
  return ProcessIdentity{pid, stat->start_time, host_name()};
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
  return owner.start_time == 0 || stat->start_time == owner.start_time;
}

}  // namespace kiln::store
