#include "kiln/gpu/simulated_provider.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "kiln/gpu/deadline.h"
#include "kiln/gpu/telemetry.h"

#include <fmt/ranges.h>

namespace kiln::gpu {

namespace {

using nlohmann::json;

// Errors of one spec file: "FILE: error: PATH: MESSAGE".
class SpecErrors {
 public:
  explicit SpecErrors(const std::string& file) : file_(file) {}

  template <class... Args>
  std::unexpected<Error> at(const std::string& path, fmt::format_string<Args...> format,
                            Args&&... args) const {
    auto message = fmt::format(format, std::forward<Args>(args)...);
    if (!path.empty()) message = fmt::format("{}: {}", path, message);
    return make_error(ErrorCode::invalid_input, std::move(message), SourceLocation{file_, 0, 0});
  }

 private:
  std::string file_;
};

// A zombie holds no memory: its pid exists until its parent reaps it.
bool is_zombie(int pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text;
  std::getline(stat, text);
  auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

std::string_view type_name(const json& value) {
  if (value.is_number_integer()) return "an integer";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_null()) return "null";
  if (value.is_array()) return "an array";
  return "an object";
}

Status check_keys(const json& object, const std::set<std::string>& allowed, const std::string& path,
                  const SpecErrors& errors) {
  for (const auto& [key, value] : object.items()) {
    if (!allowed.contains(key))
      return errors.at(path.empty() ? key : path + "." + key, "unknown key");
  }
  return {};
}

Result<std::string> get_string(const json& object, const std::string& key, const std::string& path,
                               const SpecErrors& errors, bool required) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (required) return errors.at(path, "missing key '{}'", key);
    return std::string{};
  }
  if (!it->is_string())
    return errors.at(path + "." + key, "expected a string, got {}", type_name(*it));
  auto text = it->get<std::string>();
  if (required && text.empty()) return errors.at(path + "." + key, "must not be empty");
  return text;
}

// An integer in [min, max]; `fallback` when absent and not required.
Result<std::int64_t> get_integer(const json& object, const std::string& key,
                                 const std::string& path, const SpecErrors& errors, bool required,
                                 std::int64_t fallback, std::int64_t min, std::int64_t max) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (required) return errors.at(path, "missing key '{}'", key);
    return fallback;
  }
  if (!it->is_number_integer())
    return errors.at(path + "." + key, "expected an integer, got {}", type_name(*it));
  std::int64_t value = it->is_number_unsigned()
                           ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                                 it->get<std::uint64_t>(), static_cast<std::uint64_t>(INT64_MAX)))
                           : it->get<std::int64_t>();
  if (value < min || value > max)
    return errors.at(path + "." + key, "{} is out of range [{}, {}]", value, min, max);
  return value;
}

Status check_arch(const std::string& vendor, const std::string& arch, const std::string& path,
                  const SpecErrors& errors) {
  static const std::regex k_sm(R"(sm_[0-9]{2,3}[a-z]?)");
  static const std::regex k_gfx(R"(gfx[0-9]{1,2}[0-9a-f]{2})");
  if (arch.empty()) return {};
  if (vendor == "nvidia" && !std::regex_match(arch, k_sm))
    return errors.at(path, "'{}' is not an NVIDIA architecture (sm_NN, e.g. sm_90)", arch);
  if (vendor == "amd" && !std::regex_match(arch, k_gfx))
    return errors.at(path, "'{}' is not an AMD gfx target (e.g. gfx942)", arch);
  return {};
}

// A number in [min, max], when present.
Result<std::optional<double>> get_number(const json& object, const std::string& key,
                                         const std::string& path, const SpecErrors& errors,
                                         double min, double max) {
  auto it = object.find(key);
  if (it == object.end()) return std::optional<double>{};
  if (!it->is_number())
    return errors.at(path + "." + key, "expected a number, got {}", type_name(*it));
  double value = it->get<double>();
  if (value < min || value > max)
    return errors.at(path + "." + key, "{} is out of range [{}, {}]", value, min, max);
  return std::optional<double>{value};
}

