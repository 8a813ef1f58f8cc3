// on: the events that start a workflow, their filters, dispatch inputs and schedules.
#include <algorithm>
#include <set>

#include "kiln/workflow/cron.h"
#include "kiln/workflow/expr/expr.h"
#include "kiln/workflow/glob.h"
#include "kiln/workflow/sections.h"
#include "kiln/workflow/timezone.h"

namespace kiln::workflow::detail {

namespace {

// GitHub's workflow trigger events. Kiln acts on push, pull_request, pull_request_target,
// workflow_dispatch and schedule; the others are accepted so that existing files validate.
constexpr std::string_view k_events[] = {"branch_protection_rule",
                                         "check_run",
                                         "check_suite",
                                         "create",
                                         "delete",
                                         "deployment",
                                         "deployment_status",
                                         "discussion",
                                         "discussion_comment",
                                         "fork",
                                         "gollum",
                                         "image_version",
                                         "issue_comment",
                                         "issues",
                                         "label",
                                         "merge_group",
                                         "milestone",
                                         "page_build",
                                         "project",
                                         "project_card",
                                         "project_column",
                                         "public",
                                         "pull_request",
                                         "pull_request_review",
                                         "pull_request_review_comment",
                                         "pull_request_target",
                                         "push",
                                         "registry_package",
                                         "release",
                                         "repository_dispatch",
                                         "schedule",
                                         "status",
                                         "watch",
                                         "workflow_call",
                                         "workflow_dispatch",
                                         "workflow_run"};

constexpr std::string_view k_push_keys[] = {"branches",    "branches-ignore", "tags",
                                            "tags-ignore", "paths",           "paths-ignore"};
constexpr std::string_view k_pull_request_keys[] = {"branches", "branches-ignore", "paths",
                                                    "paths-ignore", "types"};
constexpr std::string_view k_pull_request_types[] = {"assigned",
                                                     "unassigned",
                                                     "labeled",
                                                     "unlabeled",
                                                     "opened",
                                                     "edited",
                                                     "closed",
                                                     "reopened",
                                                     "synchronize",
                                                     "converted_to_draft",
                                                     "milestoned",
                                                     "demilestoned",
                                                     "ready_for_review",
                                                     "locked",
                                                     "unlocked",
                                                     "review_requested",
                                                     "review_request_removed",
                                                     "auto_merge_enabled",
                                                     "auto_merge_disabled",
                                                     "enqueued",
                                                     "dequeued"};
constexpr std::string_view k_dispatch_keys[] = {"inputs"};
constexpr std::string_view k_input_keys[] = {"description", "required", "default", "type",
                                             "options"};
constexpr std::string_view k_input_types[] = {"string", "boolean", "number", "choice",
                                              "environment"};
constexpr std::string_view k_schedule_keys[] = {"cron", "timezone"};
constexpr std::string_view k_image_version_keys[] = {"names", "versions"};
constexpr std::string_view k_call_keys[] = {"inputs", "secrets", "outputs"};
constexpr std::string_view k_call_input_keys[] = {"description", "required", "default", "type"};
constexpr std::string_view k_call_input_types[] = {"boolean", "number", "string"};
constexpr std::string_view k_call_secret_keys[] = {"description", "required"};
constexpr std::string_view k_call_output_keys[] = {"description", "value"};

bool is_filtered_event(std::string_view event) {
  return event == "push" || event == "pull_request" || event == "pull_request_target";
}

bool check_event(Reader& reader, const std::string& event, const SourceLocation& where) {
  if (std::ranges::find(k_events, event) != std::end(k_events)) return true;
  reader.error(where, fmt::format("unknown event '{}'{}", event, suggestion(event, k_events)));
  return false;
}

// branches, tags and paths: a pattern or a list of them, each a valid GitHub filter pattern.
std::optional<std::vector<Text>> read_patterns(Reader& reader, const Entry& entry) {
  auto patterns = reader.text_list(entry, true);
  if (!patterns) return std::nullopt;
  for (const Text& pattern : *patterns) {
    auto compiled = FilterList::compile({pattern.value});
    if (!compiled) reader.error(pattern.where, compiled.error().message);
  }
  return patterns;
}

void read_filter(Reader& reader, const Entry& event, Trigger& trigger) {
  if (event.value.IsNull()) return;
  bool push = event.key == "push";
  auto entries = push ? reader.mapping(event, k_push_keys, "'push'")
                      : reader.mapping(event, k_pull_request_keys, fmt::format("'{}'", event.key));
  if (!entries) return;
  EventFilter& filter = trigger.filter;
  for (const Entry& e : *entries) {
    if (e.key == "types") {
      if (auto types = reader.text_list(e, true)) {
        for (const Text& type : *types)
          if (std::ranges::find(k_pull_request_types, type.value) == std::end(k_pull_request_types))
            reader.error(type.where,
                         fmt::format("unknown activity type '{}' for '{}'{}", type.value, event.key,
                                     suggestion(type.value, k_pull_request_types)));
        filter.types = std::move(*types);
      }
      continue;
    }
    auto patterns = read_patterns(reader, e);
    if (e.key == "branches")
      filter.branches = std::move(patterns);
    else if (e.key == "branches-ignore")
      filter.branches_ignore = std::move(patterns);
    else if (e.key == "tags")
      filter.tags = std::move(patterns);
    else if (e.key == "tags-ignore")
      filter.tags_ignore = std::move(patterns);
    else if (e.key == "paths")
      filter.paths = std::move(patterns);
    else if (e.key == "paths-ignore")
      filter.paths_ignore = std::move(patterns);
  }
  // A positive list and an ignore list of one kind contradict each other; GitHub refuses both.
  for (std::string_view kind : {"branches", "tags", "paths"}) {
    std::string ignore = fmt::format("{}-ignore", kind);
    auto positive = std::ranges::find(*entries, kind, &Entry::key);
    auto negative = std::ranges::find(*entries, ignore, &Entry::key);
    if (positive == entries->end() || negative == entries->end()) continue;
    const Entry& later = positive < negative ? *negative : *positive;
    reader.error(later.key_where, fmt::format("'{}' and '{}' cannot both be used for '{}'", kind,
                                              ignore, event.key));
  }
}

// An input of workflow_dispatch, or of workflow_call (`call`: no choice or environment types,
// and `type` is required, as GitHub has it).
void read_input(Reader& reader, const Entry& entry, std::vector<InputSpec>& inputs,
                bool call = false) {
  InputSpec input;
  input.name = entry.key;
  input.where = entry.key_where;
  if (!is_identifier(entry.key))
    reader.error(entry.key_where,
                 fmt::format("invalid input name '{}': it must start with a letter or '_' and "
                             "hold only letters, digits, '-' and '_'",
                             entry.key));
  if (!entry.value.IsNull()) {
    auto entries =
        call ? reader.mapping(entry, k_call_input_keys, fmt::format("input '{}'", entry.key))
             : reader.mapping(entry, k_input_keys, fmt::format("input '{}'", entry.key));
    if (!entries) return;
    if (call && std::ranges::find(*entries, "type", &Entry::key) == entries->end())
      reader.error(entry.key_where,
                   fmt::format("workflow_call input '{}' needs a 'type' (boolean, number or "
                               "string)",
                               entry.key));
    const Entry* options_entry = nullptr;
    for (const Entry& e : *entries) {
      if (e.key == "description") {
        if (auto text = reader.text(e)) input.description = text->value;
      } else if (e.key == "required") {
        auto text = reader.text(e);
        if (text && !is_boolean(text->value))
          reader.error(text->where,
                       fmt::format("'required' must be true or false, not '{}'", text->value));
        else if (text)
          input.required = text->value == "true" || text->value == "True" || text->value == "TRUE";
      } else if (e.key == "default") {
        input.default_value = reader.text(e);
      } else if (e.key == "type") {
        auto text = reader.text(e);
        if (!text) continue;
        if (call &&
            std::ranges::find(k_call_input_types, text->value) == std::end(k_call_input_types))
          reader.error(text->where,
                       fmt::format("unknown workflow_call input type '{}' (boolean, number or "
                                   "string){}",
                                   text->value, suggestion(text->value, k_call_input_types)));
        else if (std::ranges::find(k_input_types, text->value) == std::end(k_input_types))
          reader.error(text->where, fmt::format("unknown input type '{}'{}", text->value,
                                                suggestion(text->value, k_input_types)));
        else
          input.type = text->value;
      } else if (e.key == "options") {
        options_entry = &e;
        if (auto options = reader.text_list(e, false))
          for (Text& option : *options) input.options.push_back(std::move(option.value));
      }
    }
    if (input.type == "choice" && input.options.empty() && !options_entry)
      reader.error(entry.key_where,
                   fmt::format("choice input '{}' needs a list of 'options'", entry.key));
    // A default may be an expression (evaluated when the workflow is dispatched or called).
    if (input.default_value && !input.default_value->value.empty() &&
        !expr::has_template(input.default_value->value)) {
      const Text& value = *input.default_value;
      if (input.type == "boolean" && !is_boolean(value.value))
        reader.error(value.where, fmt::format("the default of boolean input '{}' must be true or "
                                              "false, not '{}'",
                                              entry.key, value.value));
      else if (input.type == "number" && !is_number(value.value))
        reader.error(value.where, fmt::format("the default of number input '{}' must be a "
                                              "number, not '{}'",
                                              entry.key, value.value));
      else if (input.type == "choice" && !input.options.empty() &&
               std::ranges::find(input.options, value.value) == input.options.end())
        reader.error(value.where, fmt::format("the default '{}' of choice input '{}' is not one "
                                              "of its options",
                                              value.value, entry.key));
    }
  }
  inputs.push_back(std::move(input));
}

void read_dispatch(Reader& reader, const Entry& event, Trigger& trigger) {
  if (event.value.IsNull()) return;
  auto entries = reader.mapping(event, k_dispatch_keys, "'workflow_dispatch'");
  if (!entries) return;
  for (const Entry& e : *entries) {
    if (e.value.IsNull()) continue;
    auto inputs = reader.mapping(e);
    if (!inputs) continue;
    for (const Entry& input : *inputs) read_input(reader, input, trigger.inputs);
  }
}

bool read_required(Reader& reader, const Entry& e) {
  auto text = reader.text(e);
  if (text && !is_boolean(text->value)) {
    reader.error(text->where,
                 fmt::format("'required' must be true or false, not '{}'", text->value));
    return false;
  }
  return text && (text->value == "true" || text->value == "True" || text->value == "TRUE");
}

// on.workflow_call: typed inputs, secrets and outputs of a reusable workflow.
void read_call(Reader& reader, const Entry& event, Trigger& trigger) {
  if (event.value.IsNull()) return;
  auto entries = reader.mapping(event, k_call_keys, "'workflow_call'");
  if (!entries) return;
  for (const Entry& e : *entries) {
    if (e.value.IsNull()) continue;
    auto items = reader.mapping(e);
    if (!items) continue;
    for (const Entry& item : *items) {
      if (e.key == "inputs") {
        read_input(reader, item, trigger.inputs, true);
        continue;
      }
      if (!is_identifier(item.key))
        reader.error(item.key_where,
                     fmt::format("invalid {} name '{}': it must start with a letter or '_' and "
                                 "hold only letters, digits, '-' and '_'",
                                 e.key == "secrets" ? "secret" : "output", item.key));
      if (e.key == "secrets") {
        SecretSpec secret{item.key, false, item.key_where};
        if (!item.value.IsNull()) {
          auto fields =
              reader.mapping(item, k_call_secret_keys, fmt::format("secret '{}'", item.key));
          if (fields)
            for (const Entry& f : *fields)
              if (f.key == "required") secret.required = read_required(reader, f);
        }
        trigger.secrets.push_back(std::move(secret));
      } else {
        OutputSpec output{item.key, {}, item.key_where};
        auto fields =
            reader.mapping(item, k_call_output_keys, fmt::format("output '{}'", item.key));
        if (!fields) continue;
        bool has_value = false;
        for (const Entry& f : *fields) {
          if (f.key != "value") continue;
          if (auto value = reader.text(f)) {
            output.value = std::move(*value);
            has_value = true;
          }
        }
        if (!has_value) {
          if (std::ranges::find(*fields, "value", &Entry::key) == fields->end())
            reader.error(item.key_where,
                         fmt::format("workflow_call output '{}' needs a 'value'", item.key));
          continue;
        }
        trigger.outputs.push_back(std::move(output));
      }
    }
  }
}

void read_schedule(Reader& reader, const Entry& event, Trigger& trigger) {
  auto items = reader.list(event);
  if (!items) return;
  for (const Item& item : *items) {
    auto entries =
        reader.mapping(item.value, item.where, "schedule", k_schedule_keys, "a 'schedule' entry");
    if (!entries) continue;
    std::optional<Text> cron, timezone;
    for (const Entry& e : *entries) {
      auto text = reader.text(e);
      if (!text) continue;
      if (e.key == "cron") {
        if (auto schedule = parse_cron(text->value); !schedule)
          reader.error(text->where, schedule.error().message);
        cron = std::move(text);
      } else {
        if (auto zone = check_timezone(text->value); !zone) {
          if (zone.error().code == ErrorCode::io_error)
            reader.warning(text->where, zone.error().message);
          else
            reader.error(text->where, zone.error().message);
        }
        timezone = std::move(text);
      }
    }
    if (!cron) {
      // (A misspelt key has been named already.)
      if (std::ranges::none_of(*entries, [](const Entry& e) { return e.key == "cron"; }) &&
          entries->size() == item.value.size())
        reader.error(item.where, "a 'schedule' entry needs a 'cron'");
      continue;
    }
    trigger.cron.push_back(std::move(*cron));
    trigger.timezones.push_back(std::move(timezone));
  }
}

// on.image_version: {names, versions}, each a pattern or a list of them.
void read_image_version(Reader& reader, const Entry& event, Trigger& trigger) {
  if (event.value.IsNull()) return;
  auto entries = reader.mapping(event, k_image_version_keys, "'image_version'");
  if (!entries) return;
  for (const Entry& e : *entries)
    (e.key == "names" ? trigger.filter.names : trigger.filter.versions) = read_patterns(reader, e);
}

void read_event(Reader& reader, const Entry& event, Trigger& trigger) {
  if (is_filtered_event(event.key)) {
    read_filter(reader, event, trigger);
  } else if (event.key == "workflow_dispatch") {
    read_dispatch(reader, event, trigger);
  } else if (event.key == "schedule") {
    read_schedule(reader, event, trigger);
  } else if (event.key == "workflow_call") {
    read_call(reader, event, trigger);
  } else if (event.key == "image_version") {
    read_image_version(reader, event, trigger);
  }
  // Other events are accepted as written: Kiln does not act on them.
}

}  // namespace

std::vector<Trigger> read_triggers(Reader& reader, const Entry& on) {
  std::vector<Trigger> triggers;
  auto add = [&](const std::string& event, const SourceLocation& where) -> Trigger* {
    if (!check_event(reader, event, where)) return nullptr;
    if (std::ranges::find(triggers, event, &Trigger::event) != triggers.end()) {
      reader.error(where, fmt::format("duplicate event '{}'", event));
      return nullptr;
    }
    Trigger trigger;
    trigger.event = event;
    trigger.where = where;
    triggers.push_back(std::move(trigger));
    return &triggers.back();
  };
  if (on.value.IsScalar()) {
    add(on.value.Scalar(), on.value_where);
  } else if (on.value.IsSequence()) {
    for (auto& event : reader.text_list(on, false).value_or(std::vector<Text>{}))
      add(event.value, event.where);
  } else if (on.value.IsMap()) {
    auto entries = reader.mapping(on);
    for (const Entry& e : *entries) {
      if (Trigger* trigger = add(e.key, e.key_where)) read_event(reader, e, *trigger);
    }
  }
  if (on.value.IsNull() || (!on.value.IsScalar() && on.value.size() == 0))
    reader.error(on.value_where, "'on' must name at least one event");
  return triggers;
}

}  // namespace kiln::workflow::detail
