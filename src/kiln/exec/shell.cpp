#include "kiln/exec/shell.h"

#include "kiln/core/subprocess.h"

namespace kiln::exec {
namespace {

std::string extension_for(std::string_view program) {
  if (program == "bash" || program == "sh") return ".sh";
  if (program == "python" || program == "python3") return ".py";
  if (program == "pwsh" || program == "powershell") return ".ps1";
  if (program == "cmd") return ".cmd";
  return "";
}

Result<ShellCommand> make(std::string_view program, std::vector<std::string> args,
                          std::string_view path_list, const ProgramFinder& find) {
  auto found = find(program, path_list);
  if (!found) {
    return fail(ErrorCode::not_found, "shell '{}' was not found in the step's PATH ({})", program,
                path_list);
  }
  ShellCommand shell;
  shell.program = *found;
  shell.args = std::move(args);
  shell.name = found->filename().string();
  shell.extension = extension_for(shell.name);
  return shell;
}

}  // namespace

std::vector<std::string> ShellCommand::argv_for(const std::filesystem::path& script) const {
  std::vector<std::string> argv{program.string()};
  const std::string path = script.string();
  for (const auto& arg : args) {
    std::string out;
    std::size_t pos = 0;
    while (true) {
      auto hit = arg.find("{0}", pos);
      out.append(arg, pos, hit == std::string::npos ? std::string::npos : hit - pos);
      if (hit == std::string::npos) break;
      out.append(path);
      pos = hit + 3;
    }
    argv.push_back(std::move(out));
  }
  return argv;
}

std::string ShellCommand::script_contents(std::string_view script) const {
  std::string text;
  text.reserve(script.size() + 128);
  for (std::size_t i = 0; i < script.size(); ++i) {
    if (script[i] == '\r' && i + 1 < script.size() && script[i + 1] == '\n') continue;
    text.push_back(script[i]);
  }
  if (extension == ".ps1") {
    // As the runner does: stop on the first error, and exit with the last native exit code.
    return "$ErrorActionPreference = 'stop'\n" + text +
           "\nif ((Test-Path -LiteralPath variable:\\LASTEXITCODE)) { exit $LASTEXITCODE }\n";
  }
  return text;
}

Result<std::vector<std::string>> split_shell_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '"') {
      word.push_back('"');
      in_word = true;
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
      in_word = true;
    } else if (!quoted && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  if (quoted) return fail(ErrorCode::invalid_input, "unterminated quote in shell '{}'", text);
  if (in_word) words.push_back(std::move(word));
  return words;
}

Result<ShellCommand> resolve_shell(std::string_view shell, std::string_view path_list) {
  return resolve_shell(shell, path_list, [](std::string_view program, std::string_view list) {
    return core::find_executable(program, list);
  });
}

Result<ShellCommand> resolve_shell(std::string_view shell, std::string_view path_list,
                                   const ProgramFinder& find) {
  if (shell.empty()) {
    if (find("bash", path_list)) return make("bash", {"-e", "{0}"}, path_list, find);
    return make("sh", {"-e", "{0}"}, path_list, find);
  }
  if (shell == "bash") {
    return make("bash", {"--noprofile", "--norc", "-eo", "pipefail", "{0}"}, path_list, find);
  }
  if (shell == "sh") return make("sh", {"-e", "{0}"}, path_list, find);
  if (shell == "python") {
    if (find("python", path_list)) return make("python", {"{0}"}, path_list, find);
    return make("python3", {"{0}"}, path_list, find);
  }
  if (shell == "pwsh") return make("pwsh", {"-command", ". '{0}'"}, path_list, find);
  if (shell == "powershell" || shell == "cmd") {
    return fail(ErrorCode::unsupported, "shell '{}' is only available on Windows", shell);
  }
  if (shell.find("{0}") == std::string_view::npos) {
    return fail(ErrorCode::invalid_input,
                "invalid shell '{}': a custom shell must contain {{0}}, the script's path "
                "(e.g. 'perl {{0}}')",
                shell);
  }
  KILN_TRY(auto words, split_shell_words(shell));
  if (words.empty()) return fail(ErrorCode::invalid_input, "invalid shell '{}'", shell);
  std::string program = words.front();
  words.erase(words.begin());
  return make(program, std::move(words), path_list, find);
}

}  // namespace kiln::exec
