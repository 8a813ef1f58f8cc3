// jobs.<id>.steps: each step's keys, what it does (`run`, `uses`, or one of GitHub's parallel-step
// controls), unique ids; `parallel:` groups flattened, and wait/cancel targets resolved.
#include <algorithm>
#include <map>

#include "kiln/workflow/sections.h"

namespace kiln::workflow::detail {

namespace {

constexpr std::string_view k_step_keys[] = {"id",
                                            "name",
                                            "if",
                                            "run",
                                            "uses",
                                            "with",
                                            "env",
                                            "shell",
                                            "working-directory",
                                            "continue-on-error",
                                            "timeout-minutes",
                                            "background",
                                            "wait",
                                            "wait-all",
                                            "cancel",
                                            "parallel"};
// What a step does: a step has exactly one of them.
constexpr std::string_view k_kind_keys[] = {"run",      "uses",   "wait",
                                            "wait-all", "cancel", "parallel"};
// Besides its own key, what a wait, wait-all or cancel step may have.
constexpr std::string_view k_control_keys[] = {"id", "name", "continue-on-error"};

std::string has_shape(const YAML::Node& node) { return Reader::shape_name(Reader::shape(node)); }

bool contains(std::span<const std::string_view> keys, std::string_view key) {
  return std::ranges::find(keys, key) != keys.end();
}

// `uses` names an action: owner/repo@ref, owner/repo/path@ref, ./local/path or docker://image.
bool is_action_reference(std::string_view uses) {
  if (uses.starts_with("./")) return true;  // `./` is the action at the repository's root
  if (uses.starts_with("docker://")) return uses.size() > 9;
  auto at = uses.rfind('@');
  if (at == std::string_view::npos || at + 1 == uses.size()) return false;
  std::string_view name = uses.substr(0, at);
  auto slash = name.find('/');
  return slash != std::string_view::npos && slash > 0 && slash + 1 < name.size() &&
         name[slash + 1] != '/';
}

std::string_view kind_key(StepKind kind) {
  switch (kind) {
    case StepKind::wait:
      return "wait";
    case StepKind::wait_all:
      return "wait-all";
    case StepKind::cancel:
      return "cancel";
    case StepKind::work:
      break;
  }
  return "run";
}

class StepsReader {
 public:
  StepsReader(Reader& reader, const std::string& owner, std::span<const std::string_view> keys)
      : reader_(reader), owner_(owner), keys_(keys) {}

  void read_list(const std::vector<Item>& items, std::optional<SourceLocation> group) {
    // The job's own list (a parallel group adds its members to it later).
    if (!group) steps_.reserve(steps_.size() + items.size());
    for (const Item& item : items) read_step(item, group);
  }

  std::vector<Step> finish() {
    resolve_targets();
    return std::move(steps_);
  }

 private:
  void read_step(const Item& item, std::optional<SourceLocation> group) {
    if (!item.value.IsMap()) {
      reader_.error(item.where,
                    fmt::format("a step must be a mapping, not {}", has_shape(item.value)));
      return;
    }
    auto entries = reader_.mapping(item.value, item.where, "steps", keys_, "a step");
    if (!entries) return;
    // A composite action's steps (read leniently, unknown keys only warned about) cannot run in
    // parallel: GitHub's rule, said as an error rather than running them one by one.
    if (!contains(keys_, "background"))
      for (auto key : {"background", "wait", "wait-all", "cancel", "parallel"})
        if (item.value[key])
          reader_.error(item.where,
                        fmt::format("'{}' cannot be used in the steps of a {}", key, owner_));
    std::vector<const Entry*> kinds;
    for (const Entry& e : *entries)
      if (contains(k_kind_keys, e.key)) kinds.push_back(&e);
    if (kinds.size() > 1) {
      reader_.error(item.where, fmt::format("a step cannot have both '{}' and '{}'", kinds[0]->key,
                                            kinds[1]->key));
      return;
    }
    if (kinds.empty()) {
      reader_.error(item.where, contains(keys_, "wait")
                                    ? "a step needs 'run' or 'uses' (or one of 'wait', "
                                      "'wait-all', 'cancel', 'parallel')"
                                    : "a step needs either 'run' or 'uses'");
      return;
    }
    const Entry& what = *kinds.front();
    if (what.key == "parallel") return read_parallel(*entries, what, group);
    if (group && what.key != "run" && what.key != "uses") {
      reader_.error(what.key_where,
                    fmt::format("'{}' cannot be used in a 'parallel' group", what.key));
      return;
    }

    Step step;
    step.index = static_cast<int>(steps_.size());
    step.where = item.where;
    step.parallel_group = group;
    step.background = group.has_value();
    for (const Entry& e : *entries) read_key(step, e, group);
    if (step.is_control()) {
      for (const Entry& e : *entries) {
        if (contains(k_control_keys, e.key) || &e == &what) continue;
        reader_.error(e.key_where, fmt::format("'{}' cannot be used on a '{}' step{}", e.key,
                                               what.key, e.key == "if" ? ": it always runs" : ""));
      }
    }
    check_id(step);
    steps_.push_back(std::move(step));
  }

