#include "kiln/container/options.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <filesystem>

#include "kiln/container/option_values.h"

namespace kiln::container {
namespace {

struct OptionSpec {
  std::string_view name;   // the long form, "--device"
  std::string_view alias;  // a short form, "-v", or ""
  bool takes_value;
};

// What passes through (see options.h). --gpus, --network, --pid... are handled apart.
constexpr std::array k_allowed = {
    OptionSpec{"--device", "", true},
    OptionSpec{"--group-add", "", true},
    OptionSpec{"--ipc", "", true},
    OptionSpec{"--shm-size", "", true},
    OptionSpec{"--ulimit", "", true},
    OptionSpec{"--cap-add", "", true},
    OptionSpec{"--cap-drop", "", true},
    OptionSpec{"--security-opt", "", true},
    OptionSpec{"--env", "-e", true},
    OptionSpec{"--env-file", "", true},
    OptionSpec{"--volume", "-v", true},
    OptionSpec{"--mount", "", true},
    OptionSpec{"--tmpfs", "", true},
    OptionSpec{"--user", "-u", true},
    OptionSpec{"--memory", "-m", true},
    OptionSpec{"--memory-swap", "", true},
    OptionSpec{"--cpus", "", true},
    OptionSpec{"--cpuset-cpus", "", true},
    OptionSpec{"--pids-limit", "", true},
    OptionSpec{"--hostname", "-h", true},
    OptionSpec{"--add-host", "", true},
    OptionSpec{"--label", "-l", true},
    OptionSpec{"--workdir", "-w", true},
    OptionSpec{"--entrypoint", "", true},
    OptionSpec{"--health-cmd", "", true},
    OptionSpec{"--health-interval", "", true},
    OptionSpec{"--health-retries", "", true},
    OptionSpec{"--health-timeout", "", true},
    OptionSpec{"--health-start-period", "", true},
    OptionSpec{"--gpus", "", true},
    OptionSpec{"--pid", "", true},
    OptionSpec{"--network", "", true},
    OptionSpec{"--net", "", true},
    OptionSpec{"--userns", "", true},
    OptionSpec{"--uts", "", true},
    OptionSpec{"--init", "", false},
    OptionSpec{"--read-only", "", false},
    OptionSpec{"--no-healthcheck", "", false},
    OptionSpec{"--privileged", "", false},
};

const OptionSpec* find_spec(std::string_view name) {
  for (const auto& spec : k_allowed)
    if (spec.name == name || (!spec.alias.empty() && spec.alias == name)) return &spec;
  return nullptr;
}

// "--net", "-v": what an engine would read as an option, not a value ("-1" is a value).
bool looks_like_option(std::string_view value) {
  return value.size() >= 2 && value[0] == '-' &&
         !std::isdigit(static_cast<unsigned char>(value[1])) && value[1] != '.';
}

bool is_gpu_device(std::string_view device) {
  // --device takes HOST[:CONTAINER[:PERMS]] or a CDI name (nvidia.com/gpu=0).
  std::string_view host = device.substr(0, device.find(':'));
  return host.starts_with("/dev/nvidia") || host == "/dev/kfd" || host.starts_with("/dev/dri") ||
         host.starts_with("nvidia.com/gpu") || host.starts_with("amd.com/gpu");
}

std::string allowed_list() {
  std::string out;
  for (const auto& spec : k_allowed) {
    if (spec.name == "--privileged") continue;
    if (!out.empty()) out += ' ';
    out += spec.name;
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\'') {
      auto end = text.find('\'', i + 1);
      if (end == std::string_view::npos)
        return fail(ErrorCode::invalid_input, "unterminated ' in '{}'", text);
      word.append(text.substr(i + 1, end - i - 1));
      in_word = true;
      i = end;
    } else if (c == '"') {
      bool closed = false;
      for (++i; i < text.size(); ++i) {
        char d = text[i];
        if (d == '"') {
          closed = true;
          break;
        }
        if (d == '\\' && i + 1 < text.size() &&
            std::string_view("\"\\$`").find(text[i + 1]) != std::string_view::npos) {
          word.push_back(text[++i]);
        } else {
          word.push_back(d);
        }
      }
      if (!closed) return fail(ErrorCode::invalid_input, "unterminated \" in '{}'", text);
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 < text.size()) {
        if (text[i + 1] != '\n') word.push_back(text[i + 1]);
        ++i;
      }
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::optional<std::string> refused_volume(std::string_view spec) {
  std::string_view source = spec.substr(0, spec.find(':'));
  if (source.empty()) return std::nullopt;
  if (source.front() != '/' && source.front() != '.') return std::nullopt;  // a named volume
  std::string normal = std::filesystem::path(source).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  if (normal == "/") return "it mounts the host's root file system";
  if (normal.ends_with("/docker.sock") || normal.ends_with("/podman.sock") ||
      normal.ends_with("/containerd.sock") || normal == "/var/run/docker" ||
      normal == "/run/podman" || normal == "/var/run/podman" || normal == "/run" ||
      normal == "/var/run")
    return "it mounts the container engine's socket, which controls every container of the host";
  return std::nullopt;
}

std::optional<std::pair<unsigned, unsigned>> numeric_user(std::string_view user) {
  auto number = [](std::string_view text) -> std::optional<unsigned> {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
  };
  auto colon = user.find(':');
  auto uid = number(user.substr(0, colon));
  if (!uid) return std::nullopt;
  if (colon == std::string_view::npos) return std::pair{*uid, *uid};
  auto gid = number(user.substr(colon + 1));
  if (!gid) return std::nullopt;
  return std::pair{*uid, *gid};
}

const std::set<std::string>& allowable_options() {
  static const std::set<std::string> names = {"privileged", "host-pid", "host-network",
                                              "host-userns", "host-uts"};
  return names;
}

void apply_forced(std::vector<std::string>& args, const ContainerPolicy& policy) {
  const std::pair<const char*, const std::optional<std::string>*> forced[] = {
      {"--user", &policy.user},
      {"--memory", &policy.memory},
      {"--cpus", &policy.cpus},
      {"--pids-limit", &policy.pids_limit}};
  for (const auto& [flag, value] : forced) {
    if (!*value) continue;
    for (std::size_t i = 0; i + 1 < args.size();) {
      if (args[i] == flag) {
        args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
      } else {
        ++i;
      }
    }
    args.push_back(flag);
    args.push_back(**value);
  }
}

Result<ContainerOptions> parse_options(std::string_view text, const SourceLocation& where,
                                       const ContainerPolicy& policy) {
  auto split = split_words(text);
  if (!split) return fail_at(where, "container options: {}", split.error().message);
  ContainerOptions out;
  bool ipc_host = false;
  std::optional<std::string> shm_size;
  const auto& words = *split;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string word = words[i];
    std::string name = word;
    std::optional<std::string> value;
    if (word.starts_with("--")) {
      if (auto eq = word.find('='); eq != std::string::npos) {
        name = word.substr(0, eq);
        value = word.substr(eq + 1);
      }
    } else if (word.size() > 2 && word[0] == '-' && word[1] != '-') {
      // -eFOO=bar, -v/a:/b: a short option glued to its value.
      name = word.substr(0, 2);
      value = word.substr(2);
    }
    if (!word.starts_with("-"))
      return fail_at(where,
                     "container options: '{}' is not an option (options: pass engine "
                     "flags only; the image goes in `image:`)",
                     word);
    const OptionSpec* spec = find_spec(name);
    if (spec == nullptr)
      return fail_at(where,
                     "container option '{}' is not allowed by kiln's container policy; allowed: {}",
                     name, allowed_list());
    if (spec->name == "--privileged" && policy.allow.contains("privileged")) {
      out.args.push_back("--privileged");
      continue;
    }
    if (spec->name == "--privileged")
      return fail_at(where,
                     "container option '--privileged' is refused: it gives the job every "
                     "device and capability of the host, the other jobs' GPUs included; ask "
                     "for what the job needs (--cap-add SYS_PTRACE, --security-opt "
                     "seccomp=unconfined), or let this host allow it in kiln.yml "
                     "(containers: allow: [privileged])");
    const bool glued = value && !word.starts_with("--");
    if (spec->takes_value && !value) {
      if (i + 1 >= words.size()) return fail_at(where, "container option '{}' needs a value", name);
      value = words[++i];
    }
    if (!spec->takes_value && value)
      return fail_at(where, "container option '{}' takes no value", name);
    const std::string_view long_name = spec->name;
    if (spec->takes_value) {
      if (value->empty() && long_name != "--entrypoint")  // --entrypoint "": the image's none
        return fail_at(where, "container option '{}' has an empty value", name);
      // "-v--net", "-v --net": podman would take the option as the value and fail at `run`.
      if (looks_like_option(*value)) {
        if (glued)
          return fail_at(where,
                         "container option '{}' is ambiguous: it reads as '{}' with the value "
                         "'{}'; write each option apart, with its own value ({} VALUE)",
                         word, name, *value, name);
        return fail_at(where,
                       "container option '{}' would take '{}' as its value, which is an option; "
                       "write '{} VALUE', then '{}'",
                       name, *value, name, *value);
      }
      if (auto problem = value_problem(long_name, *value))
        return fail_at(where, "container option '{}': {}", name, *problem);
    }
    if (long_name == "--pid" || long_name == "--network" || long_name == "--net" ||
        long_name == "--userns" || long_name == "--uts") {
      if (*value == "host" &&
          policy.allow.contains(
              "host-" + std::string(long_name == "--net" ? "--network" : long_name).substr(2))) {
        out.args.push_back(std::string(long_name == "--net" ? "--network" : long_name));
        out.args.push_back(*value);
        if (long_name == "--network" || long_name == "--net") out.host_network = true;
        continue;
      }
      const bool network = long_name == "--network" || long_name == "--net";
      if (*value == "host" && network)
        return fail_at(where,
                       "container option '{}={}' is refused: it shares the host's network with "
                       "the job; leave it out (the job and its services get a network of their "
                       "own, services reached by their key), or let this host allow it in "
                       "kiln.yml (containers: allow: [host-network])",
                       name, *value);
      if (*value == "host")
        return fail_at(where,
                       "container option '{}={}' is refused: it shares the host's {} namespace "
                       "with the job; leave it out, or let this host allow it in kiln.yml "
                       "(containers: allow: [host-{}])",
                       name, *value, long_name == "--pid" ? "process" : long_name.substr(2),
                       long_name.substr(2));
      if (network)
        return fail_at(where,
                       "container option '{}' is refused: kiln puts the job and its services on "
                       "a network of their own; leave it out (services are reached by their "
                       "key, e.g. db:5432)",
                       name);
      if (long_name == "--pid" && value->starts_with("container:"))
        return fail_at(where,
                       "container option '--pid={}' is refused: it joins another "
                       "container's processes",
                       *value);
      out.args.push_back(std::string(long_name));
      out.args.push_back(*value);
      continue;
    }
    if (long_name == "--gpus") {
      out.gpus = *value;
      continue;
    }
    if (long_name == "--device" && is_gpu_device(*value)) {
      out.dropped_devices.push_back(*value);
      continue;
    }
    if (long_name == "--volume") {
      if (auto why = refused_volume(*value))
        return fail_at(where, "container option '-v {}' is refused: {}", *value, *why);
    }
    if (long_name == "--mount") {
      // type=bind,source=/,target=/host
      for (std::string_view field : {"source=", "src="}) {
        auto at = value->find(field);
        if (at == std::string::npos) continue;
        std::string source = value->substr(at + field.size());
        source = source.substr(0, source.find(','));
        if (auto why = refused_volume(source))
          return fail_at(where, "container option '--mount {}' is refused: {}", *value, *why);
      }
    }
    if (long_name == "--cap-add" && (*value == "ALL" || *value == "all") &&
        !policy.allow.contains("privileged"))
      return fail_at(where,
                     "container option '--cap-add {}' is refused: it gives the job every "
                     "capability of the host; name the ones it needs (--cap-add SYS_PTRACE), or "
                     "let this host allow it in kiln.yml (containers: allow: [privileged])",
                     *value);
    if (long_name == "--ipc") ipc_host = *value == "host";
    if (long_name == "--shm-size") shm_size = *value;
    if (long_name == "--ulimit") {
      if (value->starts_with("nofile=")) out.sets_nofile = true;
      if (value->starts_with("nproc=")) out.sets_nproc = true;
    }
    if (long_name == "--init") out.sets_init = true;
    if (long_name == "--no-healthcheck") out.no_healthcheck = true;
    if (long_name == "--health-cmd") out.has_health_cmd = true;
    if (long_name == "--health-interval") out.health_interval = *value;
    if (long_name == "--health-retries") out.health_retries = *value;
    if (long_name == "--health-timeout") out.health_timeout = *value;
    if (long_name == "--health-start-period") out.health_start_period = *value;
    out.args.push_back(std::string(long_name));
    if (spec->takes_value) out.args.push_back(*value);
  }
  // podman refuses --shm-size in the host's IPC namespace; docker ignores it there. Both mean
  // the host's /dev/shm, so the size is not passed.
  if (ipc_host && shm_size) {
    for (std::size_t i = 0; i + 1 < out.args.size();) {
      if (out.args[i] == "--shm-size")
        out.args.erase(out.args.begin() + static_cast<long>(i),
                       out.args.begin() + static_cast<long>(i) + 2);
      else
        ++i;
    }
    out.notes.push_back(
        fmt::format("--shm-size {} is not passed: with --ipc=host the job uses "
                    "the host's /dev/shm (as docker does)",
                    *shm_size));
  }
  return out;
}

}  // namespace kiln::container
