#include "kiln/workflow/timezone.h"

#include <cstdlib>
#include <fstream>

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

}  // namespace kiln::workflow
