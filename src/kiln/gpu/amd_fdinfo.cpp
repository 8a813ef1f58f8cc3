#include "kiln/gpu/amd_fdinfo.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "kiln/core/text.h"

namespace kiln::gpu {
namespace {

namespace fs = std::filesystem;

using core::trim;

std::optional<std::uint64_t> parse_uint(std::string_view s) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return value;
}

// "2097152 KiB" → bytes; a number alone is bytes. nullopt for anything else or an overflow.
std::optional<std::uint64_t> parse_size(std::string_view s) {
  auto space = s.find_first_of(" \t");
  auto number = parse_uint(s.substr(0, space));
  if (!number) return std::nullopt;
  std::string_view unit = space == std::string_view::npos ? "" : trim(s.substr(space));
  std::uint64_t scale = unit.empty()    ? 1
                        : unit == "KiB" ? 1ULL << 10
                        : unit == "MiB" ? 1ULL << 20
                        : unit == "GiB" ? 1ULL << 30
                                        : 0;
  if (scale == 0 || *number > UINT64_MAX / scale) return std::nullopt;
  return *number * scale;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::optional<DrmClient> parse_drm_fdinfo(std::string_view text) {
  DrmClient client;
  bool is_drm = false;
  std::optional<std::uint64_t> legacy, resident, total;
  while (!text.empty()) {
    auto newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = trim(line.substr(0, colon));
    std::string_view value = trim(line.substr(colon + 1));
    if (key == "drm-driver") {
      client.driver = std::string(value);
      is_drm = !value.empty();
    } else if (key == "drm-pdev") {
      client.pdev = lower(value);
    } else if (key == "drm-client-id") {
      client.client_id = parse_uint(value);
    } else if (key == "drm-memory-vram") {
      legacy = parse_size(value);
    } else if (key == "drm-resident-vram") {
      resident = parse_size(value);
    } else if (key == "drm-total-vram") {
      total = parse_size(value);
    }
  }
  if (!is_drm) return std::nullopt;
  client.vram_bytes = resident ? resident : legacy ? legacy : total;
  return client;
}

namespace {

// The DRM fds of every process under <root>/proc: files that link to /dev/dri/.
template <class Visit>
void walk_drm_fds(const fs::path& root, Visit visit) {
  std::error_code ec;
  for (const auto& process : fs::directory_iterator(root / "proc", ec)) {
    auto pid = parse_uint(process.path().filename().string());
    if (!pid || *pid > INT32_MAX) continue;
    std::error_code fd_ec;
    for (const auto& fd : fs::directory_iterator(process.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      auto target = fs::read_symlink(fd.path(), link_ec);
      if (link_ec || !target.string().starts_with("/dev/dri/")) continue;
      visit(static_cast<int>(*pid), process.path() / "fdinfo" / fd.path().filename());
    }
  }
}

// Adds up the VRAM of amdgpu clients, each (device, pid, client) once.
class VramTally {
 public:
  // Whether the file described an amdgpu client (its memory is counted).
  bool add(int pid, const fs::path& fdinfo) {
    auto text = read_file(fdinfo);
    if (!text) return false;  // the process or the fd is gone
    auto client = parse_drm_fdinfo(*text);
    if (!client || client->driver != "amdgpu" || client->pdev.empty()) return false;
    if (!client->vram_bytes) return true;
    if (client->client_id && !seen_.emplace(client->pdev, pid, *client->client_id).second)
      return true;
    auto& sum = bytes_[{client->pdev, pid}];
    sum = *client->vram_bytes > UINT64_MAX - sum ? UINT64_MAX : sum + *client->vram_bytes;
    return true;
  }
  std::map<std::string, std::vector<GpuProcess>> result() const {
    std::map<std::string, std::vector<GpuProcess>> out;
    for (const auto& [key, sum] : bytes_)  // pid order within each device: the map's order
      out[key.first].push_back({key.second, sum >> 20});
    return out;
  }

 private:
  std::map<std::pair<std::string, int>, std::uint64_t> bytes_;
  std::set<std::tuple<std::string, int, std::uint64_t>> seen_;  // dup()ed fds count once
};

}  // namespace

std::map<std::string, std::vector<GpuProcess>> read_amdgpu_process_memory(const fs::path& root) {
  VramTally tally;
  walk_drm_fds(root, [&](int pid, const fs::path& fdinfo) { (void)tally.add(pid, fdinfo); });
  return tally.result();
}

std::map<std::string, std::vector<GpuProcess>> AmdgpuProcessScanner::read() {
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  VramTally tally;
  if (!last_walk_ || now - *last_walk_ >= rescan_) {
    last_walk_ = now;
    known_.clear();
    walk_drm_fds(root_, [&](int pid, const fs::path& fdinfo) {
      if (tally.add(pid, fdinfo)) known_.push_back({pid, fdinfo});
    });
  } else {
    for (const auto& fd : known_) (void)tally.add(fd.pid, fd.fdinfo);
  }
  return tally.result();
}

}  // namespace kiln::gpu
