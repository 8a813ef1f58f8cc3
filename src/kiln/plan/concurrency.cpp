#include "kiln/plan/concurrency.h"

#include <cctype>

namespace kiln::plan {

std::string ConcurrencyGroups::key(std::string_view group) {
  std::string folded(group);
  for (char& c : folded) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return folded;
}

ConcurrencyGroups::Decision ConcurrencyGroups::request(std::string_view group,
                                                       const std::string& id,
                                                       bool cancel_in_progress) {
  std::lock_guard lock(mutex_);
  Slot& slot = groups_[key(group)];
  Decision decision;
  if (slot.holder == id) {
    decision.start_now = true;
    return decision;
  }
  if (slot.pending == id) return decision;
  if (!slot.holder) {
    slot.holder = id;
    decision.start_now = true;
    return decision;
  }
  if (slot.pending) decision.cancel.push_back(*slot.pending);
  slot.pending = id;
  if (cancel_in_progress) decision.cancel.push_back(*slot.holder);
  return decision;
}

std::optional<std::string> ConcurrencyGroups::release(std::string_view group,
                                                      const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = groups_.find(key(group));
  if (it == groups_.end()) return std::nullopt;
  Slot& slot = it->second;
  std::optional<std::string> promoted;
  if (slot.pending == id) {
    slot.pending.reset();
  } else if (slot.holder == id) {
    slot.holder = std::move(slot.pending);
    slot.pending.reset();
    promoted = slot.holder;
  }
  if (!slot.holder && !slot.pending) groups_.erase(it);
  return promoted;
}

std::optional<std::string> ConcurrencyGroups::holder(std::string_view group) const {
  std::lock_guard lock(mutex_);
  auto it = groups_.find(key(group));
  return it == groups_.end() ? std::nullopt : it->second.holder;
}

std::optional<std::string> ConcurrencyGroups::pending(std::string_view group) const {
  std::lock_guard lock(mutex_);
  auto it = groups_.find(key(group));
  return it == groups_.end() ? std::nullopt : it->second.pending;
}

size_t ConcurrencyGroups::busy_groups() const {
  std::lock_guard lock(mutex_);
  return groups_.size();
}

}  // namespace kiln::plan
