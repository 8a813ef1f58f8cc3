#pragma once
// hipcheck's output formats. Text is for people (one line per finding that is not in the
// baseline, then per-file counts and a summary); JSON is the documented machine schema
// (docs/hipcheck.md); SARIF 2.1.0 is for code-scanning views (GitHub, VS Code).
//
// Output is streamed: a ReportWriter gets the files one at a time (scan_project's sink) and
// writes as it goes, so a report of millions of findings never exists as one document.

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kiln/hipcheck/hipcheck.h"

namespace kiln::hipcheck {

enum class Format : std::uint8_t { text, json, sarif };
std::optional<Format> parse_format(std::string_view text);

struct OutputContext {
  FailOn fail_on = k_default_fail_on;
  bool baseline_used = false;
  std::string working_directory;  // absolute; SARIF resolves relative paths against it
  RocmVersion rocm = newest_known_rocm();
};

// Where a writer's text goes (a file, stdout, a string).
using Output = std::function<void(std::string_view)>;

class ReportWriter {
 public:
  virtual ~ReportWriter() = default;
  virtual void file(const FileScan& file, const Summary& counts) = 0;
  virtual void finish(const Summary& total) = 0;
};
std::unique_ptr<ReportWriter> make_writer(Format format, const OutputContext& context, Output out);

std::string format_text(const Report& report, const OutputContext& context);
std::string format_json(const Report& report, const OutputContext& context);
std::string format_sarif(const Report& report, const OutputContext& context);
std::string format_report(Format format, const Report& report, const OutputContext& context);

// RFC 3986 percent-encoding of a path for a URI ('/' kept).
std::string uri_encode_path(std::string_view path);

}  // namespace kiln::hipcheck
