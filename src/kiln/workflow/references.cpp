#include "kiln/workflow/references.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "kiln/workflow/expr/expr.h"
#include "kiln/workflow/loader.h"
#include "kiln/workflow/sections.h"

namespace kiln::workflow {

namespace {

namespace fs = std::filesystem;

struct RemoteReference {
  std::string owner, repo, path, ref;
};

// owner/repo[/path]@ref
std::optional<RemoteReference> parse_remote(std::string_view uses) {
  auto at = uses.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == uses.size()) return std::nullopt;
  std::string_view name = uses.substr(0, at);
  auto slash = name.find('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  RemoteReference remote;
  remote.owner = std::string(name.substr(0, slash));
  std::string_view rest = name.substr(slash + 1);
  auto next = rest.find('/');
  remote.repo = std::string(rest.substr(0, next));
  if (next != std::string_view::npos) remote.path = std::string(rest.substr(next + 1));
  remote.ref = std::string(uses.substr(at + 1));
  if (remote.repo.empty()) return std::nullopt;
  // No way out of the mirror. A ref may hold '/' (release/2.10), as a branch name may.
  for (const auto& part : {remote.owner, remote.repo})
    if (part == "." || part == ".." || part.find('/') != std::string::npos) return std::nullopt;
  if (remote.ref.starts_with('/') || remote.ref.ends_with('/') ||
      remote.ref.find("//") != std::string::npos)
    return std::nullopt;
  for (const auto& element : fs::path(remote.ref))
    if (element == "." || element == "..") return std::nullopt;
  for (const auto& element : fs::path(remote.path))
    if (element == "..") return std::nullopt;
  return remote;
}

Result<ResolvedReference> resolve(std::string_view uses, const ReferenceRoots& roots,
                                  const SourceLocation& where, std::string_view what) {
  if (uses.starts_with("./")) {
    fs::path relative = fs::path(std::string(uses.substr(2))).lexically_normal();
    if (relative.empty() || relative == ".")  // `uses: ./`: the repository's root
      return ResolvedReference{roots.repository, roots.display.empty() ? "." : roots.display, {}};
    if (*relative.begin() == "..")
      return fail_at(where, "{} '{}' is outside the repository", what, uses);
    return ResolvedReference{
        roots.repository / relative, (roots.display / relative).lexically_normal(), {}};
  }
  auto remote = parse_remote(uses);
  if (!remote) return fail_at(where, "invalid {} reference '{}'", what, uses);
  if (!roots.mirror && roots.fetch) {
    auto fetched = roots.fetch(remote->owner, remote->repo, remote->ref);
    if (!fetched)
      return fail_at(where, "{} '{}' cannot be fetched: {}", what, uses, fetched.error().message);
    fs::path path = remote->path.empty() ? fetched->path : fetched->path / remote->path;
    fs::path display =
        fmt::format("{}/{}@{}", remote->owner, remote->repo, fetched->sha.substr(0, 12));
    if (!remote->path.empty()) display /= remote->path;
    return ResolvedReference{path, display, fetched->sha};
  }
  if (!roots.mirror)
    return fail_at(where,
                   "{} '{}' is in another repository: kiln reads such references from an "
                   "actions mirror (--actions-mirror DIR or KILN_ACTIONS_MIRROR, with "
                   "DIR/{}/{}@{}/ holding that repository at that ref)",
                   what, uses, remote->owner, remote->repo, remote->ref);
  fs::path checkout = *roots.mirror / remote->owner / (remote->repo + "@" + remote->ref);
  std::error_code ec;
  if (!fs::is_directory(checkout, ec))
    return fail_at(where, "{} '{}' is not in the actions mirror: no directory {}", what, uses,
                   checkout.string());
  fs::path path = remote->path.empty() ? checkout : checkout / remote->path;
  return ResolvedReference{path, path, {}};
}

// The checks that follow calls, one file at a time, with the chain of callers for cycles.
class Checker {
 public:
  explicit Checker(const ReferenceRoots& roots) : roots_(roots) {}

  void check_workflow(const Workflow& workflow, std::vector<std::string>& chain) {
    for (const Job& job : workflow.jobs) {
      if (job.uses) check_call(job, chain);
      for (const Step& step : job.steps)
        if (step.uses) {
          std::vector<std::string> actions;
          check_action_use(step, actions);
        }
    }
  }

  ReferenceCheck take() { return std::move(result_); }

 private:
  void error(const SourceLocation& where, std::string message) {
    result_.diagnostics.push_back({Severity::error, where, std::move(message)});
  }
  void warning(const SourceLocation& where, std::string message) {
    result_.diagnostics.push_back({Severity::warning, where, std::move(message)});
  }
  // A called file's own diagnostics, once however often it is called.
  void report_file(const std::string& file, const Diagnostics& diagnostics) {
    if (!reported_.insert(file).second) return;
    result_.diagnostics.insert(result_.diagnostics.end(), diagnostics.begin(), diagnostics.end());
  }

