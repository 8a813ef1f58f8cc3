#include "kiln/gpu/amd_sysfs_provider.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "kiln/gpu/amd_fdinfo.h"
#include "kiln/gpu/deadline.h"
#include "kiln/gpu/telemetry.h"

namespace kiln::gpu {

namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t k_mib = 1024 * 1024;
constexpr int k_iolink_type_xgmi = 11;

// A sysfs attribute without its trailing newline; nullopt when it cannot be read.
std::optional<std::string> read_attr(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  std::string value = text.str();
  while (!value.empty() && (value.back() == '\n' || value.back() == ' ' || value.back() == '\0'))
    value.pop_back();
  return value;
}

// A decimal or 0x-prefixed hexadecimal integer attribute.
template <class T>
std::optional<T> read_number(const fs::path& path) {
  auto text = read_attr(path);
  if (!text || text->empty()) return std::nullopt;
  std::string_view digits = *text;
  int base = 10;
  if (digits.starts_with("0x") || digits.starts_with("0X")) {
    digits.remove_prefix(2);
    base = 16;
  }
  T value{};
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

// "name value" lines of a kfd properties file.
std::map<std::string, std::uint64_t> read_properties(const fs::path& path) {
  std::map<std::string, std::uint64_t> props;
  std::ifstream in(path);
  std::string name;
  std::uint64_t value = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (fields >> name >> value) props[name] = value;
  }
  return props;
}

std::uint64_t prop(const std::map<std::string, std::uint64_t>& props, const std::string& name) {
  auto it = props.find(name);
  return it == props.end() ? 0 : it->second;
}

std::map<std::string, std::string> read_uevent(const fs::path& path) {
  std::map<std::string, std::string> values;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (auto eq = line.find('='); eq != std::string::npos)
      values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return values;
}

struct PciAddress {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  std::uint64_t location_id() const { return (bus << 8) | (device << 3) | function; }
};

std::optional<PciAddress> parse_slot(const std::string& slot) {
  static const std::regex k_slot(
      R"(([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7]))");
  std::smatch m;
  if (!std::regex_match(slot, m, k_slot)) return std::nullopt;
  PciAddress address;
  address.domain = static_cast<unsigned>(std::stoul(m[1], nullptr, 16));
  address.bus = static_cast<unsigned>(std::stoul(m[2], nullptr, 16));
  address.device = static_cast<unsigned>(std::stoul(m[3], nullptr, 16));
  address.function = static_cast<unsigned>(std::stoul(m[4], nullptr, 16));
  return address;
}

struct KfdGpuNode {
  int node = 0;
  std::map<std::string, std::uint64_t> props;
  std::vector<std::pair<int, int>> io_links;  // (type, node_to)
};

std::vector<KfdGpuNode> read_kfd_gpu_nodes(const fs::path& root) {
  std::vector<KfdGpuNode> nodes;
  fs::path dir = root / "sys/class/kfd/kfd/topology/nodes";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    int node = 0;
    auto name = entry.path().filename().string();
    auto [end, parse_ec] = std::from_chars(name.data(), name.data() + name.size(), node);
    if (parse_ec != std::errc{} || end != name.data() + name.size()) continue;
    auto props = read_properties(entry.path() / "properties");
    if (prop(props, "simd_count") == 0) continue;  // a CPU node
    KfdGpuNode gpu{node, std::move(props), {}};
    std::error_code link_ec;
    for (const auto& link : fs::directory_iterator(entry.path() / "io_links", link_ec)) {
      auto link_props = read_properties(link.path() / "properties");
      if (!link_props.contains("type") || !link_props.contains("node_to")) continue;
      gpu.io_links.emplace_back(static_cast<int>(prop(link_props, "type")),
                                static_cast<int>(prop(link_props, "node_to")));
    }
    nodes.push_back(std::move(gpu));
  }
  return nodes;
}

struct Card {
  int card = 0;
  fs::path device;
  std::string slot;
  std::vector<std::string> pci_chain;  // pciDDDD:BB, root port, ..., the GPU; empty if unknown
};

