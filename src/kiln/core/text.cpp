#include "kiln/core/text.h"

namespace kiln::core {

std::string_view trim(std::string_view text) {
  constexpr std::string_view k_space = " \t\n\v\f\r";
  const auto begin = text.find_first_not_of(k_space);
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(k_space) - begin + 1);
}

}  // namespace kiln::core
