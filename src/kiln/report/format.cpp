// format_number and format_value (report.h): the one way reports, the dashboard API and the CLI
// print a measured number for a reader.

#include <cmath>

#include <fmt/format.h>

#include "kiln/report/report.h"

namespace kiln::report {

std::string format_number(double value, std::string_view unit) {
  std::string text;
  if (!std::isfinite(value)) {
    text = std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
  } else if (value != 0 && std::fabs(value) < 0.001) {
    text = fmt::format("{:.3g}", value);  // 3 significant digits where 3 decimals show none
  } else {
    text = fmt::format("{:.3f}", value);
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    if (text == "-0") text = "0";
  }
  if (unit.empty()) return text;
  return fmt::format("{}{}{}", text, unit.starts_with('/') || unit == "%" ? "" : " ", unit);
}

std::string format_value(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  if (value.is_number_float()) return format_number(value.get<double>());
  return value.dump(-1, ' ', false,
                    Json::error_handler_t::replace);  // a job's bad UTF-8 is replaced
}

}  // namespace kiln::report
