#pragma once
// What the API reads from a request's address: the numeric id in a path (/api/runs/ID) and the
// integer query parameters (?limit=50&after=120). A value that is not such a number is the
// client's error, said with the parameter's name (HTTP 400) — never an exception, a wrapped
// cast or a silent default.

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/core/result.h"

namespace kiln::server {

// The digits of an id in a path (the routes' (\d+)); nullopt when they do not fit: no such
// thing exists, so the caller answers 404.
std::optional<std::int64_t> parse_id(std::string_view digits);

// The query parameters as cpp-httplib gives them (httplib::Params): a name may repeat.
using QueryParams = std::multimap<std::string, std::string>;

// One integer parameter: `value` holds the default and gets the given value when present.
struct IntegerParam {
  std::string_view name;
  std::int64_t* value;
  std::int64_t min = 0;
  std::int64_t max = std::numeric_limits<std::int64_t>::max();
};

// Reads each wanted parameter that is present: a decimal integer in [min, max], given once.
// The first bad one is an invalid_input error naming it and the value.
Status read_integers(const QueryParams& params, std::initializer_list<IntegerParam> wanted);

}  // namespace kiln::server
