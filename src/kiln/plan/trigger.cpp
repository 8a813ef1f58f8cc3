#include "kiln/plan/trigger.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <vector>

#include <fmt/ranges.h>

#include "kiln/workflow/glob.h"

namespace kiln::plan {
namespace {

using workflow::FilterList;
using workflow::Text;

TriggerDecision runs() { return {true, {}}; }

template <class... Args>
TriggerDecision skip(fmt::format_string<Args...> format, Args&&... args) {
  return {false, fmt::format(format, std::forward<Args>(args)...)};
}

Result<FilterList> compile(const std::vector<Text>& patterns) {
  std::vector<std::string> texts;
  texts.reserve(patterns.size());
  for (const Text& pattern : patterns) texts.push_back(pattern.value);
  return FilterList::compile(texts);
}

// Applies `list` (an include list) or `ignore_list` to one name. Empty optional: no decision.
std::optional<TriggerDecision> filter_name(const std::optional<std::vector<Text>>& list,
                                           const std::optional<std::vector<Text>>& ignore_list,
                                           std::string_view kind, std::string_view name,
                                           std::string_view where) {
  if (list) {
    auto compiled = compile(*list);
    if (!compiled)
      return skip("on.{}.{}: {}", where, kind == "tag" ? "tags" : "branches",
                  compiled.error().message);
    if (!compiled->matches(name))
      return skip("{} '{}' does not match on.{}.{}", kind, name, where,
                  kind == "tag" ? "tags" : "branches");
  }
  if (ignore_list) {
    auto compiled = compile(*ignore_list);
    if (!compiled)
      return skip("on.{}.{}-ignore: {}", where, kind == "tag" ? "tags" : "branches",
                  compiled.error().message);
    if (compiled->matches(name))
      return skip("{} '{}' matches on.{}.{}-ignore", kind, name, where,
                  kind == "tag" ? "tags" : "branches");
  }
  return std::nullopt;
}

std::optional<TriggerDecision> filter_paths(const workflow::EventFilter& filter, const Event& event,
                                            std::string_view where) {
  if (!filter.paths && !filter.paths_ignore) return std::nullopt;
  if (!event.changed_files_known) return std::nullopt;  // GitHub runs when it has no diff
  if (filter.paths) {
    auto compiled = compile(*filter.paths);
    if (!compiled) return skip("on.{}.paths: {}", where, compiled.error().message);
    bool any = std::ranges::any_of(
        event.changed_files, [&](const std::string& file) { return compiled->matches(file); });
    if (!any)
      return skip("none of the {} changed files matches on.{}.paths", event.changed_files.size(),
                  where);
  }
  if (filter.paths_ignore) {
    auto compiled = compile(*filter.paths_ignore);
    if (!compiled) return skip("on.{}.paths-ignore: {}", where, compiled.error().message);
    bool all = std::ranges::all_of(
        event.changed_files, [&](const std::string& file) { return compiled->matches(file); });
    if (all)
      return skip("all {} changed files match on.{}.paths-ignore", event.changed_files.size(),
                  where);
  }
  return std::nullopt;
}

TriggerDecision match_push(const workflow::EventFilter& filter, const Event& event) {
  bool branch_filters = filter.branches || filter.branches_ignore;
  bool tag_filters = filter.tags || filter.tags_ignore;
  std::string name = event.ref_name();
  if (event.is_tag()) {
    if (branch_filters && !tag_filters)
      return skip("tag '{}' is pushed but on.push filters only branches", name);
    if (auto no = filter_name(filter.tags, filter.tags_ignore, "tag", name, "push")) return *no;
    return runs();  // path filters are not evaluated for tags
  }
  if (event.is_branch()) {
    if (tag_filters && !branch_filters)
      return skip("branch '{}' is pushed but on.push filters only tags", name);
    if (auto no = filter_name(filter.branches, filter.branches_ignore, "branch", name, "push"))
      return *no;
  } else if (branch_filters || tag_filters) {
    return skip("ref '{}' is neither a branch nor a tag, and on.push has ref filters", event.ref);
  }
  if (auto no = filter_paths(filter, event, "push")) return *no;
  return runs();
}

TriggerDecision match_pull_request(const workflow::EventFilter& filter, const Event& event) {
  std::string action = event.action.empty() ? "opened" : event.action;
  if (filter.types.empty()) {
    if (action != "opened" && action != "synchronize" && action != "reopened")
      return skip(
          "{} activity '{}' is not one of the default types (opened, synchronize, "
          "reopened)",
          event.name, action);
  } else if (std::ranges::none_of(filter.types,
                                  [&](const Text& type) { return type.value == action; })) {
    return skip("{} activity '{}' is not in on.{}.types", event.name, action, event.name);
  }
  if (auto no = filter_name(filter.branches, filter.branches_ignore, "base branch", event.base_ref,
                            event.name))
    return *no;
  if (auto no = filter_paths(filter, event, event.name)) return *no;
  return runs();
}

bool parse_number(std::string_view text) {
  if (text.empty()) return false;
  std::string copy(text);
  char* end = nullptr;
  double value = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size() && std::isfinite(value) &&
         !std::isspace(static_cast<unsigned char>(copy.front()));
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

TriggerDecision match_trigger(const workflow::Workflow& workflow, const Event& event) {
  auto trigger = std::ranges::find(workflow.on, event.name, &workflow::Trigger::event);
  if (trigger == workflow.on.end()) return skip("the workflow has no '{}' trigger", event.name);
  if (event.name == "push") return match_push(trigger->filter, event);
  if (event.name == "pull_request" || event.name == "pull_request_target")
    return match_pull_request(trigger->filter, event);
  if (event.name == "schedule" && !event.schedule.empty() &&
      std::ranges::none_of(trigger->cron,
                           [&](const Text& cron) { return cron.value == event.schedule; }))
    return skip("schedule '{}' is not one of this workflow's on.schedule crons", event.schedule);
  return runs();
}

Result<std::map<std::string, std::string>> resolve_dispatch_inputs(
    const workflow::Trigger& trigger, const std::map<std::string, std::string>& given,
    const expr::Context& context) {
  for (const auto& [name, value] : given)
    if (std::ranges::none_of(trigger.inputs,
                             [&](const workflow::InputSpec& spec) { return spec.name == name; }))
      return fail(ErrorCode::invalid_input,
                  "unexpected input '{}': the workflow does not define it", name);
  std::map<std::string, std::string> resolved;
  for (const workflow::InputSpec& spec : trigger.inputs) {
    auto it = given.find(spec.name);
    bool supplied = it != given.end();
    std::string value = supplied                 ? it->second
                        : spec.default_value     ? spec.default_value->value
                        : spec.type == "boolean" ? "false"
                                                 : "";
    if (!supplied && spec.default_value && expr::has_template(value)) {
      KILN_TRY(value, expr::interpolate(value, context, spec.default_value->where));
    }
    std::string source = supplied ? "input" : "default of input";
    if (spec.required && value.empty())
      return fail(ErrorCode::invalid_input, "input '{}' is required", spec.name);
    if (spec.type == "boolean") {
      std::string folded = lower(value);
      if (folded != "true" && folded != "false")
        return fail(ErrorCode::invalid_input, "{} '{}' must be true or false, not '{}'", source,
                    spec.name, value);
      value = folded;
    } else if (spec.type == "number") {
      if (!value.empty() || supplied) {
        if (!parse_number(value))
          return fail(ErrorCode::invalid_input, "{} '{}' must be a number, not '{}'", source,
                      spec.name, value);
      }
    } else if (spec.type == "choice") {
      if ((!value.empty() || supplied) &&
          std::ranges::find(spec.options, value) == spec.options.end())
        return fail(ErrorCode::invalid_input, "{} '{}' must be one of [{}], not '{}'", source,
                    spec.name, fmt::format("{}", fmt::join(spec.options, ", ")), value);
    }
    resolved[spec.name] = value;
  }
  return resolved;
}

}  // namespace kiln::plan