// A GPU's "telemetry" object: what its sampler reports (telemetry.h), besides memory, which
// comes from memory_used_mib and the processes.
Status parse_telemetry(const json& entry, const std::string& path, const SpecErrors& errors,
                       GpuSample& sample) {
  if (!entry.is_object()) return errors.at(path, "expected an object, got {}", type_name(entry));
  KILN_TRY_VOID(check_keys(entry,
                           {"utilization_pct", "memory_utilization_pct", "temperature_c", "power_w",
                            "energy_mj", "sm_clock_mhz", "memory_clock_mhz", "throttle_reasons"},
                           path, errors));
  KILN_TRY(sample.utilization_pct, get_number(entry, "utilization_pct", path, errors, 0, 100));
  KILN_TRY(sample.memory_utilization_pct,
           get_number(entry, "memory_utilization_pct", path, errors, 0, 100));
  KILN_TRY(sample.temperature_c, get_number(entry, "temperature_c", path, errors, -50, 200));
  KILN_TRY(sample.power_w, get_number(entry, "power_w", path, errors, 0, 100000));
  if (entry.contains("energy_mj")) {
    KILN_TRY(auto mj, get_integer(entry, "energy_mj", path, errors, true, 0, 0, INT64_MAX));
    sample.energy_mj = static_cast<std::uint64_t>(mj);
  }
  for (auto [key, target] : {std::pair{"sm_clock_mhz", &sample.sm_clock_mhz},
                             std::pair{"memory_clock_mhz", &sample.memory_clock_mhz}}) {
    if (!entry.contains(key)) continue;
    KILN_TRY(auto mhz, get_integer(entry, key, path, errors, true, 0, 0, 100000));
    *target = static_cast<std::uint32_t>(mhz);
  }
  if (auto reasons = entry.find("throttle_reasons"); reasons != entry.end()) {
    auto at = path + ".throttle_reasons";
    if (!reasons->is_array())
      return errors.at(at, "expected an array, got {}", type_name(*reasons));
    auto known = clock_event_reason_names(~0ULL);
    for (std::size_t i = 0; i < reasons->size(); ++i) {
      const auto& reason = (*reasons)[i];
      if (!reason.is_string() || std::ranges::find(known, reason.get<std::string>()) == known.end())
        return errors.at(fmt::format("{}[{}]", at, i), "not a clock-event reason (one of: {})",
                         fmt::join(known, ", "));
      sample.throttle_reasons.push_back(reason.get<std::string>());
    }
  }
  return {};
}

// A GPU's "inject": {"when": PATH, "faults": [...], "vanish": bool}: once the file PATH exists
// (a job's step creates it), the GPU reports those faults (an Xid, an ECC error), or is no longer
// listed at all (fallen off the bus). Faults appear mid-job, when the job says so.
Status parse_injection(const json& entry, const std::string& gpu_path, const SpecErrors& errors,
                       GpuInfo& gpu, bool& vanished) {
  auto it = entry.find("inject");
  if (it == entry.end()) return {};
  auto path = gpu_path + ".inject";
  if (!it->is_object()) return errors.at(path, "expected an object, got {}", type_name(*it));
  KILN_TRY_VOID(check_keys(*it, {"when", "faults", "vanish"}, path, errors));
  KILN_TRY(auto when, get_string(*it, "when", path, errors, true));
  std::vector<std::string> faults;
  if (auto list = it->find("faults"); list != it->end()) {
    if (!list->is_array())
      return errors.at(path + ".faults", "expected an array, got {}", type_name(*list));
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (!(*list)[i].is_string())
        return errors.at(fmt::format("{}.faults[{}]", path, i), "expected a string, got {}",
                         type_name((*list)[i]));
      faults.push_back((*list)[i].get<std::string>());
    }
  }
  bool vanish = false;
  if (auto v = it->find("vanish"); v != it->end()) {
    if (!v->is_boolean())
      return errors.at(path + ".vanish", "expected a boolean, got {}", type_name(*v));
    vanish = v->get<bool>();
  }
  if (faults.empty() && !vanish)
    return errors.at(path, "injects nothing: give 'faults', 'vanish': true, or both");
  std::error_code ec;
  if (!std::filesystem::exists(when, ec)) return {};
  gpu.faults.insert(gpu.faults.end(), faults.begin(), faults.end());
  vanished = vanish;
  return {};
}

