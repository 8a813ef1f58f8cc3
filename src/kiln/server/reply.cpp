#include "kiln/server/reply.h"

#include <fmt/core.h>

#include "kiln/server/query.h"

namespace kiln::server {

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::not_found:
      return 404;
    case ErrorCode::invalid_input:
      return 409;
    case ErrorCode::unsupported:
      return 501;
    case ErrorCode::timeout:
      return 504;
    case ErrorCode::io_error:
    case ErrorCode::cancelled:
    case ErrorCode::internal:
      return 500;
  }
  return 500;
}

void reply(httplib::Response& res, int status, const nlohmann::ordered_json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace),
                  "application/json");
}

void reply_error(httplib::Response& res, int status, std::string_view message) {
  reply(res, status, {{"error", message}});
}

void reply_error(httplib::Response& res, const Error& error) {
  reply_error(res, http_status(error.code), error.message);
}

std::optional<std::int64_t> path_id(const httplib::Request& req, httplib::Response& res,
                                    std::string_view what, std::size_t group) {
  const std::string digits = group < req.matches.size() ? req.matches[group].str() : "";
  auto id = parse_id(digits);
  if (!id) reply_error(res, 404, fmt::format("no {} {}", what, digits));
  return id;
}

}  // namespace kiln::server
