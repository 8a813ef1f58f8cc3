// The API's inputs from a request's address (server/query.h) on arbitrary bytes: the input is a
// query string (name=value pairs split at '&'; the first line is also a path id). Each route's
// parameters read as integers in their range or give an invalid_input error naming the
// parameter; an id is a non-negative number or none. Never a crash or an escaped exception.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kiln/server/query.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::server;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto id = parse_id(input.substr(0, input.find('\n')))) check(*id >= 0);

  QueryParams params;
  std::size_t start = 0;
  while (start <= input.size()) {
    auto end = input.find('&', start);
    if (end == std::string_view::npos) end = input.size();
    auto pair = input.substr(start, end - start);
    auto eq = pair.find('=');
    params.emplace(std::string(pair.substr(0, eq)),
                   eq == std::string_view::npos ? std::string() : std::string(pair.substr(eq + 1)));
    start = end + 1;
  }
  std::int64_t limit = 50, before = 0, after = 0, job = 0, slowest = 10;
  auto read = read_integers(params, {{"limit", &limit, 0, 1'000'000},
                                     {"before", &before},
                                     {"after", &after},
                                     {"job", &job},
                                     {"slowest", &slowest, 0, 10000}});
  if (!read) {
    check(read.error().code == kiln::ErrorCode::invalid_input);
    check(read.error().message.find("query parameter '") == 0);
    return 0;
  }
  check(limit >= 0 && limit <= 1'000'000 && before >= 0 && after >= 0 && job >= 0);
  check(slowest >= 0 && slowest <= 10000);
  return 0;
}
