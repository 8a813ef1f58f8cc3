// GPU placement of queued instances (scheduler.h): leases through the GpuSupervisor, best
// connected first, and the environment that shows a job exactly its GPUs.

#include <fmt/format.h>

#include "kiln/engine/schedule/scheduler.h"
#include "kiln/exec/process_tracker.h"

namespace kiln::engine {

// Leases the GPUs an instance asks for, best connected first. False when it must wait; an
// instance this host can never serve fails at once with the reason.
bool Scheduler::place_on_gpus(Instance& instance, std::optional<gpu::QueuePass>& pass) {
  if (instance.token.empty()) instance.token = job_token(instance);
  if (!instance.gpu_request.wants_gpus()) return true;
  auto fail_instance = [&](const std::string& reason) {
    finish_instance_now(instance, Conclusion::failure, reason);
    maybe_finish_node(*instance.node->workflow, *instance.node);
    return false;
  };
  if (!pass) {
    std::vector<std::string> notes;
    auto snapshot = gpus_.snapshot(notes);
    for (const auto& note : notes) observer_.warning(note);
    if (!snapshot) return fail_instance(snapshot.error().to_string());
    // The GPUs and links never change within a run: one Topology over pass_inventory_, whose
    // live state (memory, processes) each pass refreshes in place.
    pass_inventory_ = std::move(snapshot->inventory);
    if (!topology_) topology_ = std::make_unique<gpu::Topology>(pass_inventory_);
    pass.emplace(*topology_, std::move(snapshot->unavailable));
  }
  auto decision = pass->place(instance.gpu_request);
  if (decision.verdict == gpu::Verdict::wait) {
    if (!instance.said_waiting) {
      instance.said_waiting = true;
      observer_.job_line(shown(instance), "kiln", "waiting for GPUs: " + decision.reason);
    }
    return false;
  }
  if (decision.verdict == gpu::Verdict::never)
    return fail_instance(fmt::format("{}: runs-on asks for {}: {}", instance.gpu_where.to_string(),
                                     instance.gpu_request.to_string(), decision.reason));
  const auto& wf = *instance.node->workflow;
  store::GpuLease lease;
  lease.holder = masker_.mask(fmt::format("{}: {} / {} (run {})", repo_.root.filename().string(),
                                          wf.selected->name, instance.planned.key, wf.run.id));
  lease.job_token = instance.token;
  lease.run_id = wf.run.id;
  auto leased = gpus_.lease(decision.gpus, lease);
  if (!leased) return fail_instance(leased.error().to_string());
  if (!*leased) {  // another kiln process took one of them meanwhile
    if (!instance.said_waiting) {
      instance.said_waiting = true;
      observer_.job_line(shown(instance), "kiln",
                         "waiting for GPUs: another kiln process holds them");
    }
    return false;
  }
  instance.gpus.clear();
  for (int index : decision.gpus)
    instance.gpus.push_back(pass_inventory_.gpus.at(static_cast<std::size_t>(index)));
  return true;
}

// The environment that shows a job exactly its GPUs (DESIGN.md "GPU requests").
std::map<std::string, std::string> Scheduler::gpu_environment(const Instance& instance) const {
  std::map<std::string, std::string> env;
  std::string uuids, ordinals;
  bool amd = false;
  for (size_t i = 0; i < instance.gpus.size(); ++i) {
    const auto& info = instance.gpus[i];
    uuids += (i ? "," : "") + info.uuid;
    ordinals += (i ? "," : "") + std::to_string(i);
    amd = amd || info.vendor == "amd";
  }
  env["KILN_GPUS"] = std::to_string(instance.gpus.size());
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

}  // namespace kiln::engine
