#pragma once
// A failed job kept for debugging (docs/containers.md "Debugging a failed job"): with
// --keep-failed, KILN_KEEP_ON_FAILURE or kiln.yml's debug.on_workflow_dispatch, the job runner
// writes a hold record, keeps the job's container, workspace and GPU leases, and waits until the
// hold ends: `kiln release` removes the record, its time (kiln.yml debug.hold, default 30 min)
// runs out, or the run is cancelled. Then the job ends as any other. `kiln exec` reads the record
// to open a shell in the job's environment. The record lives at
// <repository>/.kiln/holds/<run>-<job>.json, mode 0600 (the environment may hold secrets).

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/exec/cancel_token.h"

namespace kiln::engine {

struct DebugHold {
  std::int64_t run_id = 0;
  std::string job;                         // the job's key
  std::string engine;                      // the container engine's program; empty for a host job
  std::string container;                   // the job container's name; empty for a host job
  std::filesystem::path workspace;         // the working directory of `kiln exec`
  std::map<std::string, std::string> env;  // the environment the job's steps had
  std::vector<std::string> gpus;           // UUIDs of the GPUs held
  std::int64_t expires_at_ms = 0;          // Unix time
  int owner_pid = 0;                       // the kiln process that holds the job
  std::int64_t owner_start = 0;
};

std::filesystem::path debug_hold_path(const std::filesystem::path& kiln_dir, std::int64_t run_id,
                                      std::string_view job);

Status write_debug_hold(const std::filesystem::path& path, const DebugHold& hold);
// not_found when there is no record; invalid_input (naming the file) for one that is not a hold.
Result<DebugHold> read_debug_hold(const std::filesystem::path& path);

// How a hold ended.
enum class HoldEnd { released, expired, cancelled };
std::string_view to_string(HoldEnd end);

// Waits until the record at `path` is removed, `deadline` passes or `cancel` is cancelled.
HoldEnd wait_debug_hold(const std::filesystem::path& path,
                        std::chrono::system_clock::time_point deadline,
                        const exec::CancelToken* cancel);

// "01:23:45 UTC".
std::string clock_time(std::chrono::system_clock::time_point when);

}  // namespace kiln::engine
