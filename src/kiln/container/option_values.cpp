#include "kiln/container/option_values.h"

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <utility>

#include <fmt/format.h>

#include "kiln/core/time.h"

namespace kiln::container {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_integer(std::string_view text) {
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

// docker's sizes (go-units RAMInBytes): 512, 8g, 16G, 2gb, 1.5GiB.
bool is_size(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0 || text.front() == '.' || text.substr(0, i).ends_with('.')) return false;
  std::string unit = lower(text.substr(i));
  static constexpr std::array k_units = {"",   "b",   "k", "kb", "kib", "m", "mb", "mib", "g",
                                         "gb", "gib", "t", "tb", "tib", "p", "pb", "pib"};
  return std::ranges::find(k_units, unit) != k_units.end();
}

constexpr std::array<std::pair<std::string_view, int>, 16> k_ulimits = {{
    {"as", RLIMIT_AS},
    {"core", RLIMIT_CORE},
    {"cpu", RLIMIT_CPU},
    {"data", RLIMIT_DATA},
    {"fsize", RLIMIT_FSIZE},
    {"locks", RLIMIT_LOCKS},
    {"memlock", RLIMIT_MEMLOCK},
    {"msgqueue", RLIMIT_MSGQUEUE},
    {"nice", RLIMIT_NICE},
    {"nofile", RLIMIT_NOFILE},
    {"nproc", RLIMIT_NPROC},
    {"rss", RLIMIT_RSS},
    {"rtprio", RLIMIT_RTPRIO},
    {"rttime", RLIMIT_RTTIME},
    {"sigpending", RLIMIT_SIGPENDING},
    {"stack", RLIMIT_STACK},
}};

constexpr std::array k_capabilities = {"chown",
                                       "dac_override",
                                       "dac_read_search",
                                       "fowner",
                                       "fsetid",
                                       "kill",
                                       "setgid",
                                       "setuid",
                                       "setpcap",
                                       "linux_immutable",
                                       "net_bind_service",
                                       "net_broadcast",
                                       "net_admin",
                                       "net_raw",
                                       "ipc_lock",
                                       "ipc_owner",
                                       "sys_module",
                                       "sys_rawio",
                                       "sys_chroot",
                                       "sys_ptrace",
                                       "sys_pacct",
                                       "sys_admin",
                                       "sys_boot",
                                       "sys_nice",
                                       "sys_resource",
                                       "sys_time",
                                       "sys_tty_config",
                                       "mknod",
                                       "lease",
                                       "audit_write",
                                       "audit_control",
                                       "setfcap",
                                       "mac_override",
                                       "mac_admin",
                                       "syslog",
                                       "wake_alarm",
                                       "block_suspend",
                                       "audit_read",
                                       "perfmon",
                                       "bpf",
                                       "checkpoint_restore"};

std::optional<std::string> ulimit_problem(std::string_view value) {
  auto eq = value.find('=');
  std::string_view name = value.substr(0, eq);
  if (eq == std::string_view::npos || rlimit_resource(name) < 0)
    return fmt::format(
        "'{}' is not NAME=SOFT[:HARD] with NAME one of as, core, cpu, data, fsize, "
        "locks, memlock, msgqueue, nice, nofile, nproc, rss, rtprio, rttime, "
        "sigpending, stack (e.g. --ulimit memlock=-1)",
        value);
  std::string_view limits = value.substr(eq + 1);
  auto colon = limits.find(':');
  std::string_view soft = limits.substr(0, colon);
  std::string_view hard = colon == std::string_view::npos ? soft : limits.substr(colon + 1);
  if (!is_integer(soft) || !is_integer(hard))
    return fmt::format(
        "'{}': the limits must be integers (-1: unlimited), e.g. {}=-1 or "
        "{}=1024:4096",
        value, name, name);
  long long s = std::stoll(std::string(soft)), h = std::stoll(std::string(hard));
  if (s < -1 || h < -1) return fmt::format("'{}': a limit is -1 (unlimited) or at least 0", value);
  if (h != -1 && (s == -1 || s > h))
    return fmt::format("'{}': the soft limit is above the hard limit", value);
  return std::nullopt;
}

std::optional<std::string> capability_problem(std::string_view value) {
  std::string name = lower(value);
  if (name.starts_with("cap_")) name = name.substr(4);
  if (name == "all" || std::ranges::find(k_capabilities, name) != k_capabilities.end())
    return std::nullopt;
  return fmt::format("'{}' is not a Linux capability (e.g. SYS_PTRACE, IPC_LOCK, SYS_NICE)", value);
}

std::optional<std::string> security_opt_problem(std::string_view value) {
  if (value == "no-new-privileges") return std::nullopt;
  // KEY=VALUE; docker's older KEY:VALUE is accepted by both engines.
  auto split = value.find_first_of("=:");
  std::string_view key = value.substr(0, split);
  static constexpr std::array k_keys = {"seccomp", "apparmor", "label",     "no-new-privileges",
                                        "mask",    "unmask",   "proc-opts", "systempaths"};
  if (split == std::string_view::npos || split + 1 == value.size() ||
      std::ranges::find(k_keys, key) == k_keys.end())
    return fmt::format(
        "'{}' is not a security option (e.g. seccomp=unconfined, "
        "apparmor=unconfined, label=disable, no-new-privileges)",
        value);
  return std::nullopt;
}

std::optional<std::string> ipc_problem(std::string_view value) {
  if (value == "host" || value == "private" || value == "shareable" || value == "none")
    return std::nullopt;
  if (value.starts_with("container:") || value.starts_with("ns:"))
    return fmt::format(
        "'--ipc={}' is refused: it joins the IPC namespace of another container; "
        "write --ipc=host (the host's /dev/shm) or --shm-size SIZE",
        value);
  return fmt::format("'--ipc={}' is not an IPC mode (host, private, shareable or none)", value);
}

}  // namespace

int rlimit_resource(std::string_view name) {
  for (const auto& [known, resource] : k_ulimits)
    if (known == name) return resource;
  return -1;
}

std::optional<std::string> value_problem(std::string_view long_name, std::string_view value) {
  if (long_name == "--shm-size" || long_name == "--memory")
    return is_size(value)
               ? std::nullopt
               : std::optional(fmt::format("'{}' is not a size (e.g. 8g, 16G, 512m)", value));
  if (long_name == "--memory-swap")
    return value == "-1" || is_size(value)
               ? std::nullopt
               : std::optional(fmt::format("'{}' is not a size or -1 (e.g. 16g)", value));
  if (long_name == "--ulimit") return ulimit_problem(value);
  if (long_name == "--cap-add" || long_name == "--cap-drop") return capability_problem(value);
  if (long_name == "--security-opt") return security_opt_problem(value);
  if (long_name == "--ipc") return ipc_problem(value);
  if (long_name == "--health-interval" || long_name == "--health-timeout" ||
      long_name == "--health-start-period") {
    auto duration = core::parse_duration(value, core::DurationSyntax::engine);
    return duration ? std::nullopt : std::optional(duration.error().message);
  }
  if (long_name == "--health-retries") {
    int retries = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), retries);
    return ec == std::errc() && end == value.data() + value.size() && retries >= 0
               ? std::nullopt
               : std::optional(fmt::format("'{}' is not a number of retries (e.g. 3)", value));
  }
  return std::nullopt;
}

}  // namespace kiln::container
