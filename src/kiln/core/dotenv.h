#pragma once
// A dotenv text (`kiln run --secret-file` / `--env-file`): KEY=VALUE lines, '#' comments and
// blank lines, an optional `export ` prefix, values "..." (with \n, \t, \\ and \" escapes),
// '...' (literal) or bare (the rest of the line). A key is a name ([A-Za-z_][A-Za-z0-9_]*); a
// line that is not such an assignment, or a quote that is not closed at the line's end, is an
// invalid_input error at FILE:LINE:COL. A later line wins over an earlier one of the same key.

#include <map>
#include <string>
#include <string_view>

#include "kiln/core/result.h"

namespace kiln::core {

Result<std::map<std::string, std::string>> parse_dotenv(std::string_view text,
                                                        const std::string& file);

}  // namespace kiln::core
