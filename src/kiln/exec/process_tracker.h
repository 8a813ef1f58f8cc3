#pragma once
// Job process tracking: every step of a job runs with KILN_JOB_TOKEN=<token> in its environment,
// and every process it starts inherits it, including those that leave the step's process group
// (`setsid sleep 300 &`, a double-forked daemon, `nohup server &`). At the end of a job,
// kill_job_processes() finds them by scanning /proc/*/environ and SIGKILLs them, so no job
// leaves processes behind (holding GPU memory, ports, files). It needs nothing but /proc: no
// cgroup, no privileges beyond owning the processes.
//
// A process that empties its own environment (env -i, some daemons) is missed, unless it is in
// the process group of one that is found: the groups of found processes are killed too. Such
// processes are the holders' (subreaper.h): each step's leftovers are reparented to its holder,
// which kills them first; this scan is the last resort.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::exec {

inline constexpr std::string_view k_job_token_variable = "KILN_JOB_TOKEN";

// A new token, unique across jobs and hosts ("kiln-" and 32 hex digits).
std::string new_job_token();

// Processes of this user, other than this process, whose environment holds
// KILN_JOB_TOKEN=<token> exactly. Zombies (whose environment is gone) are not included.
// `token` is the whole value (exact) or the start of it (prefix: every job of one kiln run).
enum class TokenMatch { exact, prefix };
std::vector<pid_t> find_job_processes(std::string_view token, TokenMatch match = TokenMatch::exact);

// The KILN_JOB_TOKEN of a process of this host ("" when it has none, is gone, or its
// environment cannot be read), and "pid 1234 (python3)" for messages.
std::string job_token_of(pid_t pid);
std::string describe_process(pid_t pid);

// Kills every process find_job_processes() finds, and their process groups, and scans again
// until none is left (a process may fork while we kill) or `patience` has passed. Returns one
// description per killed process, "pid 1234 (sleep)", for the job log; a process still there
// after `patience` (stuck in the kernel) is reported as "pid 1234 (name) did not die".
// An empty token is an error: it would match nothing useful and may be a bug in the caller.
Result<std::vector<std::string>> kill_job_processes(
    std::string_view token, std::chrono::milliseconds patience = std::chrono::seconds(2),
    TokenMatch match = TokenMatch::exact);

// Starts a watchdog that outlives this process: once this process ends, however it ends (kill -9
// included), the watchdog kills every process whose KILN_JOB_TOKEN starts with `prefix`, so a
// crashed kiln leaks no job process. The watchdog is `program` (this kiln binary) run as
// `kiln internal-reaper PREFIX` in its own session (Ctrl-C does not reach it); its standard
// input is a pipe whose write end only this process holds (close-on-exec), so it reads EOF
// exactly when this process is gone.
Status start_orphan_reaper(const std::filesystem::path& program, const std::string& prefix);

// The watchdog's side: waits for EOF on standard input, then kills the prefix's processes.
int run_orphan_reaper(const std::string& prefix);

}  // namespace kiln::exec
