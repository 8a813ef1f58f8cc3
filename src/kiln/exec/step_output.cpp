#include "kiln/exec/step_output.h"

#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace kiln::exec {
namespace {

int to_int(const std::map<std::string, std::string>& properties, const char* key) {
  auto it = properties.find(key);
  if (it == properties.end()) return 0;
  int value = 0;
  auto [ptr, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
  if (ec != std::errc() || ptr != it->second.data() + it->second.size() || value < 0) return 0;
  return value;
}

std::string get(const std::map<std::string, std::string>& properties, const char* key) {
  auto it = properties.find(key);
  return it == properties.end() ? std::string() : it->second;
}

std::size_t index(core::Stream stream) { return stream == core::Stream::out ? 0 : 1; }

}  // namespace

StepOutput::StepOutput(LogSink& sink, Masker& masker, bool allow_unsecure_commands)
    : sink_(sink), masker_(masker), allow_unsecure_(allow_unsecure_commands) {}

void StepOutput::emit(LogKind kind, core::Stream stream, std::string_view text, bool partial) {
  LogEvent event;
  event.kind = kind;
  event.stream = stream;
  event.text = masker_.mask(text);
  event.partial = partial;
  sink_.write(event);
}

void StepOutput::system(std::string_view message) {
  emit(LogKind::system, core::Stream::out, message);
}

void StepOutput::annotate(Annotation annotation) {
  annotation.message = masker_.mask(annotation.message);
  annotation.title = masker_.mask(annotation.title);
  annotation.file = masker_.mask(annotation.file);
  LogEvent event;
  event.kind = LogKind::annotation;
  event.text = annotation.message;
  event.annotation = annotation;
  sink_.write(event);
  effects_.annotations.push_back(std::move(annotation));
}

void StepOutput::fail(std::string_view message) {
  annotate(Annotation{.level = AnnotationLevel::error, .message = std::string(message)});
  effects_.failures.push_back(masker_.mask(message));
}

void StepOutput::deprecated(std::string_view name) {
  annotate(Annotation{
      .level = AnnotationLevel::warning,
      .message = fmt::format("The `{}` command is deprecated and will be disabled soon. Please "
                             "upgrade to using Environment Files.",
                             name)});
}

void StepOutput::on_line(core::Stream stream, std::string_view text, bool partial) {
  auto i = index(stream);
  if (!partial && !continuing_[i]) {
    handle_line(stream, text);
    return;
  }
  // A piece of a line too long to be a command: plain output, masked as the whole line would be.
  continuing_[i] = partial;
  auto shown = masker_.mask_piece(pieces_[i], text, !partial);
  if (partial && shown.empty()) return;
  sink_.write(LogEvent{
      .kind = LogKind::output, .stream = stream, .text = std::move(shown), .partial = partial});
}

void StepOutput::finish() {
  for (auto stream : {core::Stream::out, core::Stream::err}) {
    auto i = index(stream);
    if (continuing_[i]) on_line(stream, "", false);
  }
  if (in_group_) {
    emit(LogKind::group_end, core::Stream::out, "");
    in_group_ = false;
  }
}

void StepOutput::handle_line(core::Stream stream, std::string_view text) {
  if (!stop_token_.empty()) {
    auto name = bare_command_name(text);
    if (name && *name == stop_token_) {
      stop_token_.clear();
      if (echo_) emit(LogKind::command, stream, text);
    } else {
      emit(LogKind::output, stream, text);
    }
    return;
  }
  auto command = parse_workflow_command(text);
  if (!command) {
    emit(LogKind::output, stream, text);
    return;
  }
  run_command(*command, stream, text);
}

void StepOutput::run_command(const WorkflowCommand& command, core::Stream stream,
                             std::string_view line) {
  const auto& name = command.name;
  const auto& props = command.properties;
  // add-mask first, so that an echoed add-mask line is already masked.
  if (name == "add-mask") {
    if (command.data.find_first_not_of(" \t\r\n") == std::string::npos) {
      annotate({.level = AnnotationLevel::warning,
                .message = "Can't add secret mask for empty string in ::add-mask:: command."});
    } else {
      masker_.add(command.data);
    }
  }
  if (echo_) emit(LogKind::command, stream, line);

  if (name == "add-mask") return;
  if (name == "error" || name == "warning" || name == "notice") {
    Annotation a;
    a.level = name == "error"     ? AnnotationLevel::error
              : name == "warning" ? AnnotationLevel::warning
                                  : AnnotationLevel::notice;
    a.message = command.data;
    a.title = get(props, "title");
    a.file = get(props, "file");
    a.line = to_int(props, "line");
    a.end_line = to_int(props, "endLine");
    a.column = to_int(props, "col");
    a.end_column = to_int(props, "endColumn");
    annotate(std::move(a));
  } else if (name == "debug") {
    emit(LogKind::debug, stream, command.data);
  } else if (name == "group") {
    if (in_group_) emit(LogKind::group_end, stream, "");  // groups do not nest
    emit(LogKind::group_start, stream, command.data);
    in_group_ = true;
  } else if (name == "endgroup") {
    if (in_group_) emit(LogKind::group_end, stream, "");
    in_group_ = false;
  } else if (name == "set-output" || name == "save-state") {
    auto key = get(props, "name");
    if (key.empty()) {
      fail(fmt::format("Unable to process command '::{}::': required property 'name' is missing",
                       name));
      return;
    }
    deprecated(name);
    (name == "set-output" ? effects_.outputs : effects_.state).emplace_back(key, command.data);
  } else if (name == "set-env" || name == "add-path") {
    if (!allow_unsecure_) {
      fail(
          fmt::format("The `{}` command is disabled. Please upgrade to using Environment Files "
                      "or opt into unsecure command execution by setting the "
                      "`ACTIONS_ALLOW_UNSECURE_COMMANDS` environment variable to `true`.",
                      name));
      return;
    }
    if (name == "add-path") {
      effects_.path_additions.push_back(command.data);
      return;
    }
    auto key = get(props, "name");
    if (key.empty()) {
      fail("Unable to process command '::set-env::': required property 'name' is missing");
      return;
    }
    effects_.env.emplace_back(key, command.data);
  } else if (name == "echo") {
    std::string value;
    for (char c : command.data) value.push_back(static_cast<char>(std::tolower(c)));
    if (value == "on") {
      echo_ = true;
    } else if (value == "off") {
      echo_ = false;
    } else {
      fail(fmt::format("Invalid echo command value '{}'. Possible values are 'on' and 'off'.",
                       command.data));
    }
  } else if (name == "stop-commands") {
    if (command.data.empty() || is_known_workflow_command(command.data)) {
      fail(
          fmt::format("Invalid stop-commands token '{}': it must not be empty or the name of a "
                      "workflow command",
                      command.data));
      return;
    }
    stop_token_ = command.data;
  } else if (name == "add-matcher" || name == "remove-matcher") {
    emit(LogKind::debug, stream,
         fmt::format("problem matchers are not supported; ignoring ::{}::", name));
  }
}

}  // namespace kiln::exec
