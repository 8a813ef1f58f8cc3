#pragma once
// Who owns a run, and whether that owner still lives: the store's way to tell a run whose
// `kiln run` was killed (kill -9, power cut of the shell, OOM killer) from one still running
// in another process. Linux /proc based.

#include <string>

#include "kiln/core/result.h"
#include "kiln/store/records.h"

namespace kiln::store {

// This process: getpid(), its start time, gethostname().
ProcessIdentity current_process();

// Another process of this host by pid; not_found when no such process exists.
Result<ProcessIdentity> identify_process(int pid);

// The host name runs are recorded with (gethostname, "" if that fails).
std::string host_name();

// True when a process with owner.pid exists, is not a zombie, and (when owner.start_time is
// known) started at owner.start_time, i.e. the pid has not been reused. Only meaningful for
// owners of this host.
bool is_process_alive(const ProcessIdentity& owner);

}  // namespace kiln::store
