#pragma once
// IANA time zone names (`on.schedule[].timezone: Europe/Berlin`), checked against the host's
// time zone database (TZDIR, else /usr/share/zoneinfo): the name must be a zone file there.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <cctz/time_zone.h>

#include "kiln/core/result.h"

namespace kiln::workflow {

// The host's time zone database directory.
std::filesystem::path timezone_directory();

// An invalid_input error for a name that is not an IANA zone of the database ("unknown time
// zone 'Mars/Olympus' ..."); an io_error when the host has no database at all.
Status check_timezone(std::string_view name);

// A zone of the database, for reading cron lines in local time (libcctz: the host's zone files,
// daylight-saving transitions included). The default is UTC.
class TimeZone {
 public:
  TimeZone();
  // The zone `name` (checked with check_timezone first, so the same names are refused).
  static Result<TimeZone> load(std::string_view name);

  const std::string& name() const { return name_; }
  // The wall-clock time at `instant` in this zone.
  std::chrono::local_seconds local(std::chrono::sys_seconds instant) const;
  // The first instant at which the wall clock shows `wall`: in the hour repeated when clocks go
  // back, the earlier one; nullopt for a wall time the zone skips when clocks go forward.
  std::optional<std::chrono::sys_seconds> first_instant(std::chrono::local_seconds wall) const;

 private:
  cctz::time_zone zone_;
  std::string name_ = "UTC";
};

}  // namespace kiln::workflow
