#pragma once
// How every route of `kiln serve` answers (docs/serve.md "Errors"): a JSON body; an error is
// {"error": MESSAGE} with one HTTP status per ErrorCode, so the same failure gets the same
// status from every route. Ids in paths are read here too: a route never converts one itself.

#include <httplib.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"

namespace kiln::server {

// The status of an error value from below the server: not_found 404; invalid_input 409 (a
// request the state of the thing refuses: approve a trigger that is not waiting, cancel a
// finished one); unsupported 501; timeout 504; io_error, cancelled and internal 500. A request
// the route itself finds malformed is answered 400 with reply_error(res, 400, ...).
int http_status(ErrorCode code);

// `body` as JSON; text that is not UTF-8 (a job's output) is replaced, never an exception.
void reply(httplib::Response& res, int status, const nlohmann::ordered_json& body);
// {"error": message} with `status`.
void reply_error(httplib::Response& res, int status, std::string_view message);
// {"error": error.message} with http_status(error.code).
void reply_error(httplib::Response& res, const Error& error);

// The id in the route's group `group` (a (\d+) of the route's pattern). When the digits do not
// fit in 64 bits no such `what` exists: answers 404 "no WHAT DIGITS" and returns nullopt.
std::optional<std::int64_t> path_id(const httplib::Request& req, httplib::Response& res,
                                    std::string_view what, std::size_t group = 1);

}  // namespace kiln::server
