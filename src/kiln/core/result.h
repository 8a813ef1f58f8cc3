#pragma once
// The one error style of Kiln: functions that can fail return Result<T>, a std::expected whose
// error is an Error value with a kind, a message and, for bad input, where in which file.

#include <expected>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace kiln {

// A place in a source file. Line and column are 1-based; 0 means unknown.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;

  bool empty() const { return file.empty() && line == 0; }
  // "FILE:LINE:COL" (parts that are unknown are left out).
  std::string to_string() const;
};

enum class ErrorCode {
  invalid_input,  // bad workflow, config, arguments, file contents: exit code 2
  not_found,      // a named thing does not exist: exit code 2
  io_error,       // the world failed us (disk, process, database): exit code 3
  timeout,
  cancelled,
  unsupported,
  internal,  // a bug: exit code 3
};

struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;
  SourceLocation where;

  // "FILE:LINE:COL: error: MESSAGE", or "error: MESSAGE" when there is no location.
  std::string to_string() const;
  // The process exit code DESIGN.md assigns to this kind of error (2 or 3).
  int exit_code() const;
};

template <class T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

inline std::unexpected<Error> make_error(ErrorCode code, std::string message,
                                         SourceLocation where = {}) {
  return std::unexpected<Error>(Error{code, std::move(message), std::move(where)});
}

// fail(ErrorCode::invalid_input, "unknown key '{}'", key)
template <class... Args>
std::unexpected<Error> fail(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return make_error(code, fmt::format(format, std::forward<Args>(args)...));
}

// fail_at(loc, "unknown key '{}'", key): an invalid_input error at a source location.
template <class... Args>
std::unexpected<Error> fail_at(SourceLocation where, fmt::format_string<Args...> format,
                               Args&&... args) {
  return make_error(ErrorCode::invalid_input, fmt::format(format, std::forward<Args>(args)...),
                    std::move(where));
}

}  // namespace kiln

// Propagate an error out of a function returning Result<...>:
//   KILN_TRY(auto value, parse(text));   KILN_TRY_VOID(write(file));
#define KILN_CONCAT_INNER(a, b) a##b
#define KILN_CONCAT(a, b) KILN_CONCAT_INNER(a, b)
#define KILN_TRY_IMPL(tmp, decl, expr)                      \
  auto tmp = (expr);                                        \
  if (!tmp) return std::unexpected(std::move(tmp.error())); \
  decl = std::move(*tmp)
#define KILN_TRY(decl, expr) KILN_TRY_IMPL(KILN_CONCAT(kiln_try_, __LINE__), decl, expr)
#define KILN_TRY_VOID(expr)                                       \
  do {                                                            \
    if (auto kiln_try_status = (expr); !kiln_try_status)          \
      return std::unexpected(std::move(kiln_try_status.error())); \
  } while (0)
