#include "kiln/container/check.h"

#include "kiln/container/gpu_flags.h"
#include "kiln/container/options.h"
#include "kiln/workflow/expr/expr.h"

namespace kiln::container {
namespace {

void check_one(const workflow::Container& spec, const ContainerPolicy& policy, bool job_container,
               workflow::Diagnostics& out) {
  if (spec.options && !expr::has_template(spec.options->value)) {
    auto options = parse_options(spec.options->value, spec.options->where, policy);
    if (!options)
      out.push_back({workflow::Severity::error, options.error().where, options.error().message});
    else if (job_container && dri_without_kfd(options->dropped_devices))
      out.push_back({workflow::Severity::warning, spec.options->where,
                     "--device /dev/dri without /dev/kfd asks for no GPU (Intel GPUs use /dev/dri "
                     "too): for AMD GPUs add --device /dev/kfd, or a runs-on label such as "
                     "gpu-vendor:amd"});
  }
  for (const auto& volume : spec.volumes) {
    if (expr::has_template(volume.value)) continue;
    if (auto why = refused_volume(volume.value))
      out.push_back({workflow::Severity::error, volume.where,
                     fmt::format("volume '{}' is refused: {}", volume.value, *why)});
  }
}

}  // namespace

workflow::Diagnostics check_containers(const workflow::Workflow& workflow,
                                       const ContainerPolicy& policy) {
  workflow::Diagnostics out;
  for (const auto& job : workflow.jobs) {
    if (job.container) check_one(*job.container, policy, true, out);
    for (const auto& [key, service] : job.services) check_one(service, policy, false, out);
  }
  return out;
}

}  // namespace kiln::container
