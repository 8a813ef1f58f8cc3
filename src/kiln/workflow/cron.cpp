#include "kiln/workflow/cron.h"

#include <array>
#include <cctype>
#include <charconv>
#include <vector>

namespace kiln::workflow {
namespace {

struct FieldSpec {
  const char* name;
  int low, high;
  const char* const* names;  // names[i] stands for low + i (nullptr: no names)
  int name_count;
};

constexpr const char* k_month_names[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                         "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr const char* k_day_names[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

// Day-of-week accepts 7 (Sunday) on input; it is folded onto 0 after parsing.
constexpr FieldSpec k_fields[] = {
    {"minute", 0, 59, nullptr, 0},         {"hour", 0, 23, nullptr, 0},
    {"day-of-month", 1, 31, nullptr, 0},   {"month", 1, 12, k_month_names, 12},
    {"day-of-week", 0, 7, k_day_names, 7},
};

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// Field errors are plain strings here; parse_cron wraps them with the whole expression.
using FieldResult = std::expected<int, std::string>;

FieldResult parse_value(std::string_view token, const FieldSpec& spec) {
  if (token.empty()) return std::unexpected(std::string("empty value"));
  if (std::isdigit(static_cast<unsigned char>(token.front()))) {
    int value = 0;
    auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc() || end != token.data() + token.size())
      return std::unexpected(fmt::format("'{}' is not a number", token));
    if (value < spec.low || value > spec.high)
      return std::unexpected(fmt::format("{} is out of range {}-{}", value, spec.low, spec.high));
    return value;
  }
  for (int i = 0; i < spec.name_count; ++i) {
    std::string_view name = spec.names[i];
    if (token.size() == name.size() &&
        std::equal(token.begin(), token.end(), name.begin(),
                   [](char a, char b) { return std::toupper(static_cast<unsigned char>(a)) == b; }))
      return spec.low + i;
  }
  if (spec.names)
    return std::unexpected(fmt::format("'{}' is not a number or a name ({}-{})", token,
                                       spec.names[0], spec.names[spec.name_count - 1]));
  return std::unexpected(fmt::format("'{}' is not a number", token));
}

// One field into `bits` (indexed by value); `star` tells whether it starts with '*'.
std::expected<void, std::string> parse_field(std::string_view field, const FieldSpec& spec,
                                             std::bitset<64>& bits, bool& star) {
  star = !field.empty() && field.front() == '*';
  for (std::string_view item : split(field, ',')) {
    if (item.empty()) return std::unexpected(std::string("empty list element"));
    std::string_view range = item;
    int step = 1;
    if (size_t slash = item.find('/'); slash != std::string_view::npos) {
      range = item.substr(0, slash);
      std::string_view step_text = item.substr(slash + 1);
      auto [end, ec] = std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
      if (step_text.empty() || ec != std::errc() || end != step_text.data() + step_text.size())
        return std::unexpected(fmt::format("'{}' is not a valid step", step_text));
      if (step < 1) return std::unexpected(fmt::format("step {} must be at least 1", step));
      if (step > spec.high) return std::unexpected(fmt::format("step {} is too large", step));
    }
    int first = spec.low, last = spec.high;
    if (range == "*") {
      if (spec.name_count == 7) last = 6;  // '*' in day-of-week is 0-6, not 0-7
    } else if (size_t dash = range.find('-'); dash != std::string_view::npos) {
      auto a = parse_value(range.substr(0, dash), spec);
      if (!a) return std::unexpected(a.error());
      auto b = parse_value(range.substr(dash + 1), spec);
      if (!b) return std::unexpected(b.error());
      if (*a > *b) return std::unexpected(fmt::format("range '{}' runs backwards", range));
      first = *a;
      last = *b;
    } else {
      auto a = parse_value(range, spec);
      if (!a) return std::unexpected(a.error());
      first = *a;
      // `A/S` means from A to the maximum every S; a plain `A` is just A.
      last = item.find('/') != std::string_view::npos ? spec.high : *a;
      if (item.find('/') != std::string_view::npos && spec.name_count == 7) last = 6;
    }
    for (int v = first; v <= last; v += step) bits.set(static_cast<size_t>(v));
  }
  return {};
}

template <size_t N>
std::bitset<N> narrow(const std::bitset<64>& wide) {
  std::bitset<N> out;
  for (size_t i = 0; i < N; ++i) out[i] = wide[i];
  return out;
}

}  // namespace

Result<CronSchedule> parse_cron(std::string_view text) {
  auto is_space = [](char c) { return c == ' ' || c == '\t'; };
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > start) fields.push_back(text.substr(start, i - start));
  }
  std::string trimmed;
  for (size_t f = 0; f < fields.size(); ++f) trimmed += (f ? " " : "") + std::string(fields[f]);
  if (fields.size() != 5)
    return fail(ErrorCode::invalid_input,
                "invalid cron '{}': expected 5 fields (minute hour day-of-month month "
                "day-of-week), found {}",
                text, fields.size());

  CronSchedule schedule;
  schedule.text = trimmed;
  std::array<std::bitset<64>, 5> bits;
  std::array<bool, 5> star{};
  for (size_t f = 0; f < 5; ++f) {
    auto parsed = parse_field(fields[f], k_fields[f], bits[f], star[f]);
    if (!parsed)
      return fail(ErrorCode::invalid_input, "invalid cron '{}': {} field '{}': {}", trimmed,
                  k_fields[f].name, fields[f], parsed.error());
  }
  if (bits[4][7]) bits[4].set(0);  // 7 is Sunday too
  schedule.minutes = narrow<60>(bits[0]);
  schedule.hours = narrow<24>(bits[1]);
  schedule.days_of_month = narrow<32>(bits[2]);
  schedule.months = narrow<13>(bits[3]);
  schedule.days_of_week = narrow<7>(bits[4]);
  schedule.day_of_month_star = star[2];
  schedule.day_of_week_star = star[4];
  return schedule;
}

