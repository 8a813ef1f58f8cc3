#include "kiln/store/sql.h"

#include <cctype>

namespace kiln::store::sql {

std::string one_line(std::string_view sql) {
  constexpr std::size_t k_max_length = 300;
  std::string line;
  bool space = false;
  for (char c : sql) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !line.empty();
      continue;
    }
    if (space) line += ' ';
    space = false;
    line += c;
    if (line.size() >= k_max_length) {
      line += "...";
      break;
    }
  }
  return line;
}

}  // namespace kiln::store::sql