Result<GpuInfo> parse_gpu(const json& entry, int index, const SpecErrors& errors,
                          GpuSample* telemetry, bool& vanished) {
  std::string path = fmt::format("gpus[{}]", index);
  if (!entry.is_object()) return errors.at(path, "expected an object, got {}", type_name(entry));
  KILN_TRY_VOID(
      check_keys(entry,
                 {"vendor", "model", "memory_mib", "memory_used_mib", "arch", "uuid", "pci_bus_id",
                  "numa_node", "processes", "faults", "telemetry", "inject"},
                 path, errors));
  GpuInfo gpu;
  gpu.index = index;
  KILN_TRY(gpu.vendor, get_string(entry, "vendor", path, errors, true));
  if (gpu.vendor != "nvidia" && gpu.vendor != "amd")
    return errors.at(path + ".vendor", "'{}' is not a vendor (nvidia or amd)", gpu.vendor);
  KILN_TRY(gpu.model, get_string(entry, "model", path, errors, true));
  KILN_TRY(auto total,
           get_integer(entry, "memory_mib", path, errors, true, 0, 1, std::int64_t{1} << 40));
  gpu.memory_total_mib = static_cast<std::uint64_t>(total);
  KILN_TRY(auto used, get_integer(entry, "memory_used_mib", path, errors, false, 0, 0, total));
  gpu.memory_used_mib = static_cast<std::uint64_t>(used);
  KILN_TRY(gpu.arch, get_string(entry, "arch", path, errors, false));
  KILN_TRY_VOID(check_arch(gpu.vendor, gpu.arch, path + ".arch", errors));
  KILN_TRY(gpu.uuid, get_string(entry, "uuid", path, errors, false));
  if (gpu.uuid.empty()) gpu.uuid = simulated_uuid(index);
  KILN_TRY(gpu.pci_bus_id, get_string(entry, "pci_bus_id", path, errors, false));
  static const std::regex k_bus_id(R"([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])");
  if (!gpu.pci_bus_id.empty() && !std::regex_match(gpu.pci_bus_id, k_bus_id))
    return errors.at(path + ".pci_bus_id", "'{}' is not a PCI bus id (DDDD:BB:DD.F)",
                     gpu.pci_bus_id);
  KILN_TRY(auto numa, get_integer(entry, "numa_node", path, errors, false, -1, -1, 4095));
  gpu.numa_node = static_cast<int>(numa);
  gpu.driver_version = "simulated";
  if (auto t = entry.find("telemetry"); t != entry.end()) {
    GpuSample ignored;
    KILN_TRY_VOID(
        parse_telemetry(*t, path + ".telemetry", errors, telemetry ? *telemetry : ignored));
  }
  if (auto faults = entry.find("faults"); faults != entry.end()) {
    if (!faults->is_array())
      return errors.at(path + ".faults", "expected an array, got {}", type_name(*faults));
    for (std::size_t i = 0; i < faults->size(); ++i) {
      if (!(*faults)[i].is_string())
        return errors.at(fmt::format("{}.faults[{}]", path, i), "expected a string, got {}",
                         type_name((*faults)[i]));
      gpu.faults.push_back((*faults)[i].get<std::string>());
    }
  }
  KILN_TRY_VOID(parse_injection(entry, path, errors, gpu, vanished));
  if (auto processes = entry.find("processes"); processes != entry.end()) {
    if (!processes->is_array())
      return errors.at(path + ".processes", "expected an array, got {}", type_name(*processes));
    for (std::size_t i = 0; i < processes->size(); ++i) {
      auto at = fmt::format("{}.processes[{}]", path, i);
      const auto& process = (*processes)[i];
      if (!process.is_object())
        return errors.at(at, "expected an object, got {}", type_name(process));
      KILN_TRY_VOID(check_keys(process, {"pid", "memory_mib"}, at, errors));
      KILN_TRY(auto pid, get_integer(process, "pid", at, errors, true, 0, 1, INT32_MAX));
      KILN_TRY(auto mib, get_integer(process, "memory_mib", at, errors, true, 0, 0, total));
      // Like a driver, the simulation shows only processes that exist, and their memory is in
      // use only while they do: a test's process "holds" GPU memory until it is killed.
      if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) continue;
      if (is_zombie(static_cast<int>(pid))) continue;
      gpu.processes.push_back({static_cast<int>(pid), static_cast<std::uint64_t>(mib)});
      gpu.memory_used_mib =
          std::min(gpu.memory_total_mib, gpu.memory_used_mib + static_cast<std::uint64_t>(mib));
    }
  }
  return gpu;
}