// The PCI devices from the host bridge down to the GPU, from the resolved sysfs path.
std::vector<std::string> pci_chain(const fs::path& device) {
  std::error_code ec;
  auto resolved = fs::canonical(device, ec);
  if (ec) return {};
  std::vector<std::string> parts;
  bool in_devices = false;
  fs::path previous;
  for (const auto& part : resolved) {
    if (in_devices) parts.push_back(part.string());
    if (part == "devices" && previous == "sys") in_devices = true;
    previous = part;
  }
  if (parts.empty() || !parts.front().starts_with("pci")) return {};
  return parts;
}

std::vector<Card> amd_cards(const fs::path& root) {
  static const std::regex k_card(R"(card([0-9]+))");
  std::vector<Card> cards;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root / "sys/class/drm", ec)) {
    std::smatch m;
    auto name = entry.path().filename().string();
    if (!std::regex_match(name, m, k_card)) continue;
    fs::path device = entry.path() / "device";
    if (read_number<unsigned>(device / "vendor") != 0x1002u) continue;
    auto uevent = read_uevent(device / "uevent");
    if (uevent["DRIVER"] != "amdgpu") continue;
    std::string slot = uevent["PCI_SLOT_NAME"];
    if (slot.empty()) {
      std::error_code canon_ec;
      slot = fs::canonical(device, canon_ec).filename().string();
    }
    cards.push_back({std::stoi(m[1]), device, slot, pci_chain(device)});
  }
  std::sort(cards.begin(), cards.end(),
            [](const Card& a, const Card& b) { return a.slot < b.slot; });
  return cards;
}

LinkKind pcie_level(const Card& a, const Card& b, int numa_a, int numa_b) {
  const auto& x = a.pci_chain;
  const auto& y = b.pci_chain;
  if (!x.empty() && !y.empty() && x.front() == y.front()) {
    // Shared devices below the host bridge, the GPUs themselves left out: the root port alone
    // means the path goes through the host bridge; a device below it means a PCIe switch.
    std::size_t shared = 0;
    while (shared + 1 < x.size() && shared + 1 < y.size() && x[shared] == y[shared]) ++shared;
    return shared >= 2 ? LinkKind::pcie_switch : LinkKind::pcie_host;
  }
  if (numa_a >= 0 && numa_a == numa_b) return LinkKind::numa;
  return LinkKind::sys;
}

// Uncorrectable errors the driver's RAS counters hold: every ras/<block>_err_count file reads
// "ue: N\nce: M" (uncorrectable, correctable). Correctable errors are not a fault.
std::vector<std::string> read_ras_faults(const fs::path& ras) {
  std::vector<std::string> faults;
  std::error_code error;
  std::vector<fs::path> counters;
  for (const auto& entry : fs::directory_iterator(ras, error)) {
    auto name = entry.path().filename().string();
    if (name.ends_with("_err_count")) counters.push_back(entry.path());
  }
  std::sort(counters.begin(), counters.end());
  for (const auto& path : counters) {
    std::ifstream in(path);
    std::string key;
    unsigned long long count = 0;
    while (in >> key >> count) {
      if (key == "ue:" && count > 0) {
        auto block = path.filename().string();
        block.resize(block.size() - std::string_view("_err_count").size());
        faults.push_back(fmt::format("{} uncorrectable {} errors (amdgpu RAS)", count, block));
      }
    }
  }
  return faults;
}

}  // namespace

std::string gfx_target_name(std::uint64_t version) {
  if (version == 0) return {};
  auto major = version / 10000;
  auto minor = (version / 100) % 100;
  auto stepping = version % 100;
  return fmt::format("gfx{}{:x}{:x}", major, minor, stepping);
}

bool amd_gpus_present(const std::filesystem::path& root) { return !amd_cards(root).empty(); }

