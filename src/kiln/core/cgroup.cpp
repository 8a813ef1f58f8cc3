#include "kiln/core/cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "kiln/core/proc_stat.h"

namespace kiln::core {
namespace fs = std::filesystem;
using Layout = CgroupHost::Layout;

namespace {

constexpr std::string_view k_prefix = "kiln-job-";
constexpr const char* k_v1_controllers[] = {"memory", "pids", "cpu"};
constexpr long long k_cpu_period_us = 100'000;

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Status write_text(const fs::path& file, std::string_view text) {
  std::ofstream out(file);
  if (out) out << text;
  if (out) out.flush();
  if (!out)
    return fail(ErrorCode::io_error, "cannot make the job's cgroup: writing '{}' to {}: {}", text,
                file.string(), std::strerror(errno ? errno : EIO));
  return {};
}

bool writable(const fs::path& file) { return ::access(file.c_str(), W_OK) == 0; }

// The value after `key` in a flat keyed file ("oom_kill 3" of memory.events).
std::uint64_t keyed_value(const fs::path& file, std::string_view key) {
  std::istringstream in(read_text(file));
  std::string name;
  std::uint64_t value = 0;
  while (in >> name >> value)
    if (name == key) return value;
  return 0;
}

// kiln's cgroup in the v2 hierarchy ("0::PATH") or in the v1 one of `controller`.
std::optional<std::string> own_path(std::string_view self_cgroup, std::string_view controller) {
  std::istringstream in{std::string(self_cgroup)};
  for (std::string line; std::getline(in, line);) {
    auto first = line.find(':');
    auto second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (controller.empty()) {
      if (controllers.empty()) return path;
      continue;
    }
    std::istringstream list(controllers);
    for (std::string name; std::getline(list, name, ',');)
      if (name == controller) return path;
  }
  return std::nullopt;
}

fs::path below(const fs::path& mount, const std::string& path) {
  fs::path relative = fs::path(path).relative_path();
  return relative.empty() ? mount.lexically_normal() : (mount / relative).lexically_normal();
}

std::vector<pid_t> procs_of(const fs::path& dir) {
  std::vector<pid_t> pids;
  std::istringstream in(read_text(dir / "cgroup.procs"));
  for (long long pid = 0; in >> pid;) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

// Kills the members of a job cgroup a dead kiln left and removes it.
void remove_stale(const fs::path& parent) {
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.starts_with(k_prefix)) continue;
    long long pid = 0;
    unsigned long long start = 0;
    if (std::sscanf(name.c_str() + k_prefix.size(), "%lld-%llu-", &pid, &start) != 2) continue;
    if (same_process(static_cast<pid_t>(pid), start)) continue;
    for (int round = 0; round < 50 && !procs_of(it->path()).empty(); ++round) {
      for (pid_t member : procs_of(it->path())) ::kill(member, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ::rmdir(it->path().c_str());
  }
}

// v2: kiln's cgroup passes memory, pids and cpu down. The kernel refuses that while the cgroup
// holds processes (unless it is the root), so kiln first moves itself into a leaf of its own.
Status enable_v2_controllers(const fs::path& parent, const fs::path& mount) {
  std::string wanted = "+memory +pids +cpu";
  std::ofstream(parent / "cgroup.subtree_control") << wanted;
  std::string enabled = read_text(parent / "cgroup.subtree_control");
  auto has_all = [&](const std::string& text) {
    std::istringstream in(text);
    std::set<std::string> names;
    for (std::string name; in >> name;) names.insert(name.starts_with('+') ? name.substr(1) : name);
    return names.contains("memory") && names.contains("pids") && names.contains("cpu");
  };
  if (has_all(enabled)) return {};
  if (parent == mount)
    return fail(ErrorCode::io_error,
                "cannot make the job's cgroup: the root cgroup does not pass memory, pids and cpu "
                "down ({})",
                enabled.empty() ? "none" : enabled);
  // kiln's cgroup is delegated to it (a systemd service with Delegate=yes): every process in
  // it (kiln, its watchdog) moves into the leaf, as the kernel's rule asks.
  fs::path leaf = parent / "kiln-server";
  std::error_code ec;
  fs::create_directory(leaf, ec);
  KILN_TRY_VOID(write_text(leaf / "cgroup.procs", std::to_string(::getpid())));
  for (pid_t pid : procs_of(parent)) std::ofstream(leaf / "cgroup.procs") << pid;
  if (auto enabled_now = write_text(parent / "cgroup.subtree_control", wanted); !enabled_now)
    return fail(ErrorCode::io_error,
                "{} (processes that are not kiln's are in {}: run kiln in a cgroup of its own, "
                "such as a systemd service with Delegate=yes)",
                enabled_now.error().message, parent.string());
  return {};
}

}  // namespace

std::string CgroupLimits::describe() const {
  std::vector<std::string> parts;
  if (memory_bytes) {
    if (memory_bytes % (1ull << 30) == 0)
      parts.push_back(fmt::format("memory {} GiB", memory_bytes >> 30));
    else if (memory_bytes % (1ull << 20) == 0)
      parts.push_back(fmt::format("memory {} MiB", memory_bytes >> 20));
    else
      parts.push_back(fmt::format("memory {} bytes", memory_bytes));
  }
  if (pids) parts.push_back(fmt::format("pids {}", pids));
  if (cpus) parts.push_back(fmt::format("cpus {:g}", cpus));
  std::string text;
  for (const auto& part : parts) text += (text.empty() ? "" : ", ") + part;
  return text.empty() ? "no limits" : text;
}

CgroupHost find_cgroup_host(const fs::path& mount) {
  return find_cgroup_host(mount, read_text("/proc/self/cgroup"));
}

CgroupHost find_cgroup_host(const fs::path& mount, std::string_view self_cgroup) {
  CgroupHost host;
  host.mount = mount.lexically_normal();
  std::error_code ec;
  if (fs::exists(mount / "cgroup.controllers", ec)) {  // the unified hierarchy alone: v2
    auto own = own_path(self_cgroup, "");
    if (!own) {
      host.why_not = "kiln's cgroup v2 is not in /proc/self/cgroup";
      return host;
    }
    fs::path parent = below(host.mount, *own);
    std::string available = read_text(parent / "cgroup.controllers");
    for (const char* controller : {"memory", "pids", "cpu"})
      if (available.find(controller) == std::string::npos) {
        host.why_not = fmt::format("cgroup v2: {} has no {} controller ({})", parent.string(),
                                   controller, available.empty() ? "none" : available);
        return host;
      }
    if (!writable(parent / "cgroup.subtree_control")) {
      host.why_not = fmt::format(
          "cgroup v2: {} is not writable by kiln (run it as root, or as a "
          "systemd service with Delegate=yes)",
          parent.string());
      return host;
    }
    host.layout = Layout::v2;
    host.parents = {parent};
    return host;
  }
  for (const char* controller : k_v1_controllers) {  // v1, or hybrid: a hierarchy per controller
    auto own = own_path(self_cgroup, controller);
    fs::path parent = own ? below(mount / controller, *own) : fs::path();
    if (!own || !fs::is_directory(parent, ec)) {
      host.why_not = fmt::format("no cgroup {} hierarchy under {}", controller, mount.string());
      host.parents.clear();
      return host;
    }
    if (!writable(parent)) {
      host.why_not = fmt::format("{} is not writable by kiln (run it as root)", parent.string());
      host.parents.clear();
      return host;
    }
    host.parents.push_back(parent);
  }
  host.layout = Layout::v1;
  return host;
}

Result<JobCgroup> JobCgroup::create(const CgroupHost& host, const CgroupLimits& limits) {
  if (host.layout == Layout::none)
    return fail(ErrorCode::unsupported, "this host cannot give jobs cgroups: {}", host.why_not);
  static std::atomic<unsigned> counter{0};
  auto self = read_proc_stat(::getpid());
  const std::string name =
      fmt::format("{}{}-{}-{}", k_prefix, ::getpid(), self ? self->start : 0, counter++);
  JobCgroup group;
  group.layout_ = host.layout;
  group.removed_ = false;
  for (const auto& parent : host.parents) {
    remove_stale(parent);
    if (host.layout == Layout::v2) KILN_TRY_VOID(enable_v2_controllers(parent, host.mount));
    fs::path dir = parent / name;
    if (::mkdir(dir.c_str(), 0755) != 0)
      return fail(ErrorCode::io_error, "cannot make the job's cgroup {}: {}", dir.string(),
                  std::strerror(errno));
    group.directories_.push_back(dir);
  }
  const long long quota = limits.cpus > 0 ? std::llround(limits.cpus * k_cpu_period_us) : 0;
  // v1: the directories are in k_v1_controllers' order (find_cgroup_host's parents).
  auto dir_of = [&](std::size_t v1_index) {
    return group.directories_.size() > v1_index ? group.directories_[v1_index]
                                                : group.directories_.front();
  };
  if (group.layout_ == Layout::v2) {
    const fs::path& dir = group.directories_.front();
    if (limits.memory_bytes) {
      KILN_TRY_VOID(write_text(dir / "memory.max", std::to_string(limits.memory_bytes)));
      if (fs::exists(dir / "memory.swap.max"))
        KILN_TRY_VOID(write_text(dir / "memory.swap.max", "0"));
    }
    if (limits.pids) KILN_TRY_VOID(write_text(dir / "pids.max", std::to_string(limits.pids)));
    if (quota)
      KILN_TRY_VOID(write_text(dir / "cpu.max", fmt::format("{} {}", quota, k_cpu_period_us)));
  } else {
    if (limits.memory_bytes) {
      fs::path dir = dir_of(0);
      KILN_TRY_VOID(write_text(dir / "memory.limit_in_bytes", std::to_string(limits.memory_bytes)));
      // Memory and swap together, so that swap does not stretch the limit.
      if (fs::exists(dir / "memory.memsw.limit_in_bytes"))
        KILN_TRY_VOID(
            write_text(dir / "memory.memsw.limit_in_bytes", std::to_string(limits.memory_bytes)));
    }
    if (limits.pids) KILN_TRY_VOID(write_text(dir_of(1) / "pids.max", std::to_string(limits.pids)));
    if (quota) {
      fs::path dir = dir_of(2);
      KILN_TRY_VOID(write_text(dir / "cpu.cfs_period_us", std::to_string(k_cpu_period_us)));
      KILN_TRY_VOID(write_text(dir / "cpu.cfs_quota_us", std::to_string(quota)));
    }
  }
  return group;
}

JobCgroup::JobCgroup(JobCgroup&& other) noexcept
    : layout_(other.layout_),
      directories_(std::move(other.directories_)),
      removed_(std::exchange(other.removed_, true)) {}

JobCgroup& JobCgroup::operator=(JobCgroup&& other) noexcept {
  if (this != &other) {
    if (!removed_) {
      kill_all();
      remove();
    }
    layout_ = other.layout_;
    directories_ = std::move(other.directories_);
    removed_ = std::exchange(other.removed_, true);
  }
  return *this;
}

JobCgroup::~JobCgroup() {
  if (removed_) return;
  kill_all();
  remove();
}

std::vector<pid_t> JobCgroup::members() const {
  std::set<pid_t> all;
  for (const auto& dir : directories_)
    for (pid_t pid : procs_of(dir)) all.insert(pid);
  return {all.begin(), all.end()};
}

std::uint64_t JobCgroup::oom_kills() const {
  for (const auto& dir : directories_) {
    if (fs::exists(dir / "memory.events")) return keyed_value(dir / "memory.events", "oom_kill");
    if (fs::exists(dir / "memory.oom_control"))
      return keyed_value(dir / "memory.oom_control", "oom_kill");
  }
  return 0;
}

std::vector<std::string> JobCgroup::kill_all(std::chrono::milliseconds patience) {
  std::vector<std::string> killed;
  std::set<pid_t> reported;
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < give_up) {
    auto pids = members();
    if (pids.empty()) break;
    for (pid_t pid : pids) ::kill(pid, SIGSTOP);  // none forks while the rest dies
    for (pid_t pid : pids) {
      std::string description = fmt::format("pid {} ({})", pid, process_name(pid));
      if (::kill(pid, SIGKILL) == 0 && reported.insert(pid).second)
        killed.push_back(std::move(description));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return killed;
}

void JobCgroup::remove() {
  if (removed_) return;
  removed_ = true;
  for (const auto& dir : directories_)
    for (int attempt = 0; attempt < 100 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++attempt)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

}  // namespace kiln::core
