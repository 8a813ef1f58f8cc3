#include "kiln/workflow/cron.h"

#include <string>

#include <gtest/gtest.h>

namespace kiln::workflow {
namespace {

namespace chr = std::chrono;

chr::sys_seconds at(int y, unsigned mo, unsigned d, int h, int mi) {
  return chr::sys_days(chr::year(y) / chr::month(mo) / chr::day(d)) + chr::hours(h) +
         chr::minutes(mi);
}

std::tm to_tm(chr::sys_seconds t) {
  std::time_t raw = chr::system_clock::to_time_t(t);
  std::tm out{};
  gmtime_r(&raw, &out);
  return out;
}

CronSchedule parse_ok(std::string_view text) {
  auto schedule = parse_cron(text);
  EXPECT_TRUE(schedule) << text << ": " << (schedule ? "" : schedule.error().message);
  return schedule ? *schedule : CronSchedule{};
}

TEST(Cron, DocumentedExamples) {
  // '30 5,17 * * *': every day at 5:30 and 17:30 UTC.
  auto twice = parse_ok("30 5,17 * * *");
  EXPECT_EQ(twice.minutes.count(), 1u);
  EXPECT_TRUE(twice.minutes.test(30));
  EXPECT_EQ(twice.hours.count(), 2u);
  EXPECT_TRUE(twice.hours.test(5) && twice.hours.test(17));
  EXPECT_EQ(twice.days_of_month.count(), 31u);
  EXPECT_EQ(twice.days_of_week.count(), 7u);

  // '2,10 4,5 * * *', '0 4-6 * * *', '20/15 * * * *' (20, 35, 50).
  auto list = parse_ok("2,10 4,5 * * *");
  EXPECT_TRUE(list.minutes.test(2) && list.minutes.test(10) && list.minutes.count() == 2);
  auto range = parse_ok("0 4-6 * * *");
  EXPECT_EQ(range.hours.count(), 3u);
  EXPECT_TRUE(range.hours.test(4) && range.hours.test(6));
  auto from = parse_ok("20/15 * * * *");
  EXPECT_EQ(from.minutes.count(), 3u);
  EXPECT_TRUE(from.minutes.test(20) && from.minutes.test(35) && from.minutes.test(50));
}

TEST(Cron, StepsRangesAndNames) {
  auto every15 = parse_ok("*/15 * * * *");
  EXPECT_EQ(every15.minutes.count(), 4u);
  EXPECT_TRUE(every15.minutes.test(0) && every15.minutes.test(45));
  auto odd = parse_ok("0 1-5/2 * * *");
  EXPECT_EQ(odd.hours.count(), 3u);
  EXPECT_TRUE(odd.hours.test(1) && odd.hours.test(3) && odd.hours.test(5));
  auto names = parse_ok("0 0 * jan,Mar-may mon-FRI");
  EXPECT_EQ(names.months.count(), 4u);
  EXPECT_TRUE(names.months.test(1) && names.months.test(3) && names.months.test(5));
  EXPECT_FALSE(names.months.test(2));
  EXPECT_EQ(names.days_of_week.count(), 5u);
  EXPECT_FALSE(names.days_of_week.test(0));
  EXPECT_FALSE(names.days_of_week.test(6));
  auto sunday7 = parse_ok("0 0 * * 7");
  EXPECT_TRUE(sunday7.days_of_week.test(0));
  EXPECT_EQ(sunday7.days_of_week.count(), 1u);
  auto spaced = parse_ok("  0\t0   1 * *  ");
  EXPECT_EQ(spaced.text, "0 0 1 * *");
}

TEST(Cron, ErrorsNameTheField) {
  struct Bad {
    const char* text;
    const char* part;
  };
  const Bad bad[] = {
      {"61 * * * *", "minute field '61': 61 is out of range 0-59"},
      {"* 24 * * *", "hour field '24'"},
      {"* * 0 * *", "day-of-month field '0'"},
      {"* * 32 * *", "day-of-month field '32'"},
      {"* * * 13 *", "month field '13'"},
      {"* * * FOO *", "month field 'FOO': 'FOO' is not a number or a name (JAN-DEC)"},
      {"* * * * 8", "day-of-week field '8'"},
      {"* * * * MONDAY", "day-of-week field 'MONDAY'"},
      {"*/0 * * * *", "step 0 must be at least 1"},
      {"*/x * * * *", "'x' is not a valid step"},
      {"5-1 * * * *", "runs backwards"},
      {"1,,2 * * * *", "empty list element"},
      {"* * * *", "expected 5 fields"},
      {"* * * * * *", "found 6"},
      {"@daily", "expected 5 fields"},
      {"", "found 0"},
      {"1.5 * * * *", "'1.5' is not a number"},
      {"-1 * * * *", "minute field '-1'"},
  };
  for (const Bad& b : bad) {
    auto schedule = parse_cron(b.text);
    ASSERT_FALSE(schedule) << b.text;
    EXPECT_EQ(schedule.error().code, ErrorCode::invalid_input);
    EXPECT_NE(schedule.error().message.find(b.part), std::string::npos)
        << b.text << " -> " << schedule.error().message;
  }
}

TEST(Cron, MatchesMinute) {
  auto schedule = parse_ok("30 5 * * 1,3");                      // 5:30 on Mondays and Wednesdays
  EXPECT_TRUE(schedule.matches(to_tm(at(2024, 1, 1, 5, 30))));   // a Monday
  EXPECT_FALSE(schedule.matches(to_tm(at(2024, 1, 2, 5, 30))));  // Tuesday
  EXPECT_TRUE(schedule.matches(to_tm(at(2024, 1, 3, 5, 30))));   // Wednesday
  EXPECT_FALSE(schedule.matches(to_tm(at(2024, 1, 1, 5, 31))));
  EXPECT_FALSE(schedule.matches(to_tm(at(2024, 1, 1, 6, 30))));
}

TEST(Cron, BothDayFieldsRestrictedMeansEither) {
  // The 13th of the month OR any Friday.
  auto either = parse_ok("0 0 13 * 5");
  EXPECT_TRUE(either.matches(to_tm(at(2024, 1, 13, 0, 0))));  // Saturday the 13th
  EXPECT_TRUE(either.matches(to_tm(at(2024, 1, 5, 0, 0))));   // Friday the 5th
  EXPECT_FALSE(either.matches(to_tm(at(2024, 1, 6, 0, 0))));  // Saturday the 6th
  // With one day field '*', only the other one restricts.
  auto only_dom = parse_ok("0 0 13 * *");
  EXPECT_FALSE(only_dom.matches(to_tm(at(2024, 1, 5, 0, 0))));
  auto starred_step = parse_ok("0 0 13 * */2");  // starts with '*': both must match
  EXPECT_FALSE(starred_step.matches(to_tm(at(2024, 3, 13, 0, 0))));  // Wednesday the 13th
  EXPECT_TRUE(starred_step.matches(to_tm(at(2024, 2, 13, 0, 0))));   // Tuesday the 13th
}

TEST(Cron, NextAfter) {
  auto daily = parse_ok("30 5,17 * * *");
  EXPECT_EQ(daily.next_after(at(2024, 3, 1, 0, 0)), at(2024, 3, 1, 5, 30));
  EXPECT_EQ(daily.next_after(at(2024, 3, 1, 5, 30)), at(2024, 3, 1, 17, 30));  // strictly after
  EXPECT_EQ(daily.next_after(at(2024, 3, 1, 5, 29) + chr::seconds(59)), at(2024, 3, 1, 5, 30));
  EXPECT_EQ(daily.next_after(at(2024, 12, 31, 18, 0)), at(2025, 1, 1, 5, 30));

  auto every15 = parse_ok("*/15 * * * *");
  EXPECT_EQ(every15.next_after(at(2024, 3, 1, 23, 50)), at(2024, 3, 2, 0, 0));

  auto leap = parse_ok("0 12 29 2 *");
  EXPECT_EQ(leap.next_after(at(2024, 3, 1, 0, 0)), at(2028, 2, 29, 12, 0));
  EXPECT_EQ(leap.next_after(at(2096, 3, 1, 0, 0)), at(2104, 2, 29, 12, 0));  // 2100 is not leap

  auto never = parse_ok("0 0 30 2 *");
  EXPECT_FALSE(never.next_after(at(2024, 1, 1, 0, 0)).has_value());

  auto weekdays = parse_ok("0 9 * * MON-FRI");
  EXPECT_EQ(weekdays.next_after(at(2024, 1, 5, 10, 0)), at(2024, 1, 8, 9, 0));  // Fri → Mon
}

TEST(Cron, NextAfterAgreesWithMatches) {
  // Walk a few weeks minute by minute and compare the two answers.
  auto schedule = parse_ok("*/7 3-4,22 */3 * SUN,wed");
  chr::sys_seconds t = at(2024, 2, 20, 0, 0);
  auto expected_next = schedule.next_after(t);
  ASSERT_TRUE(expected_next);
  int found = 0;
  for (int i = 1; i < 60 * 24 * 21; ++i) {
    chr::sys_seconds minute = t + chr::minutes(i);
    if (!schedule.matches(to_tm(minute))) continue;
    EXPECT_EQ(*expected_next, minute);
    expected_next = schedule.next_after(minute);
    ASSERT_TRUE(expected_next);
    ++found;
  }
  EXPECT_GT(found, 10);
}

TimeZone zone_or_skip(const char* name, bool& ok) {
  auto zone = TimeZone::load(name);
  ok = static_cast<bool>(zone);
  return zone ? *zone : TimeZone();
}

TEST(Cron, FieldsAreReadInTheLinesTimeZone) {
  bool ok = false;
  TimeZone berlin = zone_or_skip("Europe/Berlin", ok);
  if (!ok) GTEST_SKIP() << "this host has no time zone database";
  auto daily = parse_ok("30 9 * * *");
  // 09:30 in Berlin is 08:30 UTC in winter (CET) and 07:30 UTC in summer (CEST).
  EXPECT_EQ(daily.next_after(at(2026, 1, 15, 0, 0), berlin), at(2026, 1, 15, 8, 30));
  EXPECT_EQ(daily.next_after(at(2026, 7, 1, 0, 0), berlin), at(2026, 7, 1, 7, 30));
  EXPECT_EQ(daily.next_after(at(2026, 7, 1, 7, 30), berlin), at(2026, 7, 2, 7, 30));
  // The day is the zone's: 00:15 on a Monday in Tokyo is still Sunday in UTC.
  TimeZone tokyo = zone_or_skip("Asia/Tokyo", ok);
  auto monday = parse_ok("15 0 * * 1");
  EXPECT_EQ(monday.next_after(at(2026, 11, 29, 0, 0), tokyo), at(2026, 11, 29, 15, 15));
  // The default zone is UTC.
  EXPECT_EQ(daily.next_after(at(2026, 7, 1, 0, 0)), at(2026, 7, 1, 9, 30));
}

TEST(Cron, DaylightSavingDays) {
  bool ok = false;
  TimeZone new_york = zone_or_skip("America/New_York", ok);
  if (!ok) GTEST_SKIP() << "this host has no time zone database";
  // 2026-03-08: clocks go from 02:00 to 03:00; 02:30 does not exist that day, so the next
  // 02:30 is the next day's (06:30 UTC, EDT).
  auto half_past_two = parse_ok("30 2 * * *");
  EXPECT_EQ(half_past_two.next_after(at(2026, 3, 8, 0, 0), new_york), at(2026, 3, 9, 6, 30));
  // 2026-11-01: clocks go from 02:00 back to 01:00; 01:30 is shown twice (05:30 and 06:30 UTC)
  // and fires once, at the first.
  auto half_past_one = parse_ok("30 1 * * *");
  EXPECT_EQ(half_past_one.next_after(at(2026, 11, 1, 0, 0), new_york), at(2026, 11, 1, 5, 30));
  EXPECT_EQ(half_past_one.next_after(at(2026, 11, 1, 5, 30), new_york), at(2026, 11, 2, 6, 30));
  // Every 15 minutes keeps firing through the repeated hour's first pass, then not again.
  auto quarter = parse_ok("*/15 1 * * *");
  EXPECT_EQ(quarter.next_after(at(2026, 11, 1, 5, 45), new_york), at(2026, 11, 2, 6, 0));
}

}  // namespace
}  // namespace kiln::workflow
