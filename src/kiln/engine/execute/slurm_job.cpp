#include "kiln/engine/execute/slurm_job.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "kiln/engine/execute/annotation_json.h"
#include "kiln/workflow/loader.h"

namespace kiln::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json strings_of(const std::map<std::string, std::string>& map) {
  json out = json::object();
  for (const auto& [k, v] : map) out[k] = v;
  return out;
}

std::map<std::string, std::string> map_of(const json& j) {
  std::map<std::string, std::string> out;
  if (j.is_object())
    for (const auto& [k, v] : j.items()) out[k] = v.get<std::string>();
  return out;
}

json pairs_of(const std::vector<std::pair<std::string, std::string>>& pairs) {
  json out = json::array();
  for (const auto& [k, v] : pairs) out.push_back({k, v});
  return out;
}

std::vector<std::pair<std::string, std::string>> pairs_from(const json& j) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& item : j)
    out.emplace_back(item.at(0).get<std::string>(), item.at(1).get<std::string>());
  return out;
}

json workflow_json(const SelectedWorkflow& wf) {
  return {{"path", wf.path.string()}, {"name", wf.name}};
}

Result<SelectedWorkflow> load_selected(const json& j, const fs::path& root) {
  SelectedWorkflow wf;
  wf.path = j.at("path").get<std::string>();
  wf.name = j.at("name").get<std::string>();
  fs::path file = wf.path.is_absolute() ? wf.path : root / wf.path;
  auto loaded = workflow::load_workflow_file(file, wf.path);
  if (!loaded.workflow)
    return make_error(ErrorCode::invalid_input,
                      fmt::format("the agent cannot load the job's workflow {} (the checkout the "
                                  "server planned from must be on a file system the node sees)",
                                  file.string()));
  wf.workflow = std::move(*loaded.workflow);
  return wf;
}

json amount_json(const gpu::MemoryAmount& amount) {
  return {{"mib", amount.mib}, {"percent", amount.percent}};
}

gpu::MemoryAmount amount_from(const json& j) {
  return {j.at("mib").get<std::uint64_t>(), j.at("percent").get<double>()};
}

}  // namespace

json to_json(const SlurmJobFile& job) {
  const JobSpec& s = job.spec;
  const RunOptions& o = job.options;
  json spec = {{"workflow", workflow_json(s.workflow)},
               {"triggered", workflow_json(s.triggered)},
               {"job_id", s.job_id},
               {"run_id", s.run_id},
               {"run_number", s.run_number},
               {"run_attempt", s.run_attempt},
               {"job_row", s.job_row},
               {"instance",
                {{"key", s.instance.key},
                 {"name", s.instance.name},
                 {"matrix", s.instance.matrix},
                 {"index", s.instance.index},
                 {"total", s.instance.total}}},
               {"shown_key", s.shown_key},
               {"labels", s.labels},
               {"contexts", s.contexts},
               {"workflow_env", pairs_of(s.workflow_env)},
               {"job_token", s.job_token},
               {"gpu_memory_budget_mib", s.gpu_memory_budget_mib},
               {"artifact_root", s.artifact_root.string()}};
  json options = {{"repository", o.repository.string()},
                  {"repository_name", o.repository_name},
                  {"event_name", o.event_name},
                  {"secrets", strings_of(o.secrets)},
                  {"extra_env", strings_of(o.extra_env)},
                  {"vars", strings_of(o.vars)},
                  {"actor", o.actor},
                  {"failure_lines", o.failure_lines},
                  {"keep_workspaces", o.keep_workspaces},
                  {"container_engine", o.container_engine},
                  {"pull_policy", o.pull_policy},
                  {"actions_mirror", o.actions_mirror ? o.actions_mirror->string() : ""},
                  {"artifact_dir", o.artifact_dir.string()},
                  {"job_token_prefix", o.job_token_prefix},
                  {"gpu_health",
                   {{"max_used_before_job", amount_json(o.gpu_health.max_used_before_job)},
                    {"memory_tolerance", amount_json(o.gpu_health.memory_tolerance)},
                    {"memory_grace_ms", o.gpu_health.memory_grace.count()},
                    {"provider_deadline_ms", o.gpu_health.provider_deadline.count()}}}};
  const RepositoryInfo& r = job.repo;
  json repo = {{"root", r.root.string()},
               {"name", r.name},
               {"head_sha", r.head_sha},
               {"head_ref", r.head_ref},
               {"parent_sha", r.parent_sha},
               {"default_branch", r.default_branch},
               {"author_name", r.author_name},
               {"author_email", r.author_email},
               {"subject", r.subject},
               {"head_changed_files", r.head_changed_files},
               {"work_tree_sha", r.work_tree_sha}};
  const plan::Event& e = job.event;
  json event = {{"name", e.name},
                {"action", e.action},
                {"ref", e.ref},
                {"sha", e.sha},
                {"before", e.before},
                {"base_ref", e.base_ref},
                {"head_ref", e.head_ref},
                {"changed_files", e.changed_files},
                {"changed_files_known", e.changed_files_known},
                {"inputs", strings_of(e.inputs)},
                {"schedule", e.schedule},
                {"payload", e.payload}};
  return {{"kiln_slurm_job", 1},
          {"spec", spec},
          {"options", options},
          {"repo", repo},
          {"event", event},
          {"store", job.store},
          {"kiln_dir", job.kiln_dir.string()},
          {"bin_dir", job.bin_dir.string()},
          {"simulate_gpus", job.simulate_gpus}};
}

