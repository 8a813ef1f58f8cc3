#include "kiln/server/query.h"

#include <charconv>
#include <iterator>

namespace kiln::server {
namespace {

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::int64_t> parse_id(std::string_view digits) {
  auto id = parse_integer(digits);
  if (!id || *id < 0) return std::nullopt;
  return id;
}

Status read_integers(const QueryParams& params, std::initializer_list<IntegerParam> wanted) {
  for (const auto& param : wanted) {
    const std::string name(param.name);
    auto [first, last] = params.equal_range(name);
    if (first == last) continue;
    if (std::next(first) != last)
      return fail(ErrorCode::invalid_input, "query parameter '{}' is given more than once", name);
    auto value = parse_integer(first->second);
    if (!value)
      return fail(ErrorCode::invalid_input, "query parameter '{}' must be an integer, got '{}'",
                  name, first->second);
    if (*value < param.min || *value > param.max)
      return fail(ErrorCode::invalid_input, "query parameter '{}' must be in [{}, {}], got {}",
                  name, param.min, param.max, *value);
    *param.value = *value;
  }
  return {};
}

}  // namespace kiln::server