Result<GpuLink> parse_link(const json& entry, int index, int gpu_count, const SpecErrors& errors) {
  std::string path = fmt::format("links[{}]", index);
  if (!entry.is_object()) return errors.at(path, "expected an object, got {}", type_name(entry));
  KILN_TRY_VOID(check_keys(entry, {"a", "b", "kind", "width"}, path, errors));
  GpuLink link;
  for (auto [key, target] : {std::pair{"a", &link.a}, std::pair{"b", &link.b}}) {
    KILN_TRY(auto value, get_integer(entry, key, path, errors, true, 0, INT32_MIN, INT32_MAX));
    if (value < 0 || value >= gpu_count)
      return errors.at(fmt::format("{}.{}", path, key), "GPU index {} does not exist ({} GPUs)",
                       value, gpu_count);
    *target = static_cast<int>(value);
  }
  if (link.a == link.b) return errors.at(path, "a link from GPU {} to itself", link.a);
  KILN_TRY(auto kind_name, get_string(entry, "kind", path, errors, true));
  auto kind = parse_link_kind(kind_name);
  if (!kind)
    return errors.at(path + ".kind",
                     "'{}' is not a link kind (nvlink, xgmi, pcie-switch, pcie-host, numa, sys)",
                     kind_name);
  link.kind = *kind;
  KILN_TRY(auto width, get_integer(entry, "width", path, errors, false, 0, 0, 1024));
  link.width = static_cast<int>(width);
  return link;
}

}  // namespace

std::string simulated_uuid(int index) { return fmt::format("GPU-sim-{:012d}", index); }

namespace {

// The spec; `telemetry`, when given, gets each GPU's "telemetry" values (index set).
Result<Inventory> parse_spec(std::string_view text, const std::string& file,
                             std::vector<GpuSample>* telemetry) {
  SpecErrors errors(file);
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error& e) {
    // Turn the byte offset into a line and column for the usual FILE:LINE:COL form.
    int line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string message = e.what();
    if (auto colon = message.rfind(": "); colon != std::string::npos)
      message = message.substr(colon + 2);
    return make_error(ErrorCode::invalid_input, "not valid JSON: " + message,
                      SourceLocation{file, line, column});
  } catch (const json::exception& e) {  // out_of_range: a number too large for a double
    std::string message = e.what();
    if (auto bracket = message.find("] "); bracket != std::string::npos)
      message = message.substr(bracket + 2);
    return make_error(ErrorCode::invalid_input, "not valid JSON: " + message, SourceLocation{file});
  }
  if (!document.is_object())
    return errors.at("", "expected a JSON object, got {}", type_name(document));
  KILN_TRY_VOID(check_keys(document, {"gpus", "links"}, "", errors));
  Inventory inventory;
  inventory.provider = "simulated";
  auto gpus = document.find("gpus");
  if (gpus == document.end()) return errors.at("", "missing key 'gpus'");
  if (!gpus->is_array()) return errors.at("gpus", "expected an array, got {}", type_name(*gpus));
  std::set<std::string> uuids;
  std::vector<int> listed_as;  // by place in the file: the GPU's index, -1 when it vanished
  for (std::size_t i = 0; i < gpus->size(); ++i) {
    GpuSample sample;
    bool vanished = false;
    KILN_TRY(auto gpu, parse_gpu((*gpus)[i], static_cast<int>(i), errors, &sample, vanished));
    if (!uuids.insert(gpu.uuid).second)
      return errors.at(fmt::format("gpus[{}].uuid", i), "'{}' is used by an earlier GPU", gpu.uuid);
    // A vanished GPU is not listed, as a driver lists only the GPUs it sees: the ones after it
    // move up (their UUIDs stay those of their place in the file), and its links go with it.
    if (vanished) {
      listed_as.push_back(-1);
      continue;
    }
    gpu.index = static_cast<int>(inventory.gpus.size());
    listed_as.push_back(gpu.index);
    sample.index = gpu.index;
    if (telemetry) telemetry->push_back(std::move(sample));
    inventory.gpus.push_back(std::move(gpu));
  }
  if (auto links = document.find("links"); links != document.end()) {
    if (!links->is_array())
      return errors.at("links", "expected an array, got {}", type_name(*links));
    std::set<std::pair<int, int>> pairs;
    for (std::size_t i = 0; i < links->size(); ++i) {
      KILN_TRY(auto link, parse_link((*links)[i], static_cast<int>(i),
                                     static_cast<int>(listed_as.size()), errors));
      if (!pairs.insert(std::minmax(link.a, link.b)).second)
        return errors.at(fmt::format("links[{}]", i), "GPUs {} and {} are already linked", link.a,
                         link.b);
      link.a = listed_as[static_cast<std::size_t>(link.a)];
      link.b = listed_as[static_cast<std::size_t>(link.b)];
      if (link.a >= 0 && link.b >= 0) inventory.links.push_back(link);
    }
  }
  return inventory;
}