Result<SlurmJobFile> slurm_job_from_json(const json& j) {
  SlurmJobFile job;
  try {
    if (j.value("kiln_slurm_job", 0) != 1)
      return make_error(ErrorCode::invalid_input, "not a kiln Slurm job file (kiln_slurm_job: 1)");
    const json& r = j.at("repo");
    RepositoryInfo& repo = job.repo;
    repo.root = r.at("root").get<std::string>();
    repo.name = r.at("name");
    repo.head_sha = r.at("head_sha");
    repo.head_ref = r.at("head_ref");
    repo.parent_sha = r.at("parent_sha");
    repo.default_branch = r.at("default_branch");
    repo.author_name = r.at("author_name");
    repo.author_email = r.at("author_email");
    repo.subject = r.at("subject");
    repo.head_changed_files = r.at("head_changed_files").get<std::vector<std::string>>();
    repo.work_tree_sha = r.at("work_tree_sha");

    const json& o = j.at("options");
    RunOptions& options = job.options;
    options.repository = o.at("repository").get<std::string>();
    options.repository_name = o.at("repository_name");
    options.event_name = o.at("event_name");
    options.secrets = map_of(o.at("secrets"));
    options.extra_env = map_of(o.at("extra_env"));
    options.vars = map_of(o.at("vars"));
    options.actor = o.at("actor");
    options.failure_lines = o.at("failure_lines");
    options.keep_workspaces = o.at("keep_workspaces");
    options.container_engine = o.at("container_engine");
    options.pull_policy = o.at("pull_policy");
    if (auto mirror = o.at("actions_mirror").get<std::string>(); !mirror.empty())
      options.actions_mirror = mirror;
    options.artifact_dir = o.at("artifact_dir").get<std::string>();
    options.job_token_prefix = o.at("job_token_prefix");
    // The node's GPUs are Slurm's allocation: no sampler of this host's provider.
    options.gpu_telemetry.enabled = false;
    const json& health = o.at("gpu_health");
    options.gpu_health.max_used_before_job = amount_from(health.at("max_used_before_job"));
    options.gpu_health.memory_tolerance = amount_from(health.at("memory_tolerance"));
    options.gpu_health.memory_grace =
        std::chrono::milliseconds(health.at("memory_grace_ms").get<long long>());
    options.gpu_health.provider_deadline =
        std::chrono::milliseconds(health.at("provider_deadline_ms").get<long long>());

    const json& e = j.at("event");
    plan::Event& event = job.event;
    event.name = e.at("name");
    event.action = e.at("action");
    event.ref = e.at("ref");
    event.sha = e.at("sha");
    event.before = e.at("before");
    event.base_ref = e.at("base_ref");
    event.head_ref = e.at("head_ref");
    event.changed_files = e.at("changed_files").get<std::vector<std::string>>();
    event.changed_files_known = e.at("changed_files_known");
    event.inputs = map_of(e.at("inputs"));
    event.schedule = e.at("schedule");
    event.payload = e.at("payload");

    const json& s = j.at("spec");
    JobSpec& spec = job.spec;
    KILN_TRY(spec.workflow, load_selected(s.at("workflow"), repo.root));
    KILN_TRY(spec.triggered, load_selected(s.at("triggered"), repo.root));
    spec.job_id = s.at("job_id");
    if (!spec.workflow.workflow.find_job(spec.job_id))
      return make_error(ErrorCode::invalid_input,
                        fmt::format("the workflow {} has no job '{}' (it changed since the run was "
                                    "planned)",
                                    spec.workflow.path.string(), spec.job_id));
    spec.run_id = s.at("run_id");
    spec.run_number = s.at("run_number");
    spec.run_attempt = s.at("run_attempt");
    spec.job_row = s.at("job_row");
    const json& i = s.at("instance");
    spec.instance.key = i.at("key");
    spec.instance.name = i.at("name");
    spec.instance.matrix = i.at("matrix");
    spec.instance.index = i.at("index");
    spec.instance.total = i.at("total");
    spec.shown_key = s.at("shown_key");
    spec.labels = s.at("labels").get<std::vector<std::string>>();
    spec.contexts = s.at("contexts");
    spec.workflow_env = pairs_from(s.at("workflow_env"));
    spec.job_token = s.at("job_token");
    spec.gpu_memory_budget_mib = s.at("gpu_memory_budget_mib");
    spec.artifact_root = s.at("artifact_root").get<std::string>();

    job.store = j.at("store");
    job.kiln_dir = j.at("kiln_dir").get<std::string>();
    job.bin_dir = j.at("bin_dir").get<std::string>();
    job.simulate_gpus = j.at("simulate_gpus");
  } catch (const json::exception& e) {
    return make_error(ErrorCode::invalid_input, fmt::format("bad Slurm job file: {}", e.what()));
  }
  return job;
}

