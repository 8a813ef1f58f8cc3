#pragma once
// LogSink: where the step runner sends what a step prints, already masked (masker.h) and already
// split into plain output and the structured events of workflow commands. The engine implements
// it (store log chunks, terminal, SSE); tests use RecordingLogSink.

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/subprocess.h"

namespace kiln::exec {

enum class AnnotationLevel { error, warning, notice };

// `::error file=F,line=L,endLine=E,col=C,endColumn=EC,title=T::message`, and the errors kiln
// itself reports about a step (a bad file command, a disabled command). 0 means "not given".
struct Annotation {
  AnnotationLevel level = AnnotationLevel::error;
  std::string message{};
  std::string title{};
  std::string file{};
  int line = 0;
  int end_line = 0;
  int column = 0;
  int end_column = 0;

  bool operator==(const Annotation&) const = default;
};

std::string_view to_string(AnnotationLevel level);

enum class LogKind {
  output,       // a line the step printed (not a workflow command)
  command,      // a workflow command line, echoed because of `::echo::on`
  group_start,  // `::group::TITLE`: text is the title
  group_end,    // `::endgroup::`
  annotation,   // `::error` / `::warning` / `::notice`: text is the message, see annotation
  debug,        // `::debug::MESSAGE`: shown only when step debug logging is on (sink decides)
  system,       // a message from kiln about the step ("Process completed with exit code 1")
};

std::string_view to_string(LogKind kind);

struct LogEvent {
  LogKind kind = LogKind::output;
  core::Stream stream = core::Stream::out;  // for output/command: where the step wrote it
  std::string text{};                       // masked
  bool partial = false;  // output only: a piece of a very long line, continued by the next event
  std::optional<Annotation> annotation{};  // for kind == annotation (masked)
};

// Called by one step runner at a time per job; a sink shared by parallel jobs must lock itself.
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void write(const LogEvent& event) = 0;
  // The events written so far are to be stored and shown now. A sink may hold events back until
  // then (the step runner calls it after each read of the step's pipes and before it returns),
  // so that a block of lines costs one write to the store's journal.
  virtual void flush() {}
};

// Keeps every event; for tests and for callers that want a step's log in memory.
class RecordingLogSink : public LogSink {
 public:
  void write(const LogEvent& event) override;
  std::vector<LogEvent> events() const;
  // The text of the events of one kind, in order.
  std::vector<std::string> texts(LogKind kind) const;

 private:
  mutable std::mutex mutex_;
  std::vector<LogEvent> events_;
};

}  // namespace kiln::exec