Result<Inventory> read_amd_sysfs(const std::filesystem::path& root) {
  Inventory inventory;
  inventory.provider = "amdgpu-sysfs";
  auto cards = amd_cards(root);
  auto kfd_nodes = read_kfd_gpu_nodes(root);
  auto driver = read_attr(root / "sys/module/amdgpu/version").value_or("");
  std::map<int, int> gpu_of_kfd_node;  // kfd node → GPU index
  for (const auto& card : cards) {
    GpuInfo gpu;
    gpu.index = static_cast<int>(inventory.gpus.size());
    gpu.vendor = "amd";
    gpu.pci_bus_id = card.slot;
    gpu.driver_version = driver;
    gpu.numa_node = read_number<int>(card.device / "numa_node").value_or(-1);
    if (gpu.numa_node < -1) gpu.numa_node = -1;
    gpu.memory_total_mib =
        read_number<std::uint64_t>(card.device / "mem_info_vram_total").value_or(0) / k_mib;
    gpu.memory_used_mib =
        read_number<std::uint64_t>(card.device / "mem_info_vram_used").value_or(0) / k_mib;
    gpu.faults = read_ras_faults(card.device / "ras");
    gpu.model = read_attr(card.device / "product_name").value_or("");
    if (gpu.model.empty()) {
      auto device_id = read_number<unsigned>(card.device / "device").value_or(0);
      gpu.model = fmt::format("AMD GPU 0x{:04x}", device_id);
    }
    std::string unique_id = read_attr(card.device / "unique_id").value_or("");
    gpu.device_nodes.push_back(fmt::format("/dev/dri/card{}", card.card));

    const KfdGpuNode* node = nullptr;
    if (auto address = parse_slot(card.slot)) {
      for (const auto& candidate : kfd_nodes) {
        if (prop(candidate.props, "domain") == address->domain &&
            prop(candidate.props, "location_id") == address->location_id()) {
          node = &candidate;
          break;
        }
      }
    }
    if (node) {
      gpu.arch = gfx_target_name(prop(node->props, "gfx_target_version"));
      gpu.device_nodes.push_back(
          fmt::format("/dev/dri/renderD{}", prop(node->props, "drm_render_minor")));
      if (unique_id.empty() && prop(node->props, "unique_id") != 0)
        unique_id = fmt::format("{:016x}", prop(node->props, "unique_id"));
      gpu_of_kfd_node[node->node] = gpu.index;
    } else {
      // No kfd (amdkfd not loaded): the render node is still listed beside the card.
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(card.device / "drm", ec)) {
        auto name = entry.path().filename().string();
        if (name.starts_with("renderD")) gpu.device_nodes.push_back("/dev/dri/" + name);
      }
    }
    if (!unique_id.empty()) gpu.uuid = "GPU-" + unique_id;
    inventory.gpus.push_back(std::move(gpu));
  }

  std::set<std::pair<int, int>> linked;
  for (const auto& node : kfd_nodes) {
    auto from = gpu_of_kfd_node.find(node.node);
    if (from == gpu_of_kfd_node.end()) continue;
    for (auto [type, node_to] : node.io_links) {
      auto to = gpu_of_kfd_node.find(node_to);
      if (type != k_iolink_type_xgmi || to == gpu_of_kfd_node.end()) continue;
      auto pair = std::minmax(from->second, to->second);
      if (linked.insert(pair).second)
        inventory.links.push_back({pair.first, pair.second, LinkKind::xgmi, 0});
    }
  }
  for (std::size_t a = 0; a < cards.size(); ++a) {
    for (std::size_t b = a + 1; b < cards.size(); ++b) {
      auto pair = std::pair{static_cast<int>(a), static_cast<int>(b)};
      if (linked.contains(pair)) continue;
      auto kind =
          pcie_level(cards[a], cards[b], inventory.gpus[a].numa_node, inventory.gpus[b].numa_node);
      inventory.links.push_back({pair.first, pair.second, kind, 0});
    }
  }
  std::sort(inventory.links.begin(), inventory.links.end(), [](const GpuLink& x, const GpuLink& y) {
    return std::pair{x.a, x.b} < std::pair{y.a, y.b};
  });
  return inventory;
}

Result<Inventory> AmdSysfsProvider::inventory(std::chrono::milliseconds deadline) {
  return call_with_deadline<Inventory>([root = root_] { return read_amd_sysfs(root); }, deadline,
                                       "the amdgpu sysfs tree");
}

