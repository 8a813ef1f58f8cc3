#pragma once
// on.schedule[].cron: POSIX five-field cron as GitHub accepts it, read in UTC or in the line's
// `timezone:` (an IANA zone; see next_after for daylight-saving days).
//   minute (0-59)  hour (0-23)  day-of-month (1-31)  month (1-12 or JAN-DEC)
//   day-of-week (0-6 or SUN-SAT; 7 is also accepted as Sunday, as most crons do)
// Each field is `*` or a comma list of `N`, `A-B`, `*/S`, `A-B/S` or `A/S` (A up to the field's
// maximum, every S). Names are case-insensitive. The `@daily`-style shorthands are not accepted
// (GitHub rejects them). As in POSIX and Vixie cron, when both day fields are restricted (neither
// starts with `*`), a day matches if EITHER matches; otherwise both must.

#include <bitset>
#include <chrono>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/core/result.h"
#include "kiln/workflow/timezone.h"

namespace kiln::workflow {

struct CronSchedule {
  std::string text;               // as written (trimmed)
  std::bitset<60> minutes;        // bit m: minute m
  std::bitset<24> hours;          // bit h: hour h
  std::bitset<32> days_of_month;  // bit d: day d (1-31; bit 0 unused)
  std::bitset<13> months;         // bit m: month m (1-12; bit 0 unused)
  std::bitset<7> days_of_week;    // bit w: 0 = Sunday ... 6 = Saturday
  bool day_of_month_star = true;  // the field starts with '*' (see the OR rule above)
  bool day_of_week_star = true;

  // Whether the schedule fires in the minute described by `utc` (tm_min, tm_hour, tm_mday,
  // tm_mon 0-based, tm_wday are read; seconds are ignored).
  bool matches(const std::tm& utc) const;
  // The first minute strictly after `after` at which the schedule fires, the fields read as the
  // wall clock of `zone`; nullopt if it never fires (e.g. `0 0 30 2 *`). When clocks go forward,
  // a wall time the zone skips does not fire that day; when they go back, a wall time of the
  // repeated hour fires once, at its first occurrence.
  std::optional<std::chrono::sys_seconds> next_after(std::chrono::sys_seconds after,
                                                     const TimeZone& zone = TimeZone()) const;
};

// Parses and validates. Errors name the field and the bad part:
//   invalid cron '61 * * * *': minute field '61': 61 is out of range 0-59
Result<CronSchedule> parse_cron(std::string_view text);

}  // namespace kiln::workflow
