#include "kiln/engine/place/placer.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::engine {

std::map<std::string, std::string> device_environment(const std::vector<gpu::GpuInfo>& gpus) {
  std::map<std::string, std::string> env;
  std::string uuids, ordinals;
  bool amd = false;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const auto& info = gpus[i];
    uuids += (i ? "," : "") + info.uuid;
    ordinals += (i ? "," : "") + std::to_string(i);
    amd = amd || info.vendor == "amd";
  }
  env["KILN_GPUS"] = std::to_string(gpus.size());
  env["KILN_GPU_UUIDS"] = uuids;
  if (amd) {
    env["ROCR_VISIBLE_DEVICES"] = uuids;
    env["HIP_VISIBLE_DEVICES"] = ordinals;
  } else {
    // Empty for a job that asked for no GPU: CUDA then sees none.
    env["CUDA_VISIBLE_DEVICES"] = uuids;
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  }
  return env;
}

namespace {

// The GPUs of `inventory` a pin leaves out: another model or driver, or, when the host has every
// pinned UUID, any other GPU.
std::set<int> outside_pin(const gpu::Inventory& inventory, const RunOptions::GpuPin& pin) {
  auto has = [](const std::vector<std::string>& list, const std::string& value) {
    return std::find(list.begin(), list.end(), value) != list.end();
  };
  bool all_uuids = !pin.uuids.empty();
  for (const auto& uuid : pin.uuids)
    all_uuids = all_uuids && std::any_of(inventory.gpus.begin(), inventory.gpus.end(),
                                         [&](const gpu::GpuInfo& g) { return g.uuid == uuid; });
  std::set<int> out;
  for (std::size_t i = 0; i < inventory.gpus.size(); ++i) {
    const auto& g = inventory.gpus[i];
    const bool same_testbed = (pin.models.empty() || has(pin.models, g.model)) &&
                              (pin.driver.empty() || g.driver_version == pin.driver);
    if (!same_testbed || (all_uuids && !has(pin.uuids, g.uuid))) out.insert(static_cast<int>(i));
  }
  return out;
}

}  // namespace

Placement HostPlacer::place(const PlaceRequest& request) {
  Placement placement;
  if (!pass_) {
    auto snapshot = supervisor_.snapshot(placement.warnings);
    if (!snapshot) {
      placement.verdict = Placement::Verdict::error;
      placement.reason = snapshot.error().to_string();
      return placement;
    }
    // The GPUs and links never change within a run: one Topology over pass_inventory_, whose
    // live state (memory, processes) each pass refreshes in place.
    pass_inventory_ = std::move(snapshot->inventory);
    if (!topology_) {
      topology_ = std::make_unique<gpu::Topology>(pass_inventory_);
      if (pin_) {
        unpinned_ = outside_pin(pass_inventory_, *pin_);
        pinned_ = pass_inventory_.gpus.size() - unpinned_.size();
        pin_reason_ = fmt::format(
            "this host has {} GPU(s) of the bisected testbed ({}, driver {}{})", pinned_,
            fmt::join(pin_->models, ", "), pin_->driver.empty() ? "any" : pin_->driver,
            pin_->uuids.empty() ? "" : fmt::format("; GPUs {}", fmt::join(pin_->uuids, ", ")));
      }
    }
    auto unavailable = std::move(snapshot->unavailable);
    unavailable.insert(unpinned_.begin(), unpinned_.end());
    pass_.emplace(*topology_, std::move(unavailable));
  }
  if (pin_ && request.gpus.wants_gpus() &&
      (pinned_ == 0 || static_cast<std::size_t>(request.gpus.count) > pinned_)) {
    placement.verdict = Placement::Verdict::never;
    placement.reason =
        fmt::format("the job asks for {}, but {}", request.gpus.to_string(), pin_reason_);
    return placement;
  }
  auto decision = pass_->place(request.gpus);
  if (decision.verdict == gpu::Verdict::wait) {
    placement.verdict = Placement::Verdict::wait;
    placement.reason = decision.reason;
    return placement;
  }
  if (decision.verdict == gpu::Verdict::never) {
    placement.verdict = Placement::Verdict::never;
    placement.reason = decision.reason;
    return placement;
  }
  store::GpuLease lease;
  lease.holder = masker_.mask(request.holder);
  lease.job_token = request.job_token;
  lease.run_id = request.run_id;
  auto leased = supervisor_.lease(decision.gpus, lease);
  if (!leased) {
    placement.verdict = Placement::Verdict::error;
    placement.reason = leased.error().to_string();
    return placement;
  }
  if (!*leased) {  // another kiln process took one of them meanwhile
    placement.verdict = Placement::Verdict::wait;
    placement.reason = "another kiln process holds them";
    return placement;
  }
  placement.verdict = Placement::Verdict::granted;
  for (int index : decision.gpus)
    placement.gpus.push_back(pass_inventory_.gpus.at(static_cast<std::size_t>(index)));
  return placement;
}

}  // namespace kiln::engine
