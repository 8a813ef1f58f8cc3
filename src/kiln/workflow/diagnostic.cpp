#include "kiln/workflow/diagnostic.h"

#include <algorithm>

namespace kiln::workflow {

std::string Diagnostic::to_string() const {
  const char* kind = severity == Severity::error ? "error" : "warning";
  std::string place = where.to_string();
  if (place.empty()) return fmt::format("{}: {}", kind, message);
  return fmt::format("{}: {}: {}", place, kind, message);
}

bool has_errors(const Diagnostics& diagnostics) {
  return std::ranges::any_of(diagnostics,
                             [](const Diagnostic& d) { return d.severity == Severity::error; });
}

}  // namespace kiln::workflow
