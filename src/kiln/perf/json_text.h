#pragma once
// JSON text of a result file, read without letting a library exception out: a syntax error, a
// number too large for a double (1E400) or any other failure of the parser is an invalid_input
// error at FILE:LINE:COL that names the field it happened in ("context", "benchmarks[2].value").

#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"

namespace kiln::perf {

Result<nlohmann::json> parse_json_text(std::string_view text, const std::filesystem::path& origin);

}  // namespace kiln::perf
