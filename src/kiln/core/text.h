#pragma once
// Small text helpers shared by every module.

#include <string_view>

namespace kiln::core {

// `text` without the leading and trailing white space of the C locale (space, \t, \n, \v, \f,
// \r); a view into `text`.
std::string_view trim(std::string_view text);

}  // namespace kiln::core
