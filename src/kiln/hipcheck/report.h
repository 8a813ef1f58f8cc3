#pragma once
// hipcheck's output formats. Text is for people (one line per finding that is not in the
// baseline, then per-file counts and a summary); JSON is the documented machine schema
// (docs/hipcheck.md); SARIF 2.1.0 is for code-scanning views (GitHub, VS Code).

#include <string>

#include "kiln/hipcheck/hipcheck.h"

namespace kiln::hipcheck {

enum class Format : std::uint8_t { text, json, sarif };
std::optional<Format> parse_format(std::string_view text);

struct OutputContext {
  FailOn fail_on = k_default_fail_on;
  bool baseline_used = false;
  std::string working_directory;  // absolute; SARIF resolves relative paths against it
};

std::string format_text(const Report& report, const OutputContext& context);
std::string format_json(const Report& report, const OutputContext& context);
std::string format_sarif(const Report& report, const OutputContext& context);
std::string format_report(Format format, const Report& report, const OutputContext& context);

// RFC 3986 percent-encoding of a path for a URI ('/' kept).
std::string uri_encode_path(std::string_view path);

}  // namespace kiln::hipcheck
