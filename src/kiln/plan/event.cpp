#include "kiln/plan/event.h"

namespace kiln::plan {
namespace {

constexpr std::string_view k_heads = "refs/heads/";
constexpr std::string_view k_tags = "refs/tags/";

// payload[a][b]... as a string; absent is "", present but not a string is an error.
Result<std::string> string_at(const nlohmann::json& payload,
                              std::initializer_list<const char*> path) {
  const nlohmann::json* node = &payload;
  std::string dotted;
  for (const char* key : path) {
    dotted += dotted.empty() ? key : fmt::format(".{}", key);
    if (!node->is_object()) return std::string();
    auto it = node->find(key);
    if (it == node->end() || it->is_null()) return std::string();
    node = &*it;
  }
  if (!node->is_string())
    return fail(ErrorCode::invalid_input, "event payload: '{}' must be a string, not {}", dotted,
                node->type_name());
  return node->get<std::string>();
}

}  // namespace

bool Event::is_branch() const { return ref.starts_with(k_heads); }
bool Event::is_tag() const { return ref.starts_with(k_tags); }

std::string Event::ref_name() const {
  if (is_branch()) return ref.substr(k_heads.size());
  if (is_tag()) return ref.substr(k_tags.size());
  return ref;
}

Result<Event> event_from_payload(std::string_view name, const nlohmann::json& payload) {
  if (!payload.is_object())
    return fail(ErrorCode::invalid_input, "event payload must be a JSON object, not {}",
                payload.type_name());
  Event event;
  event.name = std::string(name);
  event.payload = payload;
  KILN_TRY(event.action, string_at(payload, {"action"}));
  KILN_TRY(event.ref, string_at(payload, {"ref"}));
  KILN_TRY(event.before, string_at(payload, {"before"}));
  KILN_TRY(event.sha, string_at(payload, {"after"}));
  KILN_TRY(event.schedule, string_at(payload, {"schedule"}));
  if (payload.contains("pull_request")) {
    KILN_TRY(event.base_ref, string_at(payload, {"pull_request", "base", "ref"}));
    KILN_TRY(event.head_ref, string_at(payload, {"pull_request", "head", "ref"}));
    KILN_TRY(std::string head_sha, string_at(payload, {"pull_request", "head", "sha"}));
    if (event.sha.empty()) event.sha = head_sha;
    const nlohmann::json& pull_request = payload.at("pull_request");
    if (event.ref.empty() && pull_request.is_object()) {
      auto number = pull_request.find("number");
      if (number != pull_request.end() && number->is_number_integer())
        event.ref = fmt::format("refs/pull/{}/merge", number->get<long long>());
    }
  }
  if (auto inputs = payload.find("inputs"); inputs != payload.end() && !inputs->is_null()) {
    if (!inputs->is_object())
      return fail(ErrorCode::invalid_input, "event payload: 'inputs' must be an object");
    for (const auto& [key, value] : inputs->items())
      event.inputs[key] = value.is_string() ? value.get<std::string>() : value.dump();
  }
  return event;
}

}  // namespace kiln::plan