  void read_key(Step& step, const Entry& e, const std::optional<SourceLocation>& group) {
    if (e.key == "id") {
      step.id = reader_.text(e);
    } else if (e.key == "name") {
      step.name = reader_.text(e);
    } else if (e.key == "if") {
      step.if_condition = reader_.condition(e);
    } else if (e.key == "run") {
      step.run = reader_.text(e);
    } else if (e.key == "uses") {
      step.uses = reader_.text(e);
      if (step.uses && !is_action_reference(step.uses->value))
        reader_.error(step.uses->where,
                      fmt::format("invalid 'uses' value '{}': expected owner/repo@ref, "
                                  "owner/repo/path@ref, ./path or docker://image",
                                  step.uses->value));
    } else if (e.key == "with") {
      step.with = reader_.text_map(e, true);
    } else if (e.key == "env") {
      step.env = reader_.text_map(e, true);
    } else if (e.key == "shell") {
      step.shell = reader_.text(e);
    } else if (e.key == "working-directory") {
      step.working_directory = reader_.text(e);
    } else if (e.key == "continue-on-error") {
      step.continue_on_error = reader_.boolean_or_expression(e);
    } else if (e.key == "timeout-minutes") {
      step.timeout_minutes = reader_.number_or_expression(e);
    } else if (e.key == "background") {
      read_background(step, e, group);
    } else if (e.key == "wait") {
      step.kind = StepKind::wait;
      if (auto ids = reader_.text_list(e, true)) step.target_ids = std::move(*ids);
      if (step.target_ids.empty() ||
          (step.target_ids.size() == 1 && step.target_ids[0].value.empty()))
        reader_.error(e.value_where,
                      "'wait' needs the id of a background step, or a list of "
                      "them (wait-all: waits for every one)");
    } else if (e.key == "wait-all") {
      step.kind = StepKind::wait_all;
      if (!e.value.IsNull() && !(e.value.IsScalar() && e.value.Scalar() == "true"))
        reader_.error(e.value_where,
                      "'wait-all' takes no value: it waits for every background "
                      "step started before it");
    } else if (e.key == "cancel") {
      step.kind = StepKind::cancel;
      if (!e.value.IsScalar()) {
        reader_.error(e.value_where,
                      fmt::format("'cancel' names one step id, not {}", has_shape(e.value)));
      } else if (auto id = reader_.text(e); id && !id->value.empty()) {
        step.target_ids.push_back(std::move(*id));
      } else {
        reader_.error(e.value_where, "'cancel' needs the id of a background step");
      }
    }
  }

  void read_background(Step& step, const Entry& e, const std::optional<SourceLocation>& group) {
    if (group) {
      reader_.error(e.key_where,
                    "'background' cannot be used in a 'parallel' group: every step "
                    "of the group runs in the background");
      return;
    }
    auto value = reader_.text(e);
    if (!value) return;
    // A literal: the loader must know which steps run in the background to check wait/cancel.
    if (value->value == "true" || value->value == "false")
      step.background = value->value == "true";
    else
      reader_.error(value->where,
                    fmt::format("'background' must be true or false, not '{}'", value->value));
  }