  void check_call(const Job& job, std::vector<std::string>& chain) {
    const Text& uses = *job.uses;
    auto resolved = resolve_workflow(uses.value, roots_, uses.where);
    if (!resolved && !uses.value.starts_with("./")) {
      result_.unresolved[uses.value] =
          fmt::format("{}: {}", uses.where.to_string(), resolved.error().message);
      return warning(uses.where, fmt::format("{}: the call is planned unresolved, and job '{}' "
                                             "fails when it is reached",
                                             resolved.error().message, job.id));
    }
    if (!resolved) return error(uses.where, resolved.error().message);
    std::string key = fs::weakly_canonical(resolved->path).string();
    if (std::ranges::find(chain, key) != chain.end())
      return error(uses.where, fmt::format("reusable workflow cycle: '{}' calls itself, directly "
                                           "or through the workflows it calls",
                                           uses.value));
    // chain holds the caller and the workflows above it: the called one is one level more.
    if (static_cast<int>(chain.size()) + 1 > k_max_workflow_levels)
      return error(uses.where,
                   fmt::format("calling '{}' nests reusable workflows {} levels deep; GitHub "
                               "allows at most {} levels (the caller included)",
                               uses.value, chain.size() + 1, k_max_workflow_levels));
    auto called = load(uses.value, *resolved);
    if (!called) {
      error(uses.where, fmt::format("reusable workflow '{}' has errors", uses.value));
      return;
    }
    const Workflow& workflow = called->workflow;
    const Trigger* call = workflow.find_trigger("workflow_call");
    if (!call)
      return error(uses.where, fmt::format("'{}' is not a reusable workflow: it has no "
                                           "'on: workflow_call'",
                                           uses.value));
    for (const auto& [name, value] : job.with) {
      const InputSpec* spec = call->find_input(name);
      if (!spec) {
        error(value.where, fmt::format("unknown input '{}' of reusable workflow '{}'{}", name,
                                       uses.value, known_list(call->inputs)));
        continue;
      }
      if (expr::has_template(value.value)) continue;
      if (auto typed = typed_call_input(*spec, value.value, value.where); !typed)
        error(value.where, typed.error().message);
    }
    for (const InputSpec& spec : call->inputs)
      if (spec.required && !spec.default_value &&
          std::ranges::find(job.with, spec.name, &std::pair<std::string, Text>::first) ==
              job.with.end())
        error(uses.where, fmt::format("reusable workflow '{}' requires input '{}', which "
                                      "'with' does not give",
                                      uses.value, spec.name));
    if (!job.secrets_inherit) {
      for (const auto& [name, value] : job.secrets)
        if (!call->find_secret(name))
          error(value.where,
                fmt::format("unknown secret '{}' of reusable workflow '{}'", name, uses.value));
      for (const SecretSpec& spec : call->secrets)
        if (spec.required &&
            std::ranges::find(job.secrets, spec.name, &std::pair<std::string, Text>::first) ==
                job.secrets.end())
          error(uses.where, fmt::format("reusable workflow '{}' requires secret '{}', which "
                                        "'secrets' does not pass (pass it, or 'secrets: inherit')",
                                        uses.value, spec.name));
    }
    // A workflow called again is checked again only when it now sits deeper (its depth limit).
    auto [seen, first] = checked_.emplace(key, chain.size());
    if (first || seen->second < chain.size()) {
      seen->second = chain.size();
      chain.push_back(key);
      check_workflow(workflow, chain);
      chain.pop_back();
    }
  }

  static std::string known_list(const std::vector<InputSpec>& inputs) {
    if (inputs.empty()) return " (it declares no inputs)";
    std::string names;
    for (const auto& input : inputs) names += (names.empty() ? "" : ", ") + input.name;
    return fmt::format(" (it declares: {})", names);
  }

  std::shared_ptr<const CalledWorkflow> load(const std::string& uses,
                                             const ResolvedReference& resolved) {
    if (auto it = result_.workflows.find(uses); it != result_.workflows.end()) return it->second;
    auto loaded = load_workflow_file(resolved.path, resolved.display);
    report_file(resolved.display.string(), loaded.diagnostics);
    if (!loaded.workflow) return nullptr;
    auto called = std::make_shared<CalledWorkflow>();
    called->display = resolved.display;
    called->workflow = std::move(*loaded.workflow);
    // `./` in a workflow of another repository is that repository's root.
    if (auto remote = parse_remote(uses))
      for (Job& job : called->workflow.jobs)
        if (job.uses && job.uses->value.starts_with("./"))
          job.uses->value = fmt::format(
              "{}/{}/{}@{}", remote->owner, remote->repo,
              fs::path(job.uses->value.substr(2)).lexically_normal().string(), remote->ref);
    result_.workflows[uses] = called;
    return called;
  }

