#pragma once
// Small text helpers shared by every module.

#include <string>
#include <string_view>

namespace kiln::core {

// `text` without the leading and trailing white space of the C locale (space, \t, \n, \v, \f,
// \r); a view into `text`.
std::string_view trim(std::string_view text);

// RFC 4648 base64 of `bytes`: the standard alphabet, or with url_safe the URL one ('-', '_'); the
// last group padded with '=' unless `pad` is false (base64url in JWTs has no padding).
std::string base64(std::string_view bytes, bool url_safe = false, bool pad = true);

}  // namespace kiln::core
