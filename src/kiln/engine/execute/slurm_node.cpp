#include "kiln/engine/execute/slurm_node.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::engine {
namespace {

// sinfo's %E shows the whole reason, but a reason is for people: one line, a few clauses.
constexpr std::size_t k_max_reason = 200;

std::string value_of(const core::Environment& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

std::string gpu_name(const gpu::GpuInfo& gpu) {
  return fmt::format("GPU {} ({})", gpu.index, gpu.uuid);
}

}  // namespace

Result<std::vector<int>> slurm_allocated_gpus(const core::Environment& env) {
  std::string name = "SLURM_JOB_GPUS";
  std::string list = value_of(env, name);
  for (const char* fallback : {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"})
    if (list.empty()) list = value_of(env, name = fallback);
  std::vector<int> out;
  if (list.empty()) return out;
  std::istringstream items(list);
  for (std::string item; std::getline(items, item, ',');) {
    int index = -1;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), index);
    if (ec != std::errc() || end != item.data() + item.size() || index < 0)
      return make_error(ErrorCode::invalid_input,
                        fmt::format("{}={}: not a list of GPU indexes of the node", name, list));
    out.push_back(index);
  }
  return out;
}

std::string slurm_drain_reason(const std::string& what, const std::string& slurm_job) {
  std::string text = what;
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r' || c == '"'; }, ' ');
  const std::string tail = slurm_job.empty() ? "" : fmt::format(" (Slurm job {})", slurm_job);
  const std::size_t room = k_max_reason - std::min(k_max_reason, tail.size() + 6);
  if (text.size() > room) text = text.substr(0, room - 3) + "...";
  return "kiln: " + text + tail;
}

SlurmNodeGpus::SlurmNodeGpus(SlurmNodeSetup setup)
    : setup_(std::move(setup)), supervisor_(*setup_.options) {}

BeforeJob SlurmNodeGpus::before_job(const store::GpuLease& lease) {
  BeforeJob found;
  if (setup_.allocated.empty()) return found;
  std::vector<std::string> notes;
  auto snapshot = supervisor_.snapshot(notes, true);
  for (const auto& note : notes) found.lines.push_back({"warning", note});
  if (!snapshot) {
    std::vector<std::string> problems = {
        fmt::format("the node's GPUs could not be checked: {}", snapshot.error().message)};
    drain(problems, found.lines);
    found.problem = problems.front();
    return found;
  }
  const auto& inventory = snapshot->inventory;
  if (inventory.gpus.empty()) {
    found.lines.push_back(
        {"warning", fmt::format("no GPU provider of node {} lists a GPU: the health of Slurm's "
                                "GPUs {} is not checked",
                                setup_.node, fmt::join(setup_.allocated, ","))});
    return found;
  }
  auto states = supervisor_.states();
  std::vector<std::string> problems;
  for (int index : setup_.allocated) {
    if (index >= static_cast<int>(inventory.gpus.size())) {
      problems.push_back(fmt::format("Slurm allocated GPU {}, but the node's {} provider lists {}",
                                     index, inventory.provider, inventory.gpus.size()));
      continue;
    }
    const gpu::GpuInfo& gpu = inventory.gpus[static_cast<std::size_t>(index)];
    gpus_.push_back(gpu);
    if (!snapshot->unavailable.contains(index)) continue;
    const GpuState* state = states && static_cast<std::size_t>(index) < states->size()
                                ? &(*states)[static_cast<std::size_t>(index)]
                                : nullptr;
    problems.push_back(fmt::format("{} failed its health check before the job: {}{}", gpu_name(gpu),
                                   state ? std::string(gpu_state_name(state->kind)) : "unavailable",
                                   state && !state->detail.empty() ? ": " + state->detail : ""));
  }
  if (problems.empty()) {
    std::vector<int> indexes;
    for (const auto& gpu : gpus_) indexes.push_back(gpu.index);
    auto leased = supervisor_.lease(indexes, lease);
    if (leased && *leased) return found;
    // Held by another kiln process of this host: a kiln problem, not the GPU's; no drain.
    found.problem = leased ? "another kiln process of the node holds the job's GPUs"
                           : "cannot lease the job's GPUs: " + leased.error().message;
    return found;
  }
  drain(problems, found.lines);
  found.problem = fmt::format("{}", fmt::join(problems, "; "));
  return found;
}

AfterJob SlurmNodeGpus::after_job(const std::string& token) {
  AfterJob found = supervisor_.after_job(token);
  if (!found.quarantined.empty()) drain(found.quarantined, found.lines);
  return found;
}

void SlurmNodeGpus::drain(const std::vector<std::string>& problems,
                          std::vector<JobLogLine>& lines) {
  if (setup_.node.empty()) {
    lines.push_back({"warning", "no SLURMD_NODENAME: the node cannot be drained"});
    return;
  }
  const std::string reason =
      slurm_drain_reason(fmt::format("{}", fmt::join(problems, "; ")), setup_.slurm_job);
  auto drained = core::run_command(
      {setup_.scontrol, "update", "NodeName=" + setup_.node, "State=DRAIN", "Reason=" + reason}, {},
      std::nullopt, std::chrono::minutes(1));
  if (drained && drained->ok()) {
    lines.push_back({"warning", fmt::format("Drained Slurm node {}: {}", setup_.node, reason)});
    return;
  }
  std::string why = !drained ? drained.error().message
                             : (drained->err.empty() ? drained->out : drained->err) + " (" +
                                   drained->status.to_string() + ")";
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  lines.push_back({"warning", fmt::format("cannot drain Slurm node {} (the user jobs run as needs "
                                          "Slurm operator rights): scontrol: {}",
                                          setup_.node, why)});
}

}  // namespace kiln::engine