  void check_action_use(const Step& step, std::vector<std::string>& chain) {
    const Text& uses = *step.uses;
    if (uses.value.starts_with("docker://")) return;
    if (roots_.is_builtin_action && roots_.is_builtin_action(uses.value)) return;
    bool local = uses.value.starts_with("./");
    if (!local && !roots_.mirror && !roots_.fetch) return;  // the run names it when it runs
    auto resolved = resolve_action(uses.value, roots_, uses.where);
    if (!resolved) {
      // Resolved when the step runs: an earlier step may check it out, a fetch may bring it.
      if (reported_.insert("missing:" + uses.value).second)
        warning(uses.where, fmt::format("{}; it is looked up again when its step runs, which "
                                        "fails if it is still missing",
                                        resolved.error().message));
      return;
    }
    std::string key = fs::weakly_canonical(resolved->path).string();
    if (std::ranges::find(chain, key) != chain.end())
      return error(uses.where, fmt::format("action cycle: '{}' uses itself, directly or "
                                           "through the actions it uses",
                                           uses.value));
    if (static_cast<int>(chain.size()) + 1 > k_max_action_depth)
      return error(uses.where, fmt::format("'{}' nests actions {} deep; GitHub allows at most {}",
                                           uses.value, chain.size() + 1, k_max_action_depth));
    auto file = *find_action_file(resolved->path);
    auto display = resolved->display / file.filename();
    auto loaded = load_action_file(file, display);
    if (!local)  // not this repository's to fix: its step fails when it runs
      for (Diagnostic& diagnostic : loaded.diagnostics) diagnostic.severity = Severity::warning;
    report_file(display.string(), loaded.diagnostics);
    if (!loaded.action) {
      if (local) error(uses.where, fmt::format("action '{}' has errors", uses.value));
      return;
    }
    const Action& action = *loaded.action;
    for (const auto& [name, value] : step.with)
      if (!action.find_input(name))
        warning(value.where, fmt::format("unexpected input '{}' of action '{}' (GitHub warns "
                                         "and ignores it)",
                                         name, uses.value));
    for (const ActionInput& input : action.inputs)
      if (input.required && !input.default_value && !step.with.expression &&
          std::ranges::none_of(step.with, [&](const auto& entry) {
            return input_variable(entry.first) == input_variable(input.name);
          }))
        warning(uses.where, fmt::format("action '{}' requires input '{}', which 'with' does not "
                                        "give (it will be empty)",
                                        uses.value, input.name));
    if (action.kind != ActionKind::composite) return;
    chain.push_back(key);
    for (const Step& nested : action.steps)
      if (nested.uses) check_action_use(nested, chain);
    chain.pop_back();
  }

  const ReferenceRoots& roots_;
  ReferenceCheck result_;
  std::set<std::string> reported_;
  std::map<std::string, size_t> checked_;
};

}  // namespace

Result<ResolvedReference> resolve_workflow(std::string_view uses, const ReferenceRoots& roots,
                                           const SourceLocation& where) {
  KILN_TRY(auto resolved, resolve(uses, roots, where, "reusable workflow"));
  std::error_code ec;
  if (!fs::is_regular_file(resolved.path, ec))
    return fail_at(where, "reusable workflow '{}' not found: no file {}", uses,
                   resolved.display.string());
  return resolved;
}

Result<ResolvedReference> resolve_action(std::string_view uses, const ReferenceRoots& roots,
                                         const SourceLocation& where) {
  KILN_TRY(auto resolved, resolve(uses, roots, where, "action"));
  if (!find_action_file(resolved.path))
    return fail_at(where, "action '{}' not found: no action.yml or action.yaml in {}", uses,
                   resolved.display.string());
  return resolved;
}

Result<nlohmann::json> typed_call_input(const InputSpec& spec, const nlohmann::json& value,
                                        const SourceLocation& where) {
  std::string text = value.is_string()
                         ? value.get<std::string>()
                         : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (spec.type == "boolean") {
    if (value.is_boolean()) return value;
    if (value.is_string() && detail::is_boolean(text))
      return nlohmann::json(text == "true" || text == "True" || text == "TRUE");
    return fail_at(where, "input '{}' is a boolean: expected true or false, got '{}'", spec.name,
                   text);
  }
  if (spec.type == "number") {
    if (value.is_number()) return value;
    if (value.is_string() && detail::is_number(text)) {
      double number = 0;
      const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
      auto [end, ec] = std::from_chars(begin, text.data() + text.size(), number);
      if (ec == std::errc() && end == text.data() + text.size()) return nlohmann::json(number);
      return fail_at(where, "input '{}' is a number: '{}' is out of range", spec.name, text);
    }
    return fail_at(where, "input '{}' is a number: expected a number, got '{}'", spec.name, text);
  }
  if (value.is_object() || value.is_array())
    return fail_at(where, "input '{}' is a string: expected a string, got {}", spec.name, text);
  return nlohmann::json(value.is_null() ? std::string() : text);
}

ReferenceCheck check_references(const Workflow& workflow, const fs::path& file,
                                const ReferenceRoots& roots) {
  Checker checker(roots);
  std::vector<std::string> chain{fs::weakly_canonical(file).string()};
  checker.check_workflow(workflow, chain);
  return checker.take();
}

}  // namespace kiln::workflow
