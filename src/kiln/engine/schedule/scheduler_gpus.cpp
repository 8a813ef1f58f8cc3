// GPU placement of queued instances (scheduler.h), through the Placer: granted GPUs, a wait
// (said once per job), or a request this host can never serve (the job fails at once).

#include <fmt/format.h>

#include "kiln/engine/schedule/scheduler.h"

namespace kiln::engine {

using store::FailureClass;

// False when the instance must wait, or failed.
bool Scheduler::place_on_gpus(Instance& instance) {
  if (instance.token.empty()) instance.token = job_token(instance);
  if (!instance.gpu_request.wants_gpus()) return true;
  // A job for Slurm gets its GPUs from Slurm's allocation on the node, none of this host's.
  if (instance.on_slurm) return true;
  auto fail_instance = [&](const std::string& reason, FailureClass failure_class) {
    finish_instance_now(instance, Conclusion::failure, reason, failure_class);
    maybe_finish_node(*instance.node->workflow, *instance.node);
    return false;
  };
  const auto& wf = *instance.node->workflow;
  PlaceRequest request;
  request.gpus = instance.gpu_request;
  request.holder = fmt::format("{}: {} / {} (run {})", repo_.root.filename().string(),
                               wf.selected->name, instance.planned.key, wf.run.id);
  request.job_token = instance.token;
  request.run_id = wf.run.id;
  Placement placement = seams_.placer.place(request);
  for (const auto& note : placement.warnings) observer_.warning(note);
  switch (placement.verdict) {
    case Placement::Verdict::granted:
      instance.gpus = std::move(placement.gpus);
      return true;
    case Placement::Verdict::wait:
      if (!instance.said_waiting) {
        instance.said_waiting = true;
        observer_.job_line(shown(instance), "kiln", "waiting for GPUs: " + placement.reason);
      }
      return false;
    case Placement::Verdict::never:
      return fail_instance(
          fmt::format("{}: runs-on asks for {}: {}", instance.gpu_where.to_string(),
                      instance.gpu_request.to_string(), placement.reason),
          FailureClass::code);
    case Placement::Verdict::error:  // the GPU layer (provider, host store) failed
      return fail_instance(placement.reason, FailureClass::infra);
  }
  return false;
}

}  // namespace kiln::engine
