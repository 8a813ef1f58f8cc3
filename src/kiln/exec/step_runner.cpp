#include "kiln/exec/step_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "kiln/core/safe_file.h"
#include "kiln/exec/process_tracker.h"
#include "kiln/exec/shell.h"
#include "kiln/exec/step_output.h"

namespace kiln::exec {
namespace {

using Clock = core::Clock;

// A step's script holds its `${{ secrets.X }}` values as interpolated: owner-only (0600). A job
// whose directory belongs to another user (jobs.user, containers.user) gets its scripts as that
// user's, or its shell could not read them; core/safe_file.h never writes through a link the job
// left in their place.
Status write_file(const std::filesystem::path& file, std::string_view text) {
  return core::write_fresh_file(file, text, core::owner_for_files_in(file.parent_path()));
}

bool env_true(const core::Environment& env, const char* key) {
  auto it = env.find(key);
  if (it == env.end()) return false;
  std::string value;
  for (char c : it->second) value.push_back(static_cast<char>(std::tolower(c)));
  return value == "true" || value == "1";
}

// Reads one key/value file command into `into`; a parse error fails the step.
void read_key_values(const std::filesystem::path& file, std::string_view label, StepOutput& output,
                     KeyValues& into) {
  auto text = read_file_command(file);
  if (!text) {
    output.fail(
        fmt::format("Unable to process file command '{}': {}", label, text.error().message));
    return;
  }
  auto pairs = parse_key_value_file(*text, label);
  if (!pairs) {
    output.fail(fmt::format("Unable to process file command '{}' successfully: {}", label,
                            pairs.error().to_string()));
    return;
  }
  into.insert(into.end(), pairs->begin(), pairs->end());
}

}  // namespace

std::string_view to_string(StepOutcome outcome) {
  switch (outcome) {
    case StepOutcome::success:
      return "success";
    case StepOutcome::failure:
      return "failure";
    case StepOutcome::timed_out:
      return "timed_out";
    case StepOutcome::cancelled:
      return "cancelled";
  }
  return "failure";
}

Result<StepResult> run_step(const StepRequest& request, LogSink& sink, Masker& masker,
                            const CancelToken* cancel, const StepRunnerOptions& options) {
  const auto started = Clock::now();
  StepResult result;
  auto finish_duration = [&] {
    result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  };
  StepOutput output(sink, masker, env_true(request.env, "ACTIONS_ALLOW_UNSECURE_COMMANDS"));
  if (cancel != nullptr && cancel->cancelled()) {
    output.fail("The operation was canceled.");
    result.outcome = StepOutcome::cancelled;
    result.annotations = output.effects().annotations;
    finish_duration();
    sink.flush();
    return result;
  }

  auto path_it = request.env.find("PATH");
  std::string path_list = path_it != request.env.end() ? path_it->second : std::string();
  ProgramFinder find = [&request](std::string_view program, std::string_view list) {
    return request.launcher != nullptr ? request.launcher->find_program(program, list)
                                       : core::find_executable(program, list);
  };
  KILN_TRY(auto shell, resolve_shell(request.shell, path_list, find));
  if (request.launcher == nullptr && !request.working_directory.empty() &&
      !std::filesystem::is_directory(request.working_directory)) {
    return fail(ErrorCode::not_found, "working directory '{}' does not exist",
                request.working_directory.string());
  }

  std::error_code ec;
  std::filesystem::create_directories(request.temp_dir, ec);
  if (ec) {
    return fail(ErrorCode::io_error, "cannot create temp dir '{}': {}", request.temp_dir.string(),
                ec.message());
  }
  // The script and file-command files keep their names for every step of a job (temp_dir is
  // the job's) and are truncated at each step's start: creating and deleting six files per step
  // cost more than the rest of a trivial step on ext4 (docs/performance.md).
  const auto script = request.temp_dir / ("step" + shell.extension);
  KILN_TRY_VOID(write_file(script, shell.script_contents(request.script)));
  KILN_TRY(auto files, create_file_command_files(request.temp_dir, "step"));

  core::Environment env = request.env;
  export_file_command_paths(files, env);
  if (!request.job_token.empty()) env["KILN_JOB_TOKEN"] = request.job_token;

  core::SpawnOptions spawn{
      .argv = shell.argv_for(script), .env = std::move(env), .cwd = request.working_directory};
  std::string launched_token;  // the launcher's name for this step's processes
  if (request.launcher != nullptr) {
    KILN_TRY(spawn, request.launcher->launch(std::move(spawn.argv), std::move(*spawn.env),
                                             std::move(spawn.cwd)));
    if (spawn.env)
      if (auto it = spawn.env->find(std::string(k_job_token_variable)); it != spawn.env->end())
        launched_token = it->second;
  } else if (request.subreaper != nullptr) {
    spawn.argv = request.subreaper->wrap(std::move(spawn.argv), request.run_as);
  } else if (request.run_as != nullptr) {
    return fail(ErrorCode::io_error,
                "jobs.user '{}': the step cannot be switched to that user without "
                "kiln-subreaper beside kiln; it does not run as kiln's user instead",
                request.run_as->name);
  }
  spawn.output = options.merge_stderr ? core::OutputMode::merged : core::OutputMode::separate;
  spawn.max_line_bytes = options.max_line_bytes;
  auto child = core::Subprocess::spawn(std::move(spawn));
  if (!child) {
    return std::unexpected(child.error());
  }

  auto on_line = [&output](core::Stream stream, std::string_view text, bool partial) {
    output.on_line(stream, text, partial);
  };
  child->set_after_read([&sink] { sink.flush(); });
  std::optional<Clock::time_point> deadline;
  if (request.timeout.count() > 0) deadline = started + request.timeout;
  const int wake_fd = cancel != nullptr ? cancel->fd() : -1;
  // Without an eventfd the cancel flag is looked at every 50 ms.
  const bool poll_cancel = cancel != nullptr && wake_fd < 0;

  std::optional<StepOutcome> stopped;
  while (true) {
    auto slice = deadline;
    if (poll_cancel) {
      auto next = Clock::now() + std::chrono::milliseconds(50);
      if (!slice || next < *slice) slice = next;
    }
    auto pumped = child->pump(on_line, slice, wake_fd, options.drain_idle);
    if (!pumped) {
      output.fail(fmt::format("reading the step's output failed: {}", pumped.error().message));
      stopped = StepOutcome::failure;
      break;
    }
    if (*pumped == core::Subprocess::PumpResult::finished) break;
    if (cancel != nullptr && cancel->cancelled()) {
      stopped = StepOutcome::cancelled;
      break;
    }
    if (deadline && Clock::now() >= *deadline) {
      stopped = StepOutcome::timed_out;
      break;
    }
  }
  bool ended = false;  // the command exited after SIGINT
  if (stopped == StepOutcome::cancelled && options.interrupt_grace.count() > 0) {
    child->signal_group(SIGINT);
    if (request.launcher != nullptr) request.launcher->signalled(launched_token, SIGINT);
    auto interrupted = child->pump(on_line, Clock::now() + options.interrupt_grace, -1,
                                   std::chrono::milliseconds(50));
    ended = interrupted && *interrupted == core::Subprocess::PumpResult::finished;
  }
  if (stopped) {
    // terminate() sends SIGTERM to the spawned command's group first.
    if (stopped == StepOutcome::cancelled && !ended && request.launcher != nullptr)
      request.launcher->signalled(launched_token, SIGTERM);
    auto status = child->terminate(options.kill_grace, on_line);
    if (status) result.exit = *status;
    if (request.launcher != nullptr) request.launcher->stopped(launched_token);
  } else {
    result.exit = child->status();
    if (request.launcher != nullptr && result.exit && !result.exit->success())
      result.launch_failure = request.launcher->launch_failure(*result.exit);
  }
  output.finish();

  // File commands are applied whatever the outcome, as GitHub does.
  KeyValues outputs = output.effects().outputs;
  KeyValues state = output.effects().state;
  result.env = output.effects().env;
  result.path_additions = output.effects().path_additions;
  read_key_values(files.output, "GITHUB_OUTPUT", output, outputs);
  read_key_values(files.env, "GITHUB_ENV", output, result.env);
  read_key_values(files.state, "GITHUB_STATE", output, state);
  if (auto text = read_file_command(files.path); text) {
    auto entries = parse_path_file(*text);
    result.path_additions.insert(result.path_additions.end(), entries.begin(), entries.end());
  }
  if (auto text = read_file_command(files.summary); text && !text->empty()) {
    if (text->size() > options.max_summary_bytes) {
      output.annotate(
          {.level = AnnotationLevel::error,
           .message = fmt::format("$GITHUB_STEP_SUMMARY upload aborted, supports "
                                  "content up to a size of {}k, got {}k.",
                                  options.max_summary_bytes / 1024, text->size() / 1024)});
    } else {
      result.summary = masker.mask(*text);
    }
  }
  for (auto& [key, value] : outputs) result.outputs[key] = value;
  for (auto& [key, value] : state) result.state[key] = value;

  if (stopped == StepOutcome::timed_out) {
    output.fail(fmt::format("The action has timed out after {} ms.", request.timeout.count()));
  } else if (stopped == StepOutcome::cancelled) {
    output.fail("The operation was canceled.");
  } else if (result.exit && !result.exit->success()) {
    output.annotate(
        {.level = AnnotationLevel::error,
         .message =
             result.exit->signal != 0
                 ? fmt::format("Process completed: {}.", result.exit->to_string())
                 : fmt::format("Process completed with exit code {}.", result.exit->exit_code)});
  }

  if (stopped) {
    result.outcome = *stopped;
  } else if (!result.exit || !result.exit->success() || !output.effects().failures.empty()) {
    result.outcome = StepOutcome::failure;
  } else {
    result.outcome = StepOutcome::success;
  }
  result.annotations = output.effects().annotations;
  result.failures = output.effects().failures;
  finish_duration();
  sink.flush();
  return result;
}

}  // namespace kiln::exec