  // A `parallel:` group: its steps, each in the background, then one wait for all of them.
  void read_parallel(const std::vector<Entry>& entries, const Entry& parallel,
                     const std::optional<SourceLocation>& group) {
    if (group) {
      reader_.error(parallel.key_where, "'parallel' groups cannot be nested");
      return;
    }
    for (const Entry& e : entries)
      if (&e != &parallel)
        reader_.error(e.key_where,
                      fmt::format("'{}' cannot be used beside 'parallel' (set it on the group's "
                                  "steps)",
                                  e.key));
    auto items = reader_.list(parallel);
    if (!items) return;
    if (items->empty()) {
      reader_.error(parallel.value_where, "'parallel' needs at least one step");
      return;
    }
    size_t first = steps_.size();
    read_list(*items, parallel.key_where);
    Step wait;
    wait.kind = StepKind::wait;
    wait.index = static_cast<int>(steps_.size());
    wait.where = parallel.key_where;
    wait.parallel_group = parallel.key_where;
    for (size_t i = first; i < steps_.size(); ++i) wait.targets.push_back(steps_[i].index);
    steps_.push_back(std::move(wait));
  }

  void check_id(const Step& step) {
    if (!step.id) return;
    const Text& id = *step.id;
    if (!is_identifier(id.value)) {
      reader_.error(id.where, fmt::format("invalid step id '{}': it must start with a letter or "
                                          "'_' and hold only letters, digits, '-' and '_'",
                                          id.value));
    } else if (auto [first, inserted] = ids_.emplace(id.value, step.index); !inserted) {
      reader_.error(id.where, fmt::format("duplicate step id '{}' in job '{}' (first used at "
                                          "line {})",
                                          id.value, owner_, steps_[first->second].id->where.line));
    }
  }

  // wait and cancel act on background steps started before them; wait-all on all of those.
  void resolve_targets() {
    for (Step& step : steps_) {
      if (step.kind == StepKind::wait_all) {
        for (const Step& earlier : steps_)
          if (earlier.index < step.index && earlier.background)
            step.targets.push_back(earlier.index);
        if (step.targets.empty())
          reader_.warning(step.where, "'wait-all' has no background step before it to wait for");
        continue;
      }
      for (const Text& id : step.target_ids) {
        std::string_view key = kind_key(step.kind);
        auto it = ids_.find(id.value);
        if (it == ids_.end()) {
          reader_.error(id.where, fmt::format("'{}' names '{}', which is not the id of a step in "
                                              "job '{}'",
                                              key, id.value, owner_));
          continue;
        }
        const Step& target = steps_[it->second];
        if (target.index >= step.index)
          reader_.error(
              id.where,
              fmt::format("'{}' names step '{}', which comes after it: only "
                          "a background step started before it can be {}",
                          key, id.value, step.kind == StepKind::wait ? "waited for" : "cancelled"));
        else if (!target.background)
          reader_.error(id.where, fmt::format("'{}' names step '{}', which is not a background "
                                              "step (it ends before the next step starts; "
                                              "'background: true' runs it beside them)",
                                              key, id.value));
        else
          step.targets.push_back(target.index);
      }
    }
  }

  Reader& reader_;
  const std::string& owner_;
  std::span<const std::string_view> keys_;
  std::vector<Step> steps_;
  std::map<std::string, int, std::less<>> ids_;  // id → index in steps_
};

}  // namespace

std::vector<Step> read_steps(Reader& reader, const Entry& entry, const std::string& owner,
                             std::span<const std::string_view> keys) {
  if (keys.empty()) keys = k_step_keys;
  auto items = reader.list(entry);
  if (!items) return {};
  if (items->empty()) reader.error(entry.value_where, fmt::format("job '{}' has no steps", owner));
  StepsReader steps(reader, owner, keys);
  steps.read_list(*items, std::nullopt);
  return steps.finish();
}

}  // namespace kiln::workflow::detail
