// Checks of a job against this host before it runs (planner.h): runner labels, GPU requests,
// timeout-minutes.

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/container/gpu_flags.h"
#include "kiln/engine/plan/planner.h"
#include "kiln/gpu/allocator.h"
#include "kiln/gpu/request.h"
#include "kiln/workflow/yaml_reader.h"

namespace kiln::engine {

SourceLocation gpu_request_where(std::span<const gpu::GpuLabel> labels,
                                 const SourceLocation& runs_on, const SourceLocation& options) {
  auto from_labels = gpu::parse_gpu_request(labels);
  if (from_labels && !from_labels->wants_gpus() && !options.empty()) return options;
  for (const auto& label : labels)
    if (gpu::is_grammar_label(label.value)) return label.where;
  return runs_on;
}

Result<gpu::GpuRequest> job_gpu_request(std::span<const gpu::GpuLabel> labels,
                                        const std::optional<std::string>& container_options) {
  KILN_TRY(auto request, gpu::parse_gpu_request(labels));
  if (request.wants_gpus() || !container_options) return request;
  return container::gpu_request_from_options(*container_options).value_or(request);
}

Status check_served_labels(std::span<const gpu::GpuLabel> labels, const gpu::GpuLabelMap& host) {
  for (const auto& label : labels) {
    if (host.serves(label.value)) continue;
    std::vector<std::string> names = gpu::GpuLabelMap::builtin_labels();
    for (const auto& pattern : host.patterns())
      if (pattern.find('{') == std::string::npos) names.push_back(pattern);
    std::vector<std::string_view> candidates(names.begin(), names.end());
    return fail_at(label.where,
                   "runs-on label '{}' is not a label this host serves{} (it serves {}, the GPU "
                   "labels gpu, gpu:N, gpu-vendor:..., and the labels of kiln.yml); map it in "
                   "kiln.yml (labels: or gpus.labels:) or pass --label '{}' or --label "
                   "'{}=REQUEST'",
                   label.value, workflow::detail::suggestion(label.value, candidates),
                   fmt::join(gpu::GpuLabelMap::builtin_labels(), ", "), label.value, label.value);
  }
  return {};
}

Result<std::vector<gpu::GpuLabel>> instance_labels(const workflow::RunsOn& runs_on,
                                                   const expr::Context& context) {
  std::vector<gpu::GpuLabel> labels;
  for (const auto& label : runs_on.labels) {
    KILN_TRY(auto value, expr::evaluate_template(label.value, context, label.where));
    if (!value.is_array()) {
      labels.push_back({expr::to_text(value), label.where});
      continue;
    }
    for (const auto& item : value) {
      if (item.is_array() || item.is_object())
        return fail_at(label.where, "runs-on: '{}' gives {}, not a list of labels", label.value,
                       value.dump());
      labels.push_back({expr::to_text(item), label.where});
    }
  }
  return labels;
}

Result<double> parse_timeout_minutes(const std::string& text, const SourceLocation& where) {
  char* end = nullptr;
  double minutes = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(minutes) || minutes <= 0)
    return fail_at(where, "timeout-minutes must be a positive number, got '{}'", text);
  if (minutes > k_max_timeout_minutes)
    return fail_at(where, "timeout-minutes {} is out of range: at most {} (a year)", text,
                   k_max_timeout_minutes);
  return minutes;
}

workflow::Diagnostics check_job_settings(const workflow::Workflow& workflow,
                                         const gpu::GpuLabelMap& custom,
                                         const gpu::Inventory* inventory,
                                         const config::SlurmConfig* slurm) {
  workflow::Diagnostics diagnostics;
  auto check_timeout = [&](const std::optional<workflow::Text>& text) {
    if (!text || expr::has_template(text->value)) return;
    if (auto minutes = parse_timeout_minutes(text->value, text->where); !minutes)
      diagnostics.push_back(
          {workflow::Severity::error, minutes.error().where, minutes.error().message});
  };
  for (const auto& job : workflow.jobs) {
    check_timeout(job.timeout_minutes);
    for (const auto& step : job.steps) {
      check_timeout(step.timeout_minutes);
    }
    std::vector<gpu::GpuLabel> labels;
    bool templated = false;
    for (const auto& label : job.runs_on.labels) {
      if (expr::has_template(label.value))
        templated = true;
      else
        labels.push_back({label.value, label.where});
    }
    if (auto served = check_served_labels(labels, custom); !served) {
      diagnostics.push_back(
          {workflow::Severity::error, served.error().where, served.error().message});
      continue;
    }
    auto expanded = custom.expand(labels);
    std::optional<std::string> options;
    SourceLocation options_where;
    if (job.container && job.container->expression) templated = true;
    if (job.container && job.container->options) {
      options_where = job.container->options->where;
      if (expr::has_template(job.container->options->value))
        templated = true;
      else
        options = job.container->options->value;
    }
    auto request = job_gpu_request(expanded, options);
    if (!request) {
      const auto& error = request.error();
      diagnostics.push_back({workflow::Severity::error,
                             error.where.empty() ? job.runs_on.where : error.where, error.message});
      continue;
    }
    // A label from a matrix may still add to the request: only whole requests are judged.
    if (templated) continue;
    // A job of a Slurm pool goes to the pool's nodes, not this host's GPUs.
    std::vector<std::string> values;
    for (const auto& label : labels) values.push_back(label.value);
    if (const config::SlurmPool* pool = slurm ? slurm->pool_for(values) : nullptr) {
      if (auto why = pool->never_placed(*request))
        diagnostics.push_back({workflow::Severity::error,
                               gpu_request_where(expanded, job.runs_on.where, options_where),
                               fmt::format("job '{}' asks for {}, which Slurm can never place: {}",
                                           job.id, request->to_string(), *why)});
      continue;
    }
    if (!inventory || !request->wants_gpus()) continue;
    auto decision = gpu::choose_gpus(*inventory, {}, *request);
    if (decision.verdict != gpu::Verdict::never) continue;
    SourceLocation where = gpu_request_where(expanded, job.runs_on.where, options_where);
    diagnostics.push_back(
        {workflow::Severity::error, where,
         fmt::format("job '{}' asks for {}: {}", job.id, request->to_string(), decision.reason)});
  }
  return diagnostics;
}

}  // namespace kiln::engine
