#include "kiln/exec/log_sink.h"

namespace kiln::exec {

std::string_view to_string(AnnotationLevel level) {
  switch (level) {
    case AnnotationLevel::error:
      return "error";
    case AnnotationLevel::warning:
      return "warning";
    case AnnotationLevel::notice:
      return "notice";
  }
  return "error";
}

std::string_view to_string(LogKind kind) {
  switch (kind) {
    case LogKind::output:
      return "output";
    case LogKind::command:
      return "command";
    case LogKind::group_start:
      return "group_start";
    case LogKind::group_end:
      return "group_end";
    case LogKind::annotation:
      return "annotation";
    case LogKind::debug:
      return "debug";
    case LogKind::system:
      return "system";
  }
  return "output";
}

void RecordingLogSink::write(const LogEvent& event) {
  std::lock_guard lock(mutex_);
  events_.push_back(event);
}

std::vector<LogEvent> RecordingLogSink::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

std::vector<std::string> RecordingLogSink::texts(LogKind kind) const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& e : events_)
    if (e.kind == kind) out.push_back(e.text);
  return out;
}

}  // namespace kiln::exec
