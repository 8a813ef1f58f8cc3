#pragma once
// A workflow's clock triggers (`on.schedule`), ready to compute fire times: each cron line
// parsed, with the zone it is read in. Used by `kiln serve`'s schedule clock and by
// `kiln run --list`.

#include <chrono>
#include <string>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/workflow/cron.h"
#include "kiln/workflow/model.h"
#include "kiln/workflow/timezone.h"

namespace kiln::workflow {

struct Schedule {
  std::size_t index = 0;  // its place in on.schedule (0-based)
  std::string cron;       // as written: github.event.schedule when it fires
  CronSchedule parsed;
  TimeZone zone;  // UTC when the line has no `timezone:`
  SourceLocation where;

  // The zone's name as shown: "UTC" or the IANA name.
  const std::string& zone_name() const { return zone.name(); }
};

// The schedule lines of a loaded workflow, in file order. A line whose zone cannot be read
// here (a host without a time zone database; the loader only warned) is an error, located.
Result<std::vector<Schedule>> schedules_of(const Workflow& workflow);

// The next `count` fire times of `schedule` strictly after `after` (fewer when it stops firing).
std::vector<std::chrono::sys_seconds> next_fire_times(const Schedule& schedule,
                                                      std::chrono::sys_seconds after,
                                                      std::size_t count);

}  // namespace kiln::workflow
