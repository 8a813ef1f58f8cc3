#pragma once
// The clock trigger of `kiln serve`: workflows with `on.schedule` on a repository's default
// branch fire by themselves, as on GitHub.
//
// - Every configured repository's default branch (the remote's HEAD) is read at start and then
//   every k_schedule_refresh (or its poll interval, when shorter): `git ls-remote --symref`, a
//   fetch of that commit into work_dir/schedules/OWNER/NAME.git, and its .github/workflows
//   files loaded as `kiln validate` loads them (a file with errors schedules nothing; the error
//   is logged once per commit).
// - Each `cron:` line fires in its `timezone:` (UTC without one; daylight-saving days as
//   workflow/cron.h says). A firing becomes a queued `schedule` trigger of that one workflow at
//   the default branch's commit, github.event.schedule the cron text, github.event.workflow
//   the file. Its delivery id is "schedule:OWNER/NAME:FILE:INDEX:UNIX-SECONDS", so a firing is
//   run once even when the server restarts within its minute.
// - Firings missed while the server was down are not made up (GitHub does not either); the
//   first firing after a start is the next one after that start.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/config/host_config.h"
#include "kiln/core/result.h"
#include "kiln/store/store.h"
#include "kiln/workflow/schedule.h"

namespace kiln::server {

inline constexpr std::chrono::minutes k_schedule_refresh{5};

// The default branch of `remote` (HEAD's target, e.g. refs/heads/main) and its commit.
struct RemoteHead {
  std::string ref;
  std::string sha;
};
Result<RemoteHead> remote_head(const std::string& remote);

// The delivery id of one firing.
std::string schedule_delivery(const std::string& repository, const std::string& workflow_file,
                              std::size_t index, std::chrono::sys_seconds at);

class ScheduleClock {
 public:
  using Now = std::function<std::chrono::sys_seconds()>;
  // `now` is the wall clock (system_clock by default; tests give their own). `enqueue` is
  // called with each trigger the clock created as queued.
  ScheduleClock(const config::ServeConfig& serve, store::Store& store,
                std::filesystem::path work_dir, std::function<void(std::int64_t)> enqueue,
                Now now = {});
  ~ScheduleClock();  // stop()

  // Starts the clock's thread when repositories are configured.
  void start();
  void stop();

  // Reads the repository's default branch and its schedules again. Entries that still exist
  // keep their next firing; new ones fire first after now().
  Status refresh(const config::ServeRepository& repository);
  // Creates the triggers of every firing due at now() and moves each entry to its next firing;
  // returns the triggers' ids.
  std::vector<std::int64_t> fire_due();
  // The next firing of any entry (max() when none).
  std::chrono::sys_seconds next_firing() const;

 private:
  struct Entry {
    std::string repository;
    std::string workflow_file;  // relative to the repository: .github/workflows/x.yml
    workflow::Schedule schedule;
    std::chrono::sys_seconds next;
  };
  struct Head {
    RemoteHead head;
    std::vector<std::string> logged;  // the errors already logged for head.sha
  };
  void loop();
  Result<std::vector<Entry>> read_schedules(const config::ServeRepository& repository,
                                            const RemoteHead& head, Head& state);

  const config::ServeConfig& serve_;
  store::Store& store_;
  std::filesystem::path work_dir_;
  std::function<void(std::int64_t)> enqueue_;
  Now now_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, Head> heads_;  // by repository
  std::vector<Entry> entries_;
  std::thread thread_;
};

}  // namespace kiln::server
