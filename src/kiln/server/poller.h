#pragma once
// Polling of git remotes for `kiln serve` (serve.repositories.*.poll in kiln.yml): for a forge
// that cannot reach the server with webhooks. Every `interval` the poller runs
// `git ls-remote` on the repository's clone_url; a watched branch whose commit changed since
// the last look becomes a push trigger, as a push webhook would.
//
// - The commit last seen per branch is kept in the store (Store::get_poll_head), so commits
//   pushed while the server was down trigger at the next start, and nothing triggers twice.
// - The first sight of a branch records its commit and triggers nothing: like a webhook that
//   was just added, polling reports pushes from then on, not the history before it.
// - The trigger's delivery id is "poll:OWNER/NAME:REF:SHA", so a commit is run once per branch
//   even if the recorded head was lost (the store's delivery de-duplication).
// - A branch that disappears is forgotten by nothing: its recorded commit stays, and a branch
//   re-created on another commit triggers that commit.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kiln/config/host_config.h"
#include "kiln/core/result.h"
#include "kiln/core/thread_annotations.h"
#include "kiln/store/store.h"

namespace kiln::server {

// The commits of `refs` (full names) on `remote` by `git ls-remote`: ref -> sha. Refs the
// remote does not have are absent. io_error when git fails (an unreachable remote).
Result<std::map<std::string, std::string>> ls_remote(const std::string& remote,
                                                     const std::vector<std::string>& refs);

// The delivery id of a polled commit: "poll:OWNER/NAME:REF:SHA".
std::string poll_delivery(const std::string& repository, const std::string& ref,
                          const std::string& sha);

class Poller {
 public:
  // `enqueue` is called with each trigger the poller created as queued.
  Poller(const config::ServeConfig& serve, store::Store& store,
         std::function<void(std::int64_t)> enqueue);
  ~Poller();  // stop()

  // Starts the polling thread when a repository has `poll:`; the first round runs at once.
  void start() EXCLUDES(mutex_);
  // Stops the thread (a round in progress finishes first).
  void stop() EXCLUDES(mutex_);

  // One look at one repository: records first sights, creates a trigger per new commit of a
  // watched branch (handed to `enqueue`) and returns the new triggers' ids.
  Result<std::vector<std::int64_t>> poll_once(const config::ServeRepository& repository);

 private:
  void loop() EXCLUDES(mutex_);

  const config::ServeConfig& serve_;
  store::Store& store_;
  std::function<void(std::int64_t)> enqueue_;
  Mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace kiln::server