namespace {

// The current level of a pp_dpm_* table: the line marked '*' ("2: 1700Mhz *").
std::optional<std::uint32_t> current_dpm_mhz(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find('*') == std::string::npos) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) return std::nullopt;
    std::uint32_t mhz = 0;
    auto start = line.find_first_of("0123456789", colon);
    if (start == std::string::npos) return std::nullopt;
    auto [end, ec] = std::from_chars(line.data() + start, line.data() + line.size(), mhz);
    if (ec != std::errc{}) return std::nullopt;
    return mhz;
  }
  return std::nullopt;
}

// One card's telemetry files, found once.
struct AmdSampleFiles {
  fs::path device;
  fs::path hwmon;    // empty: none
  std::string slot;  // PCI address, lower case: the key of its processes (amd_fdinfo.h)
};

class AmdSysfsSampler : public GpuSampler {
 public:
  explicit AmdSysfsSampler(fs::path root)
      : root_(std::move(root)),
        scanner_(std::make_shared<AmdgpuProcessScanner>(root_, k_process_rescan)) {}

  Result<std::vector<GpuSample>> sample(const std::vector<int>& indices,
                                        std::chrono::milliseconds deadline) override {
    if (!files_) {
      std::vector<AmdSampleFiles> files;
      for (const auto& card : amd_cards(root_)) {
        AmdSampleFiles f{card.device, {}, {}};
        for (char c : card.slot)
          f.slot += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(card.device / "hwmon", ec)) {
          f.hwmon = entry.path();  // amdgpu registers one hwmon device per card
          break;
        }
        files.push_back(std::move(f));
      }
      files_ = std::make_shared<const std::vector<AmdSampleFiles>>(std::move(files));
    }
    return worker_.call<std::vector<GpuSample>>(
        [files = files_, indices, scanner = scanner_]() -> Result<std::vector<GpuSample>> {
          std::vector<GpuSample> samples;
          // The processes' VRAM from /proc/PID/fdinfo, once for all the GPUs of this sample.
          auto processes = scanner->read();
          for (int index : indices) {
            if (index < 0 || static_cast<std::size_t>(index) >= files->size())
              return fail(ErrorCode::not_found, "amdgpu sysfs: no GPU {}", index);
            const auto& f = (*files)[static_cast<std::size_t>(index)];
            GpuSample s;
            s.index = index;
            s.time_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
            if (auto v = read_number<unsigned>(f.device / "gpu_busy_percent"))
              s.utilization_pct = *v;
            if (auto v = read_number<unsigned>(f.device / "mem_busy_percent"))
              s.memory_utilization_pct = *v;
            s.memory_used_mib =
                read_number<std::uint64_t>(f.device / "mem_info_vram_used").value_or(0) / k_mib;
            s.sm_clock_mhz = current_dpm_mhz(f.device / "pp_dpm_sclk");
            s.memory_clock_mhz = current_dpm_mhz(f.device / "pp_dpm_mclk");
            if (!f.hwmon.empty()) {
              if (auto v = read_number<std::int64_t>(f.hwmon / "temp1_input"))
                s.temperature_c = static_cast<double>(*v) / 1000.0;  // millidegrees
              auto uw = read_number<std::uint64_t>(f.hwmon / "power1_average");
              if (!uw) uw = read_number<std::uint64_t>(f.hwmon / "power1_input");
              if (uw) s.power_w = static_cast<double>(*uw) / 1e6;  // microwatts
            }
            if (auto it = processes.find(f.slot); it != processes.end()) s.processes = it->second;
            samples.push_back(std::move(s));
          }
          return samples;
        },
        deadline, "the amdgpu sysfs tree");
  }

 private:
  // How often the sampler walks every process's fds for new GPU clients (amd_fdinfo.h).
  static constexpr std::chrono::milliseconds k_process_rescan{5000};
  fs::path root_;
  std::shared_ptr<const std::vector<AmdSampleFiles>> files_;
  std::shared_ptr<AmdgpuProcessScanner> scanner_;
  DeadlineWorker worker_;
};

}  // namespace

std::unique_ptr<GpuSampler> make_amd_sysfs_sampler(const std::filesystem::path& root) {
  return std::make_unique<AmdSysfsSampler>(root);
}

}  // namespace kiln::gpu
