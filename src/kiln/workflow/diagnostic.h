#pragma once
// Diagnostics for workflow and config files: "FILE:LINE:COL: error: message".

#include <string>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::workflow {

enum class Severity { error, warning };

struct Diagnostic {
  Severity severity = Severity::error;
  SourceLocation where;
  std::string message;

  std::string to_string() const;  // "FILE:LINE:COL: error: message"
};

using Diagnostics = std::vector<Diagnostic>;

bool has_errors(const Diagnostics& diagnostics);

}  // namespace kiln::workflow
