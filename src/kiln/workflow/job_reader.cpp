// jobs.<id>: everything a job holds, its steps, and the needs graph between jobs.
#include <algorithm>
#include <map>

#include "kiln/workflow/sections.h"

namespace kiln::workflow::detail {

namespace {

// With "labels", not GitHub's: read only to say where runner labels go.
constexpr std::string_view k_job_keys[] = {
    "name",        "needs",     "if",       "runs-on",         "environment",
    "outputs",     "env",       "defaults", "timeout-minutes", "continue-on-error",
    "strategy",    "container", "services", "steps",           "concurrency",
    "permissions", "uses",      "with",     "secrets",         "snapshot",
    "labels"};
// The keys a job that calls a reusable workflow may have (GitHub's list).
constexpr std::string_view k_caller_keys[] = {
    "name", "needs", "if", "strategy", "uses", "with", "secrets", "concurrency", "permissions"};
constexpr std::string_view k_runs_on_keys[] = {"group", "labels"};
constexpr std::string_view k_environment_keys[] = {"name", "url"};
constexpr std::string_view k_strategy_keys[] = {"matrix", "fail-fast", "max-parallel"};
constexpr std::string_view k_container_keys[] = {"image", "options", "env",
                                                 "ports", "volumes", "credentials"};
constexpr std::string_view k_credentials_keys[] = {"username", "password"};
constexpr std::string_view k_snapshot_keys[] = {"image-name", "version", "if"};

std::string has_shape(const YAML::Node& node) { return Reader::shape_name(Reader::shape(node)); }

RunsOn read_runs_on(Reader& reader, const Entry& entry) {
  RunsOn runs_on;
  runs_on.where = entry.value_where;
  if (entry.value.IsScalar() || entry.value.IsSequence()) {
    if (auto labels = reader.text_list(entry, true)) runs_on.labels = std::move(*labels);
    if (runs_on.labels.empty() || (runs_on.labels.size() == 1 && runs_on.labels[0].value.empty()))
      reader.error(entry.value_where, "'runs-on' must name at least one label");
    return runs_on;
  }
  if (!entry.value.IsMap()) {
    reader.error(entry.value_where,
                 fmt::format("'runs-on' must be a label, a list of labels or a mapping, not {}",
                             has_shape(entry.value)));
    return runs_on;
  }
  auto entries = reader.mapping(entry, k_runs_on_keys, "'runs-on'");
  for (const Entry& e : *entries) {
    if (e.key == "group") {
      runs_on.group = reader.text(e);
      // Said, not silently dropped: placement is by labels alone here.
      reader.warning(e.value_where,
                     fmt::format("runs-on group '{}' is not used: this host has no runner groups; "
                                 "the job runs where its labels are served",
                                 runs_on.group ? runs_on.group->value : std::string()));
    } else if (auto labels = reader.text_list(e, true))
      runs_on.labels = std::move(*labels);
  }
  if (entries->empty()) reader.error(entry.value_where, "'runs-on' needs 'group' or 'labels'");
  return runs_on;
}

std::optional<Text> read_environment(Reader& reader, const Entry& entry) {
  if (!entry.value.IsMap()) return reader.text(entry);
  auto entries = reader.mapping(entry, k_environment_keys, "'environment'");
  std::optional<Text> name;
  for (const Entry& e : *entries) {
    auto text = reader.text(e);
    if (e.key == "name") name = std::move(text);
  }
  if (std::ranges::find(*entries, "name", &Entry::key) == entries->end())
    reader.error(entry.value_where, "'environment' needs a 'name'");
  return name;
}

std::optional<Container> read_container(Reader& reader, const Entry& entry, bool is_service) {
  Container container;
  container.where = entry.value_where;
  if ((container.expression = reader.expression_value(entry))) return container;
  if (entry.value.IsScalar()) {  // an image name
    auto image = reader.text(entry);
    if (!image) return std::nullopt;
    container.image = std::move(*image);
    return container;
  }
  std::string what = is_service ? fmt::format("service '{}'", entry.key) : "'container'";
  auto entries = reader.mapping(entry, k_container_keys, what);
  if (!entries) return std::nullopt;
  bool has_image = false;
  for (const Entry& e : *entries) {
    if (e.key == "image") {
      if (auto image = reader.text(e)) container.image = std::move(*image);
      has_image = true;
    } else if (e.key == "options") {
      container.options = reader.text(e);
    } else if (e.key == "env") {
      container.env = reader.text_map(e);
    } else if (e.key == "ports") {
      if (auto ports = reader.text_list(e, false)) container.ports = std::move(*ports);
    } else if (e.key == "volumes") {
      if (auto volumes = reader.text_list(e, false)) container.volumes = std::move(*volumes);
    } else if (e.key == "credentials") {
      if ((container.credentials_expression = reader.expression_value(e))) continue;
      auto credentials = reader.mapping(e, k_credentials_keys, "'credentials'");
      if (!credentials) continue;
      Credentials result;
      int found = 0;
      for (const Entry& c : *credentials) {
        auto text = reader.text(c);
        if (!text) continue;
        ++found;
        (c.key == "username" ? result.username : result.password) = std::move(*text);
      }
      if (credentials->size() != 2)
        reader.error(e.value_where, "'credentials' needs both 'username' and 'password'");
      else if (found == 2)
        container.credentials = std::move(result);
    }
  }
  if (!has_image) {
    reader.error(entry.value_where, fmt::format("{} needs an 'image'", what));
    return std::nullopt;
  }
  return container;
}

// snapshot: an image name, or {image-name, version, if}.
std::optional<Snapshot> read_snapshot(Reader& reader, const Entry& entry) {
  Snapshot snapshot;
  snapshot.where = entry.value_where;
  if (entry.value.IsScalar()) {
    auto name = reader.text(entry);
    if (!name) return std::nullopt;
    snapshot.image_name = std::move(*name);
    return snapshot;
  }
  auto entries = reader.mapping(entry, k_snapshot_keys, "'snapshot'");
  if (!entries) return std::nullopt;
  bool has_name = false;
  for (const Entry& e : *entries) {
    if (e.key == "image-name") {
      if (auto name = reader.text(e)) snapshot.image_name = std::move(*name);
      has_name = true;
    } else if (e.key == "version") {
      snapshot.version = reader.text(e);
    } else {
      snapshot.if_condition = reader.condition(e);
    }
  }
  if (!has_name) {
    reader.error(entry.value_where, "'snapshot' needs an 'image-name'");
    return std::nullopt;
  }
  return snapshot;
}

std::optional<Strategy> read_strategy(Reader& reader, const Entry& entry) {
  auto entries = reader.mapping(entry, k_strategy_keys, "'strategy'");
  if (!entries) return std::nullopt;
  Strategy strategy;
  strategy.where = entry.value_where;
  for (const Entry& e : *entries) {
    if (e.key == "matrix") {
      strategy.matrix = read_matrix(reader, e);
      strategy.matrix_where = e.value_where;
    } else if (e.key == "fail-fast") {
      strategy.fail_fast = reader.boolean_or_expression(e);
    } else {
      strategy.max_parallel = reader.number_or_expression(e);
    }
  }
  return strategy;
}

// `uses` of a job: ./path/to/workflow.yml or owner/repo/path/to/workflow.yml@ref.
bool is_workflow_reference(std::string_view uses) {
  auto yaml = [](std::string_view path) {
    return path.ends_with(".yml") || path.ends_with(".yaml");
  };
  if (uses.starts_with("./")) return yaml(uses) && uses.find('@') == std::string_view::npos;
  auto at = uses.rfind('@');
  if (at == std::string_view::npos || at + 1 == uses.size()) return false;
  std::string_view path = uses.substr(0, at);
  auto first = path.find('/');
  auto second = first == std::string_view::npos ? first : path.find('/', first + 1);
  return first > 0 && second != std::string_view::npos && second > first + 1 && yaml(path);
}

void read_call(Reader& reader, Job& job, const Entry& e) {
  if (e.key == "uses") {
    job.uses = reader.text(e);
    if (job.uses && !is_workflow_reference(job.uses->value))
      reader.error(job.uses->where,
                   fmt::format("invalid reusable workflow '{}': expected ./path/to/workflow.yml "
                               "or owner/repo/path/to/workflow.yml@ref",
                               job.uses->value));
  } else if (e.key == "with") {
    job.with = reader.text_map(e);
  } else if (e.value.IsScalar()) {  // secrets: inherit
    auto text = reader.text(e);
    if (text && text->value == "inherit")
      job.secrets_inherit = true;
    else if (text)
      reader.error(text->where,
                   fmt::format("'secrets' must be 'inherit' or a mapping, not '{}'", text->value));
  } else {
    job.secrets = reader.text_map(e);
  }
}

Job read_job(Reader& reader, const Entry& entry) {
  Job job;
  job.id = entry.key;
  job.where = entry.key_where;
  if (!is_identifier(job.id))
    reader.error(job.where, fmt::format("invalid job id '{}': it must start with a letter or '_' "
                                        "and hold only letters, digits, '-' and '_'",
                                        job.id));
  auto entries = reader.mapping(entry, k_job_keys, fmt::format("job '{}'", job.id));
  if (!entries) return job;
  bool has_runs_on = false, has_steps = false;
  bool calls = std::ranges::find(*entries, "uses", &Entry::key) != entries->end();
  for (const Entry& e : *entries) {
    if (calls && std::ranges::find(k_caller_keys, e.key) == std::end(k_caller_keys)) {
      reader.error(e.key_where, fmt::format("job '{}' calls a reusable workflow: it cannot have "
                                            "'{}'",
                                            job.id, e.key));
      continue;
    }
    if (e.key == "name") {
      job.name = reader.text(e);
    } else if (e.key == "needs") {
      if (auto needs = reader.text_list(e, true)) job.needs = std::move(*needs);
    } else if (e.key == "if") {
      job.if_condition = reader.condition(e);
    } else if (e.key == "labels") {
      reader.error(e.key_where,
                   "unknown key 'labels'; runner labels go in runs-on, e.g. "
                   "runs-on: [self-hosted, roc-gpu-mi200]");
    } else if (e.key == "runs-on") {
      has_runs_on = true;
      job.runs_on = read_runs_on(reader, e);
    } else if (e.key == "environment") {
      job.environment = read_environment(reader, e);
    } else if (e.key == "outputs") {
      job.outputs = reader.text_map(e);
    } else if (e.key == "env") {
      job.env = reader.text_map(e, true);
    } else if (e.key == "defaults") {
      job.defaults = read_defaults(reader, e);
    } else if (e.key == "timeout-minutes") {
      job.timeout_minutes = reader.number_or_expression(e);
    } else if (e.key == "continue-on-error") {
      job.continue_on_error = reader.boolean_or_expression(e);
    } else if (e.key == "strategy") {
      job.strategy = read_strategy(reader, e);
    } else if (e.key == "container") {
      job.container = read_container(reader, e, false);
    } else if (e.key == "snapshot") {
      job.snapshot = read_snapshot(reader, e);
    } else if (e.key == "services") {
      if ((job.services_expression = reader.expression_value(e))) continue;
      auto services = reader.mapping(e);
      if (!services) continue;
      for (const Entry& service : *services)
        if (auto container = read_container(reader, service, true))
          job.services.emplace_back(service.key, std::move(*container));
    } else if (e.key == "steps") {
      has_steps = true;
      job.steps = read_steps(reader, e, job.id);
    } else if (e.key == "concurrency") {
      job.concurrency = read_concurrency(reader, e);
    } else if (e.key == "permissions") {
      read_permissions(reader, e);
    } else if (calls) {  // uses, with, secrets: a call of a reusable workflow
      read_call(reader, job, e);
    } else {
      reader.error(e.key_where, fmt::format("job '{}' has '{}' but no 'uses' (a reusable "
                                            "workflow to call)",
                                            job.id, e.key));
    }
  }
  if (calls) return job;
  if (!has_runs_on) reader.error(job.where, fmt::format("job '{}' has no 'runs-on'", job.id));
  if (!has_steps) reader.error(job.where, fmt::format("job '{}' has no 'steps'", job.id));
  return job;
}

// Unknown needs, then cycles, each cycle named from the job where the search entered it.
void check_needs(Reader& reader, const std::vector<Job>& jobs) {
  std::map<std::string, size_t, std::less<>> index;
  for (size_t i = 0; i < jobs.size(); ++i) index.emplace(jobs[i].id, i);
  std::vector<std::vector<std::pair<size_t, const Text*>>> edges(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    for (const Text& need : jobs[i].needs) {
      auto it = index.find(need.value);
      if (it == index.end())
        reader.error(need.where, fmt::format("job '{}' needs '{}', which does not exist",
                                             jobs[i].id, need.value));
      else
        edges[i].emplace_back(it->second, &need);
    }
  }
  // Iterative depth-first search (a chain of many jobs must not exhaust the stack).
  enum class Mark { unvisited, active, done };
  std::vector<Mark> marks(jobs.size(), Mark::unvisited);
  for (size_t root = 0; root < jobs.size(); ++root) {
    if (marks[root] != Mark::unvisited) continue;
    std::vector<std::pair<size_t, size_t>> stack{{root, 0}};  // (job, next edge)
    marks[root] = Mark::active;
    while (!stack.empty()) {
      auto& [job, next] = stack.back();
      if (next == edges[job].size()) {
        marks[job] = Mark::done;
        stack.pop_back();
        continue;
      }
      size_t target = edges[job][next++].first;
      if (marks[target] == Mark::unvisited) {
        marks[target] = Mark::active;
        stack.emplace_back(target, 0);
      } else if (marks[target] == Mark::active) {
        auto start = std::ranges::find(stack, target, &std::pair<size_t, size_t>::first);
        std::string cycle;
        for (auto it = start; it != stack.end(); ++it) cycle += jobs[it->first].id + " -> ";
        cycle += jobs[target].id;
        // The cycle's first job left it through its last taken edge: point at that need.
        const Text* need = edges[target][start->second - 1].second;
        reader.error(need->where, fmt::format("cyclic needs: {}", cycle));
      }
    }
  }
}

}  // namespace

std::vector<Job> read_jobs(Reader& reader, const Entry& entry) {
  std::vector<Job> jobs;
  auto entries = reader.mapping(entry);
  if (!entries) return jobs;
  if (entry.value.size() == 0)
    reader.error(entry.value_where, "'jobs' must define at least one job");
  // Reserved: growing a vector of 100,000 jobs by doubling held three times their size at once.
  jobs.reserve(entries->size());
  for (const Entry& e : *entries) jobs.push_back(read_job(reader, e));
  check_needs(reader, jobs);
  return jobs;
}

}  // namespace kiln::workflow::detail
