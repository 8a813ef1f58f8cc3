#include "kiln/workflow/model.h"

#include <algorithm>

namespace kiln::workflow {

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
