#include "kiln/container/host_options.h"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <fstream>

#include <fmt/format.h>

#include "kiln/container/option_values.h"

namespace kiln::container {
namespace {

constexpr std::uint64_t k_unlimited = UINT64_MAX;
constexpr int k_cap_sys_resource = 24;

std::uint64_t limit_value(std::string_view text) {
  if (text == "-1") return k_unlimited;
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

std::string limit_text(std::uint64_t value) {
  return value == k_unlimited ? "-1" : std::to_string(value);
}

}  // namespace

HostFacts this_host() {
  HostFacts facts;
  facts.groups = host_group_ids();
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!line.starts_with("CapEff:")) continue;
    std::uint64_t caps = 0;
    std::string_view hex = std::string_view(line).substr(7);
    while (!hex.empty() && (hex.front() == ' ' || hex.front() == '\t')) hex.remove_prefix(1);
    std::from_chars(hex.data(), hex.data() + hex.size(), caps, 16);
    facts.can_raise_limits = (caps >> k_cap_sys_resource) & 1U;
  }
  for (std::string_view name : {"memlock", "nofile", "nproc", "stack", "core", "rtprio", "nice"}) {
    int resource = rlimit_resource(name);
    rlimit limit{};
    if (getrlimit(resource, &limit) != 0) continue;
    auto convert = [](rlim_t value) {
      return value == RLIM_INFINITY ? k_unlimited : static_cast<std::uint64_t>(value);
    };
    facts.limits[resource] = {convert(limit.rlim_cur), convert(limit.rlim_max)};
  }
  return facts;
}

HostAdaptation adapt_to_host(std::vector<std::string>& args, const HostFacts& host) {
  HostAdaptation out;
  for (std::size_t i = 0; i + 1 < args.size();) {
    const std::string& flag = args[i];
    std::string& value = args[i + 1];
    if (flag == "--group-add" && (value == "video" || value == "render")) {
      auto it = host.groups.find(value);
      if (it == host.groups.end()) {
        out.notes.push_back(
            fmt::format("--group-add {0} is not passed: this host has no '{0}' "
                        "group, so no device of the job belongs to it",
                        value));
        args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
        continue;
      }
      out.notes.push_back(
          fmt::format("--group-add {} is passed as the host's group id {} (the "
                      "group of the GPU device nodes)",
                      value, it->second));
      value = std::to_string(it->second);
    } else if (flag == "--ulimit" && !host.can_raise_limits) {
      auto eq = value.find('=');
      std::string name = value.substr(0, eq);
      auto known = host.limits.find(rlimit_resource(name));
      if (eq != std::string::npos && known != host.limits.end()) {
        std::string_view limits = std::string_view(value).substr(eq + 1);
        auto colon = limits.find(':');
        std::uint64_t soft = limit_value(limits.substr(0, colon));
        std::uint64_t hard =
            colon == std::string_view::npos ? soft : limit_value(limits.substr(colon + 1));
        std::uint64_t host_hard = known->second.second;
        if (hard > host_hard || soft > host_hard) {
          std::string given = value;
          std::uint64_t new_soft = std::min(soft, host_hard);
          value = fmt::format("{}={}:{}", name, limit_text(new_soft), limit_text(host_hard));
          out.warnings.push_back(fmt::format(
              "--ulimit {} is above this host's hard limit ({}) and kiln cannot raise it (no "
              "CAP_SYS_RESOURCE), so neither can the engine: --ulimit {} is used",
              given, limit_text(host_hard), value));
        }
      }
    }
    i += 2;
  }
  return out;
}

}  // namespace kiln::container