Result<Inventory> load_spec(const std::filesystem::path& path, std::vector<GpuSample>* telemetry) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return make_error(ErrorCode::not_found, "cannot read the simulated GPU inventory",
                      SourceLocation{path.string(), 0, 0});
  std::ostringstream text;
  text << in.rdbuf();
  return parse_spec(text.str(), path.string(), telemetry);
}

class SimulatedSampler : public GpuSampler {
 public:
  explicit SimulatedSampler(std::filesystem::path spec) : spec_(std::move(spec)) {}

  Result<std::vector<GpuSample>> sample(const std::vector<int>& indices,
                                        std::chrono::milliseconds deadline) override {
    return worker_.call<std::vector<GpuSample>>(
        [spec = spec_, indices]() -> Result<std::vector<GpuSample>> {
          std::vector<GpuSample> telemetry;
          KILN_TRY(auto inventory, load_spec(spec, &telemetry));
          auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
          std::vector<GpuSample> samples;
          for (int index : indices) {
            if (index < 0 || static_cast<std::size_t>(index) >= inventory.gpus.size())
              return fail(ErrorCode::not_found, "{}: no GPU {}", spec.string(), index);
            const auto& gpu = inventory.gpus[static_cast<std::size_t>(index)];
            GpuSample s = telemetry[static_cast<std::size_t>(index)];
            s.time_ms = now;
            s.memory_used_mib = gpu.memory_used_mib;
            s.processes = gpu.processes;
            samples.push_back(std::move(s));
          }
          return samples;
        },
        deadline, "the simulated GPU telemetry");
  }

 private:
  std::filesystem::path spec_;
  DeadlineWorker worker_;
};

}  // namespace

Result<Inventory> parse_simulated_inventory(std::string_view text, const std::string& file) {
  return parse_spec(text, file, nullptr);
}

Result<Inventory> load_simulated_inventory(const std::filesystem::path& path) {
  return load_spec(path, nullptr);
}

std::unique_ptr<GpuSampler> make_simulated_sampler(const std::filesystem::path& spec) {
  return std::make_unique<SimulatedSampler>(spec);
}

Result<Inventory> SimulatedProvider::inventory(std::chrono::milliseconds deadline) {
  return call_with_deadline<Inventory>([spec = spec_] { return load_simulated_inventory(spec); },
                                       deadline, "the simulated GPU inventory");
}

}  // namespace kiln::gpu
