#pragma once
// Concurrency groups shared by several engine runs in one process. `kiln run` runs one
// selection of workflows with one scheduler, whose groups hold among its own runs; `kiln serve`
// runs one engine call per trigger, so a workflow's `concurrency:` must hold across those calls.
// The registry wraps the one group logic (plan::ConcurrencyGroups) and remembers which engine
// call (owner) each claim belongs to, so that a decision that cancels or promotes another
// owner's claim reaches it.
//
// Locking: request()/release() may be called with the caller's own locks held. Effects on
// *other* owners go to their Listener under the registry's lock; a listener must only queue
// them (under a lock of its own that it never holds while calling the registry) and handle them
// on its own thread. Effects on the calling owner are returned, as plan::ConcurrencyGroups does.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/plan/concurrency.h"

namespace kiln::engine {

class ConcurrencyRegistry {
 public:
  class Listener {
   public:
    virtual ~Listener() = default;
    // The claim `id` of this owner holds its group now (the holder before it released it).
    virtual void granted(const std::string& id) = 0;
    // The claim `id` of this owner is to be cancelled: a newer claim replaced it as the pending
    // one, or a newer claim with cancel-in-progress wants the group it holds.
    virtual void cancelled(const std::string& id, const std::string& group) = 0;
  };

  struct Decision {
    bool start_now = false;
    std::vector<std::string> cancel;  // the calling owner's own ids to cancel
  };

  // A new owner; its ids need only be unique within the owner.
  int join(Listener& listener);
  // The owner is gone: what it still holds or waits for is released (promotions reach their
  // owners) and nothing is delivered to it any more.
  void leave(int owner);

  Decision request(int owner, std::string_view group, const std::string& id,
                   bool cancel_in_progress);
  // Returns the calling owner's id promoted to holder, if any (another owner's is delivered).
  std::optional<std::string> release(int owner, std::string_view group, const std::string& id);

  std::size_t busy_groups() const { return groups_.busy_groups(); }

 private:
  static std::string global_id(int owner, const std::string& id);
  static std::pair<int, std::string> split(const std::string& global);
  // Delivers `global` (another owner's) as granted or cancelled; returns the local id when it
  // is `owner`'s own. Called under mutex_.
  std::optional<std::string> route(int owner, const std::string& global, bool grant,
                                   std::string_view group);

  mutable std::mutex mutex_;
  plan::ConcurrencyGroups groups_;
  int next_owner_ = 1;
  std::map<int, Listener*> listeners_;
  std::map<int, std::set<std::pair<std::string, std::string>>> claims_;  // (group, local id)
};

}  // namespace kiln::engine
