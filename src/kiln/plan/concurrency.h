#pragma once
// GitHub's concurrency groups, as pure logic: at most one run (or job) holds a group and at
// most one waits for it. A newcomer to a busy group becomes the pending one and the pending one
// it replaces is cancelled; with cancel-in-progress the holder is cancelled too (the newcomer
// still waits until the holder has released the group, so the two never overlap). Group names
// are case-insensitive. The caller owns the effects: it cancels what a Decision lists and
// starts what release() hands back. Thread-safe; no I/O.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::plan {

class ConcurrencyGroups {
 public:
  struct Decision {
    bool start_now = false;           // the newcomer holds the group now
    std::vector<std::string> cancel;  // ids to cancel: the replaced pending one, the holder
  };

  // A run or job `id` asks for `group` (non-empty). An id already holding or waiting for the
  // group is answered as it stands, without change.
  Decision request(std::string_view group, const std::string& id, bool cancel_in_progress);

  // `id` is done with `group`: finished or cancelled, while holding or while pending. Returns
  // the pending id that holds the group from now on and may start, if any.
  std::optional<std::string> release(std::string_view group, const std::string& id);

  std::optional<std::string> holder(std::string_view group) const;
  std::optional<std::string> pending(std::string_view group) const;
  size_t busy_groups() const;  // groups with a holder or a pending id

 private:
  struct Slot {
    std::optional<std::string> holder, pending;
  };
  static std::string key(std::string_view group);

  mutable std::mutex mutex_;
  std::map<std::string, Slot> groups_;  // guarded by mutex_; idle groups are erased
};

}  // namespace kiln::plan
