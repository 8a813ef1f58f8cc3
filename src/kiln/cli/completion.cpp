// kiln completion bash: a bash completion script for kiln, written from the command line's own
// definition (every subcommand and option CLI11 knows), so it cannot fall behind it. CLI11 has
// no generator of its own. `cmake --install` puts it in share/bash-completion/completions/kiln.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "kiln/cli/app.h"

namespace kiln::cli {
namespace {

struct Level {
  std::string path;                   // "bench compare"; "" for kiln itself
  std::vector<std::string> commands;  // its subcommands
  std::vector<std::string> options;   // --long and -s names
  std::vector<std::string> valued;    // those that take a value
};

void collect(const CLI::App& app, const std::string& path, std::vector<Level>& levels) {
  Level level{.path = path, .commands = {}, .options = {}, .valued = {}};
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_lnames().empty() && option->get_snames().empty()) continue;  // positional
    std::vector<std::string> names;
    for (const auto& name : option->get_lnames()) names.push_back("--" + name);
    for (const auto& name : option->get_snames()) names.push_back("-" + name);
    for (const auto& name : names) {
      level.options.push_back(name);
      if (option->get_expected_min() > 0) level.valued.push_back(name);
    }
  }
  std::vector<const CLI::App*> children;
  for (const CLI::App* child : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!child->get_name().empty()) children.push_back(child);
  for (const CLI::App* child : children) level.commands.push_back(child->get_name());
  levels.push_back(level);
  for (const CLI::App* child : children)
    collect(*child, path.empty() ? child->get_name() : path + " " + child->get_name(), levels);
}

std::string words(const std::vector<std::string>& list) {
  std::string text;
  for (const auto& word : list) text += (text.empty() ? "" : " ") + word;
  return text;
}

// case "$1" in "PATH") echo "WORDS" ;; ... esac, one branch per level with a non-empty list.
std::string table(const std::vector<Level>& levels,
                  const std::function<const std::vector<std::string>&(const Level&)>& of) {
  std::string text = "  case \"$1\" in\n";
  for (const auto& level : levels)
    if (!of(level).empty())
      text += fmt::format("    \"{}\") echo \"{}\" ;;\n", level.path, words(of(level)));
  return text + "  esac\n";
}

std::string bash_script(const CLI::App& root) {
  std::vector<Level> levels;
  collect(root, "", levels);
  std::string script = R"SH(# bash completion for kiln, written by `kiln completion bash`.
# Install: kiln completion bash > ~/.local/share/bash-completion/completions/kiln
_kiln_commands() {
)SH";
  script += table(levels, [](const Level& level) -> const auto& { return level.commands; });
  script += "}\n_kiln_options() {\n";
  script += table(levels, [](const Level& level) -> const auto& { return level.options; });
  script += "}\n_kiln_valued() {\n";
  script += table(levels, [](const Level& level) -> const auto& { return level.valued; });
  script += R"SH(}
_kiln() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="" path="" word i
  # The subcommands typed so far; an option's value is not one.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="${COMP_WORDS[i]}"
    if [[ "$word" == -* ]]; then
      [[ "$word" != *=* && " $(_kiln_valued "$path") " == *" $word "* ]] && ((i++))
      continue
    fi
    [[ " $(_kiln_commands "$path") " == *" $word "* ]] && path="${path:+$path }$word"
  done
  ((COMP_CWORD > 1)) && prev="${COMP_WORDS[COMP_CWORD - 1]}"
  COMPREPLY=()
  if [[ "$prev" == -* && " $(_kiln_valued "$path") " == *" $prev "* ]]; then
    return 0  # a value: files (complete -o default)
  elif [[ "$cur" == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_kiln_options "$path")" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -W "$(_kiln_commands "$path")" -- "$cur")
  fi
}
complete -o default -F _kiln kiln
)SH";
  return script;
}

}  // namespace

void add_completion_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("completion", "print a shell completion script (bash)");
  auto shell = std::make_shared<std::string>();
  cmd->add_option("SHELL", *shell, "the shell: bash")->required()->check(CLI::IsMember({"bash"}));
  cmd->callback([&app, shell, &exit_code] {
    fmt::print("{}", bash_script(app));
    exit_code = 0;
  });
}

}  // namespace kiln::cli
