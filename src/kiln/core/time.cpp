#include "kiln/core/time.h"

#include <array>
#include <cctype>
#include <charconv>
#include <span>

#include <fmt/format.h>

namespace kiln::core {

namespace {

// A unit and its length in milliseconds; the longer spelling of two with one prefix first.
struct Unit {
  std::string_view name;
  double ms;
};
constexpr std::array k_kiln_units{Unit{"ms", 1}, Unit{"s", 1e3}, Unit{"m", 6e4}, Unit{"h", 3.6e6},
                                  Unit{"d", 8.64e7}};
constexpr std::array k_engine_units{Unit{"ns", 1e-6}, Unit{"us", 1e-3}, Unit{"\xc2\xb5s", 1e-3},
                                    Unit{"ms", 1},    Unit{"s", 1e3},   Unit{"m", 6e4},
                                    Unit{"h", 3.6e6}};
constexpr double k_longest_ms = 1e12;  // about 31 years

}  // namespace

Result<std::chrono::milliseconds> parse_duration(std::string_view text, DurationSyntax syntax) {
  const bool engine = syntax == DurationSyntax::engine;
  auto bad = [&] {
    return fail(ErrorCode::invalid_input, "'{}' is not a duration (e.g. {})", text,
                engine ? "500ms, 30s, 1m30s" : "500ms, 10s, 2m, 7d");
  };
  if (engine && text == "0") return std::chrono::milliseconds(0);
  if (text.empty()) return bad();
  double total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    double number = 0;
    auto [end, ec] = std::from_chars(text.data() + start, text.data() + i, number);
    if (start == i || ec != std::errc() || end != text.data() + i) return bad();
    const std::size_t unit_start = i;
    while (i < text.size() && !std::isdigit(static_cast<unsigned char>(text[i])) && text[i] != '.')
      ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    const Unit* found = nullptr;
    for (const Unit& known :
         engine ? std::span<const Unit>(k_engine_units) : std::span<const Unit>(k_kiln_units))
      if (known.name == unit) found = &known;
    if (found == nullptr) return bad();
    total += number * found->ms;
    if (!(total <= k_longest_ms))
      return fail(ErrorCode::invalid_input, "'{}' is too long a duration", text);
  }
  return std::chrono::milliseconds(static_cast<long long>(total));
}

std::string format_duration(std::chrono::milliseconds duration) {
  const auto ms = duration.count();
  if (ms < 0) return "-";
  if (ms < 1000) return fmt::format("{}ms", ms);
  if (ms < 60'000) return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000);
  const auto seconds = ms / 1000;
  if (seconds < 3600) return fmt::format("{}m{:02}s", seconds / 60, seconds % 60);
  return fmt::format("{}h{:02}m", seconds / 3600, (seconds % 3600) / 60);
}

}  // namespace kiln::core
