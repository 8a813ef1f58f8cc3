#include "kiln/workflow/schedule.h"

namespace kiln::workflow {

Result<std::vector<Schedule>> schedules_of(const Workflow& workflow) {
  std::vector<Schedule> out;
  for (const Trigger& trigger : workflow.on) {
    if (trigger.event != "schedule") continue;
    for (std::size_t i = 0; i < trigger.cron.size(); ++i) {
      Schedule schedule;
      schedule.index = i;
      schedule.cron = trigger.cron[i].value;
      schedule.where = trigger.cron[i].where;
      auto parsed = parse_cron(schedule.cron);
      if (!parsed)
        return make_error(ErrorCode::invalid_input, parsed.error().message, schedule.where);
      schedule.parsed = std::move(*parsed);
      if (i < trigger.timezones.size() && trigger.timezones[i]) {
        const Text& name = *trigger.timezones[i];
        auto zone = TimeZone::load(name.value);
        if (!zone) return make_error(zone.error().code, zone.error().message, name.where);
        schedule.zone = std::move(*zone);
      }
      out.push_back(std::move(schedule));
    }
  }
  return out;
}

std::vector<std::chrono::sys_seconds> next_fire_times(const Schedule& schedule,
                                                      std::chrono::sys_seconds after,
                                                      std::size_t count) {
  std::vector<std::chrono::sys_seconds> out;
  while (out.size() < count) {
    auto next = schedule.parsed.next_after(after, schedule.zone);
    if (!next) break;
    out.push_back(*next);
    after = *next;
  }
  return out;
}

}  // namespace kiln::workflow