json outcome_to_json(const JobSummary& summary) {
  json steps = json::array();
  for (const auto& step : summary.steps)
    steps.push_back({{"index", step.index},
                     {"name", step.name},
                     {"id", step.id ? json(*step.id) : json(nullptr)},
                     {"outcome", store::to_string(step.outcome)},
                     {"conclusion", store::to_string(step.conclusion)},
                     {"exit_code", step.exit_code},
                     {"duration_ms", step.duration.count()},
                     {"outputs", strings_of(step.outputs)}});
  json failure = nullptr;
  if (summary.failure)
    failure = {{"step_index", summary.failure->step_index},
               {"step", summary.failure->step},
               {"kind", summary.failure->kind},
               {"exit_code", summary.failure->exit_code},
               {"last_lines", summary.failure->last_lines}};
  json annotations = json::array();
  for (const auto& a : summary.annotations) annotations.push_back(annotation_to_json(a));
  json test_failures = json::array();
  for (const auto& t : summary.test_failures)
    test_failures.push_back({{"name", t.name},
                             {"message", t.message},
                             {"details", t.details},
                             {"file", t.file},
                             {"line", t.line},
                             {"quarantined", t.quarantined}});
  return {{"conclusion", store::to_string(summary.conclusion)},
          {"reason", summary.reason},
          {"duration_ms", summary.duration.count()},
          {"outputs", strings_of(summary.outputs)},
          {"steps", steps},
          {"failure", failure},
          {"failure_class", store::to_string(summary.failure_class)},
          {"failure_evidence", summary.failure_evidence},
          {"perf", summary.perf},
          {"gpu", summary.gpu},
          {"annotations", annotations},
          {"step_summary", summary.step_summary},
          {"tests", summary.tests},
          {"test_failures", test_failures}};
}

Result<JobSummary> outcome_from_json(const json& j) {
  JobSummary summary;
  try {
    KILN_TRY(summary.conclusion, store::parse_conclusion(j.at("conclusion").get<std::string>()));
    summary.reason = j.at("reason");
    summary.duration = std::chrono::milliseconds(j.at("duration_ms").get<long long>());
    summary.outputs = map_of(j.at("outputs"));
    for (const auto& s : j.at("steps")) {
      StepSummary step;
      step.index = s.at("index");
      step.name = s.at("name");
      if (s.at("id").is_string()) step.id = s.at("id").get<std::string>();
      KILN_TRY(step.outcome, store::parse_conclusion(s.at("outcome").get<std::string>()));
      KILN_TRY(step.conclusion, store::parse_conclusion(s.at("conclusion").get<std::string>()));
      step.exit_code = s.at("exit_code");
      step.duration = std::chrono::milliseconds(s.at("duration_ms").get<long long>());
      step.outputs = map_of(s.at("outputs"));
      summary.steps.push_back(std::move(step));
    }
    if (const json& f = j.at("failure"); f.is_object())
      summary.failure = StepFailure{.step_index = f.at("step_index"),
                                    .step = f.at("step"),
                                    .kind = f.at("kind"),
                                    .exit_code = f.at("exit_code"),
                                    .last_lines = f.at("last_lines")};
    KILN_TRY(summary.failure_class,
             store::parse_failure_class(j.at("failure_class").get<std::string>()));
    summary.failure_evidence = j.at("failure_evidence");
    summary.perf = j.at("perf");
    summary.gpu = j.at("gpu");
    for (const auto& a : j.at("annotations"))
      summary.annotations.push_back(annotation_from_json(a));
    summary.step_summary = j.at("step_summary");
    summary.tests = j.value("tests", json());
    for (const auto& t : j.value("test_failures", json::array()))
      summary.test_failures.push_back({.name = t.at("name"),
                                       .message = t.at("message"),
                                       .details = t.at("details"),
                                       .file = t.at("file"),
                                       .line = t.at("line"),
                                       .quarantined = t.at("quarantined")});
  } catch (const json::exception& e) {
    return make_error(ErrorCode::invalid_input, fmt::format("bad Slurm job outcome: {}", e.what()));
  }
  return summary;
}

Status write_json_file(const fs::path& path, const json& value, int mode) {
  fs::path temporary = path;
  temporary += ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      return make_error(ErrorCode::io_error, fmt::format("cannot write {}", temporary.string()));
    ::chmod(temporary.c_str(), static_cast<mode_t>(mode));
    out << value.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    out.flush();
    if (!out)
      return make_error(ErrorCode::io_error, fmt::format("cannot write {}", temporary.string()));
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec)
    return make_error(
        ErrorCode::io_error,
        fmt::format("cannot rename {} to {}: {}", temporary.string(), path.string(), ec.message()));
  return {};
}

Result<json> read_json_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::not_found, fmt::format("cannot read {}", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception& e) {
    return make_error(ErrorCode::invalid_input,
                      fmt::format("{}: not JSON: {}", path.string(), e.what()));
  }
}

}  // namespace kiln::engine
