#include "kiln/container/check.h"

#include "kiln/container/options.h"
#include "kiln/workflow/expr/expr.h"

namespace kiln::container {
namespace {

void check_one(const workflow::Container& spec, const ContainerPolicy& policy,
               workflow::Diagnostics& out) {
  if (spec.options && !expr::has_template(spec.options->value)) {
    auto options = parse_options(spec.options->value, spec.options->where, policy);
    if (!options)
      out.push_back({workflow::Severity::error, options.error().where, options.error().message});
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
    if (job.container) check_one(*job.container, policy, out);
    for (const auto& [key, service] : job.services) check_one(service, policy, out);
  }
  return out;
}

}  // namespace kiln::container
