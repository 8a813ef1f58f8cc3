#pragma once
// JSON text a user gave (a result file, a SARIF log), read without letting a library exception
// out: a syntax error, a number too large for a double (1E400) or any other failure of the
// parser is an invalid_input error at FILE:LINE:COL that names the field it happened in
// ("context", "benchmarks[2].value").

#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"

namespace kiln::core {

Result<nlohmann::json> parse_json_text(std::string_view text, const std::filesystem::path& origin);

}  // namespace kiln::core
