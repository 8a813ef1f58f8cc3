#include "kiln/hipcheck/rocm.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "kiln/hipcheck/api_table.h"

namespace kiln::hipcheck {

std::string RocmVersion::to_string() const { return fmt::format("{}.{}", major, minor); }

namespace {

// A decimal component: digits only, no sign, at most 3 digits.
std::optional<int> component(std::string_view text) {
  if (text.empty() || text.size() > 3 || text[0] < '0' || text[0] > '9') return std::nullopt;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<RocmVersion> parse_rocm_version(std::string_view text) {
  std::size_t dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(dot + 1);
  std::size_t dot2 = rest.find('.');
  auto major = component(text.substr(0, dot));
  auto minor = component(rest.substr(0, dot2));
  if (!major || !minor) return std::nullopt;
  if (dot2 != std::string_view::npos && !component(rest.substr(dot2 + 1))) return std::nullopt;
  return RocmVersion{*major, *minor};
}

RocmVersion newest_known_rocm() {
  static const RocmVersion newest = [] {
    RocmVersion v{0, 0};
    auto scan = [&v](std::span<const ApiEntry> rows) {
      for (const ApiEntry& e : rows)
        if (auto r = parse_rocm_version(e.hip_added)) v = std::max(v, *r);
    };
    scan(ApiTable::instance().entries());
    scan(ApiTable::kiln().entries());
    return v;
  }();
  return newest;
}

namespace {

// parse_rocm_version of every table row's hip_added, done once: available_in is asked for every
// CUDA name a scan finds, and parsing the version each time showed in the profile of a dense
// tree. Nothing for a row that is not in the tables (one a test made).
const std::optional<RocmVersion>* parsed_hip_added(const ApiEntry& entry) {
  using Versions = std::vector<std::optional<RocmVersion>>;
  auto parse_all = [](std::span<const ApiEntry> rows) {
    Versions v;
    v.reserve(rows.size());
    for (const ApiEntry& e : rows) v.push_back(parse_rocm_version(e.hip_added));
    return v;
  };
  static const Versions generated = parse_all({k_api_entries, k_api_entry_count});
  static const Versions kiln = parse_all({k_kiln_entries, k_kiln_entry_count});
  auto in = [&entry](const ApiEntry* rows, std::size_t count) {
    std::less<const ApiEntry*> before;
    return !before(&entry, rows) && before(&entry, rows + count);
  };
  if (in(k_api_entries, k_api_entry_count)) return &generated[&entry - k_api_entries];
  if (in(k_kiln_entries, k_kiln_entry_count)) return &kiln[&entry - k_kiln_entries];
  return nullptr;
}

}  // namespace

bool available_in(const ApiEntry& entry, RocmVersion rocm) {
  if (*entry.hip_name == '\0') return false;
  const std::optional<RocmVersion>* known = parsed_hip_added(entry);
  std::optional<RocmVersion> added = known ? *known : parse_rocm_version(entry.hip_added);
  return !added || *added <= rocm;
}

RocmChoice choose_rocm_version(std::string_view text) {
  auto version = parse_rocm_version(text);
  if (!version)
    return {std::nullopt, fmt::format("'{}' is not a ROCm version (expected X.Y, e.g. 6.2)", text)};
  RocmVersion newest = newest_known_rocm();
  if (*version > newest)
    return {std::nullopt,
            fmt::format("ROCm {} is newer than Kiln knows (its tables go up to ROCm {}); use "
                        "--rocm-version {} or update third_party/hipify and kiln_table.cpp",
                        version->to_string(), newest.to_string(), newest.to_string())};
  return {version, {}};
}

}  // namespace kiln::hipcheck