namespace {

bool day_matches(const CronSchedule& s, int day_of_month, int day_of_week) {
  bool dom = s.days_of_month.test(static_cast<size_t>(day_of_month));
  bool dow = s.days_of_week.test(static_cast<size_t>(day_of_week));
  if (!s.day_of_month_star && !s.day_of_week_star) return dom || dow;
  return dom && dow;
}

}  // namespace

bool CronSchedule::matches(const std::tm& utc) const {
  if (utc.tm_min < 0 || utc.tm_min > 59 || utc.tm_hour < 0 || utc.tm_hour > 23 || utc.tm_mday < 1 ||
      utc.tm_mday > 31 || utc.tm_mon < 0 || utc.tm_mon > 11 || utc.tm_wday < 0 || utc.tm_wday > 6)
    return false;
  return minutes.test(static_cast<size_t>(utc.tm_min)) &&
         hours.test(static_cast<size_t>(utc.tm_hour)) &&
         months.test(static_cast<size_t>(utc.tm_mon + 1)) &&
         day_matches(*this, utc.tm_mday, utc.tm_wday);
}

std::optional<std::chrono::sys_seconds> CronSchedule::next_after(std::chrono::sys_seconds after,
                                                                 const TimeZone& zone) const {
  namespace chr = std::chrono;
  // Start at the minute after `after`, on the zone's wall clock, then walk day by day; a day that
  // matches is searched for its first hour and minute. Leap days can be up to eight years apart
  // (2096 -> 2104).
  const chr::sys_seconds start = chr::floor<chr::minutes>(after) + chr::minutes(1);
  const chr::local_seconds wall_start = chr::floor<chr::minutes>(zone.local(start));
  const chr::local_days day = chr::floor<chr::days>(wall_start);
  int first_minute = static_cast<int>(
      chr::duration_cast<chr::minutes>(wall_start - chr::local_seconds(day)).count());
  constexpr int k_search_days = 366 * 9;
  for (int d = 0; d < k_search_days; ++d, first_minute = 0) {
    const chr::local_days current = day + chr::days(d);
    const chr::year_month_day ymd(current);
    const chr::weekday wd(current);
    if (!months.test(static_cast<unsigned>(ymd.month())) ||
        !day_matches(*this, static_cast<int>(static_cast<unsigned>(ymd.day())),
                     static_cast<int>(wd.c_encoding())))
      continue;
    for (int h = first_minute / 60; h < 24; ++h) {
      if (!hours.test(static_cast<size_t>(h))) continue;
      const int first = h == first_minute / 60 ? first_minute % 60 : 0;
      for (int m = first; m < 60; ++m) {
        if (!minutes.test(static_cast<size_t>(m))) continue;
        const auto instant =
            zone.first_instant(chr::local_seconds(current) + chr::hours(h) + chr::minutes(m));
        // Skipped by the zone, or (in a repeated hour) first shown before `start`: not now.
        if (instant && *instant >= start) return *instant;
      }
    }
  }
  return std::nullopt;
}

}  // namespace kiln::workflow
