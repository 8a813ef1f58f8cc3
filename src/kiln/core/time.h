#pragma once
// Durations as users write them and as kiln prints them: one reader and one printer for
// kiln.yml, the command line, container health options and every report.

#include <chrono>
#include <string>
#include <string_view>

#include "kiln/core/result.h"

namespace kiln::core {

// Whose spelling a duration is in.
//  - kiln: kiln.yml and kiln's options (500ms, 10s, 2m, 1.5h, 7d, 1m30s).
//  - engine: what podman and docker take for --health-interval and the like (Go's
//    time.ParseDuration: ns, us or µs, ms, s, m, h; no days; a bare 0).
enum class DurationSyntax { kiln, engine };

// A number with a unit, or several (1m30s); no sign, no bare number (except the engine's 0).
// At most about 31 years: what is longer is refused, not wrapped.
Result<std::chrono::milliseconds> parse_duration(std::string_view text,
                                                 DurationSyntax syntax = DurationSyntax::kiln);

// 850ms, 12.3s, 4m05s, 2h03m; a negative duration (not known) is "-".
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace kiln::core
