#include "kiln/store/records.h"

#include <array>
#include <chrono>
#include <utility>

namespace kiln::store {
namespace {

// One table per enum: the enum value at index i has the name at index i.
constexpr std::array<std::string_view, 6> k_run_status_names = {
    "queued", "running", "success", "failure", "cancelled", "interrupted"};
constexpr std::array<std::string_view, 8> k_job_status_names = {
    "queued", "waiting", "running", "success", "failure", "cancelled", "skipped", "interrupted"};
constexpr std::array<std::string_view, 4> k_conclusion_names = {"success", "failure", "cancelled",
                                                                "skipped"};
constexpr std::array<std::string_view, 9> k_failure_class_names = {
    "none", "code", "test", "timeout", "oom", "gpu-fault", "gpu-busy", "infra", "cancelled"};
constexpr std::array<std::string_view, 3> k_log_stream_names = {"stdout", "stderr", "system"};
constexpr std::array<std::string_view, 6> k_trigger_status_names = {
    "queued", "waiting_approval", "running", "finished", "failed", "cancelled"};

template <class Enum, std::size_t N>
Result<Enum> parse_enum(const std::array<std::string_view, N>& names, std::string_view text,
                        std::string_view what) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == text) return static_cast<Enum>(i);
  }
  return fail(ErrorCode::invalid_input, "unknown {} '{}'", what, text);
}

}  // namespace

TimeMs now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string_view to_string(RunStatus status) {
  return k_run_status_names.at(std::to_underlying(status));
}
std::string_view to_string(JobStatus status) {
  return k_job_status_names.at(std::to_underlying(status));
}
std::string_view to_string(Conclusion conclusion) {
  return k_conclusion_names.at(std::to_underlying(conclusion));
}
std::string_view to_string(LogStream stream) {
  return k_log_stream_names.at(std::to_underlying(stream));
}

std::string_view to_string(TriggerStatus status) {
  return k_trigger_status_names.at(std::to_underlying(status));
}
Result<TriggerStatus> parse_trigger_status(std::string_view text) {
  return parse_enum<TriggerStatus>(k_trigger_status_names, text, "trigger status");
}

Result<RunStatus> parse_run_status(std::string_view text) {
  return parse_enum<RunStatus>(k_run_status_names, text, "run status");
}
Result<JobStatus> parse_job_status(std::string_view text) {
  return parse_enum<JobStatus>(k_job_status_names, text, "job status");
}
Result<Conclusion> parse_conclusion(std::string_view text) {
  return parse_enum<Conclusion>(k_conclusion_names, text, "conclusion");
}
std::string_view to_string(FailureClass failure_class) {
  return k_failure_class_names.at(std::to_underlying(failure_class));
}
Result<FailureClass> parse_failure_class(std::string_view text) {
  return parse_enum<FailureClass>(k_failure_class_names, text, "failure class");
}
Result<LogStream> parse_log_stream(std::string_view text) {
  return parse_enum<LogStream>(k_log_stream_names, text, "log stream");
}

bool is_terminal(RunStatus status) {
  return status != RunStatus::queued && status != RunStatus::running;
}
bool is_terminal(JobStatus status) {
  return status != JobStatus::queued && status != JobStatus::waiting &&
         status != JobStatus::running;
}

}  // namespace kiln::store
