#include "kiln/engine/place/placer.h"

#include <fmt/format.h>

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
    if (!topology_) topology_ = std::make_unique<gpu::Topology>(pass_inventory_);
    pass_.emplace(*topology_, std::move(snapshot->unavailable));
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
