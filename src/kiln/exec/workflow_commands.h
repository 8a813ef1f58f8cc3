#pragma once
// Workflow commands: the `::name key=value,key=value::data` lines a step prints to talk to the
// runner (GitHub's "Workflow commands for GitHub Actions"), parsed here; step_output.h acts on
// them.
//
// As in GitHub's runner, a line is a command only when, after trimming surrounding whitespace,
// it starts with "::", has a second "::", and the name is one the runner knows; anything else
// is plain output. Property values are unescaped from %25 %0D %0A %3A %2C, the data from
// %25 %0D %0A.

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::exec {

struct WorkflowCommand {
  std::string name;                               // "error", "set-output", ...
  std::map<std::string, std::string> properties;  // unescaped
  std::string data;                               // unescaped
};

// The names the runner knows: set-output, save-state, add-mask, add-matcher, remove-matcher,
// warning, error, notice, debug, group, endgroup, echo, stop-commands, and the disabled
// set-env and add-path.
bool is_known_workflow_command(std::string_view name);

// Parses one line of step output; nullopt when it is not a known command.
std::optional<WorkflowCommand> parse_workflow_command(std::string_view line);

// The `::name::data` shape, without the known-name check: for `::STOP-TOKEN::` lines.
// Returns the name when `line` (trimmed) is exactly "::NAME::".
std::optional<std::string_view> bare_command_name(std::string_view line);

std::string escape_command_data(std::string_view text);
std::string escape_command_property(std::string_view text);
std::string unescape_command_data(std::string_view text);
std::string unescape_command_property(std::string_view text);

}  // namespace kiln::exec
