#pragma once
// The `shell:` of a run step, as GitHub's runner interprets it on Linux:
//   (none)    bash -e {0}          (sh -e {0} when bash is not in PATH)
//   bash      bash --noprofile --norc -eo pipefail {0}
//   sh        sh -e {0}
//   python    python {0}           (python3 when python is not in PATH)
//   pwsh      pwsh -command ". '{0}'"
//   other     a template: the first word is the program, the rest its arguments, and it must
//             contain {0}, the path of the script file ("perl {0}", "bash -x {0}").
// Templates are split into words the way the runner's .NET process start does: whitespace
// separates, double quotes group (a backslash escapes a quote), single quotes are ordinary.
// The program is looked up in the step's PATH.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::exec {

struct ShellCommand {
  std::filesystem::path program;  // resolved in the step's PATH
  std::vector<std::string> args;  // the words after the program, still with {0}
  std::string extension;          // of the script file: ".sh", ".py", ".ps1" or ""
  std::string name;               // the program's base name ("bash"), for messages

  // argv for running `script`: {0} replaced in every argument.
  std::vector<std::string> argv_for(const std::filesystem::path& script) const;
  // The script file's contents for this shell (pwsh gets the runner's preamble and exit-code
  // epilogue; "\r\n" becomes "\n").
  std::string script_contents(std::string_view script) const;
};

// Resolves a step's `shell:` value ("" when the step and defaults have none) against the
// step's PATH. Errors: a custom shell without {0} (invalid_input), powershell/cmd (unsupported
// on Linux), a program missing from PATH (not_found).
Result<ShellCommand> resolve_shell(std::string_view shell, std::string_view path_list);

// Where a program is, given the step's PATH: the host's file system by default
// (core::find_executable); a container job looks inside its container (step_launcher.h).
using ProgramFinder = std::function<std::optional<std::filesystem::path>(
    std::string_view program, std::string_view path_list)>;
Result<ShellCommand> resolve_shell(std::string_view shell, std::string_view path_list,
                                   const ProgramFinder& find);

// Splits a shell template into words (see above). An unterminated quote is invalid_input.
Result<std::vector<std::string>> split_shell_words(std::string_view text);

}  // namespace kiln::exec
