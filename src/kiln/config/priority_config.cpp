// The priority: section of kiln.yml (priority_config.h, docs/configuration.md#priority-classes).

#include "kiln/config/priority_config.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "kiln/config/reader.h"

namespace kiln::config {
namespace {

// The events a run can have (kiln run --event, kiln serve's triggers).
constexpr std::array<std::string_view, 6> k_events = {
    "push",     "pull_request", "pull_request_target", "workflow_dispatch",
    "schedule", "image_version"};

bool any_matches(const std::vector<workflow::Glob>& patterns, std::string_view subject) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const workflow::Glob& glob) { return glob.matches(subject); });
}

}  // namespace

bool PriorityClass::matches(const PriorityFacts& job) const {
  if (!repository.empty() && !any_matches(repository, job.repository)) return false;
  if (!branch.empty() && !any_matches(branch, job.branch)) return false;
  if (!event.empty() && !any_matches(event, job.event)) return false;
  if (!label.empty() &&
      std::none_of(job.labels.begin(), job.labels.end(),
                   [&](const std::string& value) { return any_matches(label, value); }))
    return false;
  return true;
}

PriorityPolicy::Placement PriorityPolicy::classify(const PriorityFacts& job) const {
  for (std::size_t i = 0; i < classes.size(); ++i)
    if (classes[i].matches(job)) return {static_cast<int>(i), classes[i].name};
  return {static_cast<int>(classes.size()), std::string(k_default_priority_class)};
}

int PriorityPolicy::effective_rank(int rank, std::chrono::milliseconds waited) const {
  if (aging.count() <= 0 || waited.count() <= 0) return rank;
  const auto steps = waited / aging;
  return steps >= rank ? 0 : rank - static_cast<int>(steps);
}

namespace detail {
namespace {

// A word or a list of words, each a pattern; `event` names are checked against k_events.
Result<std::vector<workflow::Glob>> read_patterns(const Reader& reader, const YAML::Node& node,
                                                  const std::string& path, bool events) {
  std::vector<workflow::Glob> patterns;
  if (!node || node.IsNull()) return patterns;
  std::vector<YAML::Node> items;
  if (node.IsSequence()) {
    for (const auto& item : node) items.push_back(item);
    if (items.empty()) return reader.error(node, "{}: empty list (leave the key out: any)", path);
  } else {
    items.push_back(node);
  }
  for (const auto& item : items) {
    KILN_TRY(auto text, reader.scalar(item, path));
    if (text.empty()) return reader.error(item, "{}: empty pattern", path);
    if (events && std::find(k_events.begin(), k_events.end(), text) == k_events.end()) {
      std::string known;
      for (auto name : k_events) known += (known.empty() ? "" : ", ") + std::string(name);
      return reader.error(item, "{}: unknown event '{}' (known: {})", path, text, known);
    }
    auto glob = workflow::Glob::compile(text);
    if (!glob) return reader.error(item, "{}: '{}': {}", path, text, glob.error().message);
    patterns.push_back(std::move(*glob));
  }
  return patterns;
}

Result<PriorityClass> read_class(const Reader& reader, const YAML::Node& node,
                                 const std::string& path) {
  if (!node.IsMap())
    return reader.error(node, "{}: expected a mapping (name: ..., branch: ..., event: ...)", path);
  KILN_TRY_VOID(reader.mapping(node, path, {"name", "repository", "branch", "event", "label"}));
  PriorityClass result;
  result.where = reader.where(node);
  auto name = node["name"];
  if (!name || name.IsNull()) return reader.error(node, "{}.name: required", path);
  KILN_TRY(result.name, reader.scalar(name, path + ".name"));
  const bool word = !result.name.empty() &&
                    std::all_of(result.name.begin(), result.name.end(), [](unsigned char c) {
                      return std::isalnum(c) || c == '-' || c == '_' || c == '.';
                    });
  if (!word)
    return reader.error(name, "{}.name: '{}' is not a name (letters, digits, '-', '_', '.')", path,
                        result.name);
  if (result.name == k_default_priority_class)
    return reader.error(name,
                        "{}.name: 'default' is the class of the jobs no class matches, "
                        "below every listed class",
                        path);
  KILN_TRY(result.repository,
           read_patterns(reader, node["repository"], path + ".repository", false));
  KILN_TRY(result.branch, read_patterns(reader, node["branch"], path + ".branch", false));
  KILN_TRY(result.event, read_patterns(reader, node["event"], path + ".event", true));
  KILN_TRY(result.label, read_patterns(reader, node["label"], path + ".label", false));
  if (result.repository.empty() && result.branch.empty() && result.event.empty() &&
      result.label.empty())
    return reader.error(node,
                        "{}: a class needs at least one of repository, branch, event, label "
                        "(one that matches every job leaves the classes below it empty)",
                        path);
  return result;
}

}  // namespace

Status read_priority(const Reader& reader, const YAML::Node& node, PriorityPolicy& policy) {
  if (!node || node.IsNull()) return {};
  KILN_TRY_VOID(reader.mapping(node, "priority", {"aging", "classes"}));
  if (auto aging = node["aging"]; aging && !aging.IsNull()) {
    KILN_TRY(auto text, reader.scalar(aging, "priority.aging"));
    auto duration = parse_duration(text);
    if (!duration) return reader.error(aging, "priority.aging: {}", duration.error().message);
    if (duration->count() <= 0)
      return reader.error(aging,
                          "priority.aging: must be more than 0 (it is what keeps a low class "
                          "from waiting forever)");
    policy.aging = *duration;
  }
  auto classes = node["classes"];
  if (!classes || classes.IsNull()) return {};
  if (!classes.IsSequence())
    return reader.error(classes, "priority.classes: expected a list of classes, highest first");
  std::set<std::string> names;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const auto path = fmt::format("priority.classes[{}]", i);
    KILN_TRY(auto priority_class, read_class(reader, classes[i], path));
    if (!names.insert(priority_class.name).second)
      return reader.error(classes[i]["name"], "{}.name: '{}' is already a class", path,
                          priority_class.name);
    policy.classes.push_back(std::move(priority_class));
  }
  return {};
}

}  // namespace detail
}  // namespace kiln::config
