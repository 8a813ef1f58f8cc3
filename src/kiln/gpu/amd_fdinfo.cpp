#include "kiln/gpu/amd_fdinfo.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

namespace kiln::gpu {
namespace {

namespace fs = std::filesystem;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

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
  std::uint64_t scale = unit.empty() ? 1 : unit == "KiB" ? 1ULL << 10 : unit == "MiB" ? 1ULL << 20
                                       : unit == "GiB"   ? 1ULL << 30 : 0;
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

std::map<std::string, std::vector<GpuProcess>> read_amdgpu_process_memory(const fs::path& root) {
  // (pdev, pid) → bytes; clients already counted, so that dup()ed fds count once.
  std::map<std::pair<std::string, int>, std::uint64_t> bytes;
  std::set<std::tuple<std::string, int, std::uint64_t>> seen;
  std::error_code ec;
  for (const auto& process : fs::directory_iterator(root / "proc", ec)) {
    auto pid = parse_uint(process.path().filename().string());
    if (!pid || *pid > INT32_MAX) continue;
    std::error_code fd_ec;
    for (const auto& fd : fs::directory_iterator(process.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      auto target = fs::read_symlink(fd.path(), link_ec);
      if (link_ec || !target.string().starts_with("/dev/dri/")) continue;
      auto text = read_file(process.path() / "fdinfo" / fd.path().filename());
      if (!text) continue;  // the process or the fd is gone
      auto client = parse_drm_fdinfo(*text);
      if (!client || client->driver != "amdgpu" || client->pdev.empty() || !client->vram_bytes)
        continue;
      int p = static_cast<int>(*pid);
      if (client->client_id && !seen.emplace(client->pdev, p, *client->client_id).second) continue;
      auto& sum = bytes[{client->pdev, p}];
      sum = *client->vram_bytes > UINT64_MAX - sum ? UINT64_MAX : sum + *client->vram_bytes;
    }
  }
  std::map<std::string, std::vector<GpuProcess>> out;
  for (const auto& [key, sum] : bytes)  // pid order within each device: the map's order
    out[key.first].push_back({key.second, sum >> 20});
  return out;
}

}  // namespace kiln::gpu
