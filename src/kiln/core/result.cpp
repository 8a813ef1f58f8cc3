#include "kiln/core/result.h"

namespace kiln {

std::string SourceLocation::to_string() const {
  if (file.empty()) return line > 0 ? fmt::format("{}:{}", line, column) : std::string{};
  if (line <= 0) return file;
  if (column <= 0) return fmt::format("{}:{}", file, line);
  return fmt::format("{}:{}:{}", file, line, column);
}

std::string Error::to_string() const {
  if (where.empty()) return fmt::format("error: {}", message);
  return fmt::format("{}: error: {}", where.to_string(), message);
}

int Error::exit_code() const {
  switch (code) {
    case ErrorCode::invalid_input:
    case ErrorCode::not_found:
      return 2;
    case ErrorCode::timeout:
    case ErrorCode::cancelled:
      return 1;
    default:
      return 3;
  }
}

}  // namespace kiln
