#include "kiln/workflow/model.h"

#include <algorithm>

namespace kiln::workflow {

std::string Step::default_name() const {
  auto ids = [this] {
    std::string joined;
    for (const Text& id : target_ids) joined += (joined.empty() ? "" : ", ") + id.value;
    return joined;
  };
  switch (kind) {
    case StepKind::wait:
      return parallel_group ? "Wait for the parallel group" : "Wait for " + ids();
    case StepKind::wait_all:
      return "Wait for all background steps";
    case StepKind::cancel:
      return "Cancel " + ids();
    case StepKind::work:
      break;
  }
  if (uses) return "Run " + uses->value;
  if (run) return "Run " + run->value.substr(0, run->value.find('\n'));
  return "Step " + std::to_string(index + 1);
}

const Job* Workflow::find_job(std::string_view id) const {
  if (!job_index.empty()) {
    auto found = job_index.find(id);
    return found == job_index.end() || found->second >= jobs.size() ? nullptr
                                                                    : &jobs[found->second];
  }
  auto it = std::ranges::find(jobs, id, &Job::id);
  return it == jobs.end() ? nullptr : &*it;
}

const Trigger* Workflow::find_trigger(std::string_view event) const {
  auto it = std::ranges::find(on, event, &Trigger::event);
  return it == on.end() ? nullptr : &*it;
}

}  // namespace kiln::workflow

namespace kiln::workflow {

const InputSpec* Trigger::find_input(std::string_view name) const {
  auto it = std::ranges::find(inputs, name, &InputSpec::name);
  return it == inputs.end() ? nullptr : &*it;
}

const SecretSpec* Trigger::find_secret(std::string_view name) const {
  auto it = std::ranges::find(secrets, name, &SecretSpec::name);
  return it == secrets.end() ? nullptr : &*it;
}

}  // namespace kiln::workflow
