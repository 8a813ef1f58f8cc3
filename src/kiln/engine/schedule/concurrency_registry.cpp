#include "kiln/engine/schedule/concurrency_registry.h"

#include <fmt/core.h>

namespace kiln::engine {

std::string ConcurrencyRegistry::global_id(int owner, const std::string& id) {
  return fmt::format("{}#{}", owner, id);
}

std::pair<int, std::string> ConcurrencyRegistry::split(const std::string& global) {
  const auto hash = global.find('#');
  return {std::stoi(global.substr(0, hash)), global.substr(hash + 1)};
}

int ConcurrencyRegistry::join(Listener& listener) {
  std::lock_guard lock(mutex_);
  const int owner = next_owner_++;
  listeners_[owner] = &listener;
  return owner;
}

void ConcurrencyRegistry::leave(int owner) {
  std::lock_guard lock(mutex_);
  listeners_.erase(owner);
  auto claims = claims_.find(owner);
  if (claims == claims_.end()) return;
  for (const auto& [group, id] : claims->second)
    if (auto promoted = groups_.release(group, global_id(owner, id)))
      route(owner, *promoted, /*grant=*/true, group);
  claims_.erase(claims);
}

std::optional<std::string> ConcurrencyRegistry::route(int owner, const std::string& global,
                                                      bool grant, std::string_view group) {
  auto [target, id] = split(global);
  if (target == owner) return id;
  if (auto it = listeners_.find(target); it != listeners_.end()) {
    if (grant)
      it->second->granted(id);
    else
      it->second->cancelled(id, std::string(group));
  }
  return std::nullopt;
}

ConcurrencyRegistry::Decision ConcurrencyRegistry::request(int owner, std::string_view group,
                                                           const std::string& id,
                                                           bool cancel_in_progress) {
  std::lock_guard lock(mutex_);
  auto decision = groups_.request(group, global_id(owner, id), cancel_in_progress);
  claims_[owner].emplace(std::string(group), id);
  Decision own;
  own.start_now = decision.start_now;
  for (const auto& global : decision.cancel)
    if (auto local = route(owner, global, /*grant=*/false, group)) own.cancel.push_back(*local);
  return own;
}

std::optional<std::string> ConcurrencyRegistry::release(int owner, std::string_view group,
                                                        const std::string& id) {
  std::lock_guard lock(mutex_);
  if (auto claims = claims_.find(owner); claims != claims_.end())
    claims->second.erase({std::string(group), id});
  auto promoted = groups_.release(group, global_id(owner, id));
  if (!promoted) return std::nullopt;
  return route(owner, *promoted, /*grant=*/true, group);
}

}  // namespace kiln::engine
