#include "kiln/workflow/timezone.h"

#include <cstdlib>
#include <fstream>

#include <cctz/civil_time.h>

namespace kiln::workflow {

namespace fs = std::filesystem;

fs::path timezone_directory() {
  const char* dir = std::getenv("TZDIR");
  return dir && *dir ? fs::path(dir) : fs::path("/usr/share/zoneinfo");
}

Status check_timezone(std::string_view name) {
  auto unknown = [&] {
    return fail(ErrorCode::invalid_input,
                "unknown time zone '{}' (an IANA name such as UTC, Europe/Berlin or "
                "America/New_York)",
                name);
  };
  // Names are letters, digits and `_+-` in parts separated by `/`: nothing can leave the database.
  if (name.empty() || name.front() == '/' || name.back() == '/') return unknown();
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '+' && c != '-' &&
        c != '/')
      return unknown();
  for (const auto& part : fs::path(std::string(name)))
    if (part == "." || part == ".." || part.empty()) return unknown();
  fs::path directory = timezone_directory();
  std::error_code ec;
  if (!fs::is_directory(directory, ec))
    return fail(ErrorCode::io_error,
                "cannot check time zone '{}': this host has no time zone database at {} (install "
                "tzdata, or set TZDIR)",
                name, directory.string());
  // A zone file starts with "TZif" (RFC 8536); the database's other files (zone1970.tab, ...)
  // do not.
  std::ifstream in(directory / std::string(name), std::ios::binary);
  char magic[4] = {};
  if (!in.read(magic, 4) || std::string_view(magic, 4) != "TZif") return unknown();
  return {};
}

TimeZone::TimeZone() : zone_(cctz::utc_time_zone()) {}

Result<TimeZone> TimeZone::load(std::string_view name) {
  KILN_TRY_VOID(check_timezone(name));
  TimeZone zone;
  if (!cctz::load_time_zone(std::string(name), &zone.zone_))
    return fail(ErrorCode::io_error, "cannot read time zone '{}' from {}", name,
                timezone_directory().string());
  zone.name_ = std::string(name);
  return zone;
}

std::chrono::local_seconds TimeZone::local(std::chrono::sys_seconds instant) const {
  const cctz::civil_second wall = cctz::convert(instant, zone_);
  return std::chrono::local_seconds(std::chrono::seconds(wall - cctz::civil_second(1970)));
}

std::optional<std::chrono::sys_seconds> TimeZone::first_instant(
    std::chrono::local_seconds wall) const {
  const cctz::civil_second civil = cctz::civil_second(1970) + wall.time_since_epoch().count();
  const auto found = zone_.lookup(civil);
  if (found.kind == cctz::time_zone::civil_lookup::SKIPPED) return std::nullopt;
  return found.pre;  // UNIQUE: pre == post; REPEATED: pre is the earlier instant
}

}  // namespace kiln::workflow
