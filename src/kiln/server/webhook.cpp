#include "kiln/server/webhook.h"

#include <algorithm>

namespace kiln::server {
namespace {

using json = nlohmann::json;

// The string at a path of objects, or "" when any part is missing or not a string/object.
std::string text_at(const json& value, std::initializer_list<const char*> path) {
  const json* node = &value;
  for (const char* key : path) {
    if (!node->is_object()) return {};
    auto it = node->find(key);
    if (it == node->end()) return {};
    node = &*it;
  }
  return node->is_string() ? node->get<std::string>() : std::string{};
}

bool is_sha(std::string_view text) {
  return text.size() == 40 &&
         std::all_of(text.begin(), text.end(), [](char c) { return std::isxdigit(c); });
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

Result<WebhookEvent> parse_webhook(std::string_view event_name, std::string_view body) {
  WebhookEvent event;
  event.event = std::string(event_name);
  event.payload = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (event.payload.is_discarded() || !event.payload.is_object())
    return fail(ErrorCode::invalid_input, "the body is not a JSON object");
  const json& payload = event.payload;
  event.repository = text_at(payload, {"repository", "full_name"});
  event.sender = text_at(payload, {"sender", "login"});
  if (event_name == "push") {
    event.ref = text_at(payload, {"ref"});
    event.sha = text_at(payload, {"after"});
    event.author = event.sender;
    if (event.repository.empty() || event.ref.empty() || !is_sha(event.sha))
      return fail(ErrorCode::invalid_input,
                  "push event without repository.full_name, ref or a commit in 'after'");
    const auto deleted = payload.find("deleted");
    if ((deleted != payload.end() && deleted->is_boolean() && deleted->get<bool>()) ||
        event.sha == std::string(40, '0'))
      event.ignored = "the push deletes the ref";
    return event;
  }
  if (event_name == "pull_request") {
    const std::string action = text_at(payload, {"action"});
    const auto found = payload.find("pull_request");
    const json* pull = found != payload.end() && found->is_object() ? &*found : nullptr;
    if (event.repository.empty() || !pull || !pull->contains("number") ||
        !pull->at("number").is_number_integer())
      return fail(ErrorCode::invalid_input,
                  "pull_request event without repository.full_name or pull_request.number");
    event.sha = text_at(*pull, {"head", "sha"});
    if (!is_sha(event.sha))
      return fail(ErrorCode::invalid_input, "pull_request event without pull_request.head.sha");
    event.ref = fmt::format("refs/pull/{}/head", pull->at("number").get<long long>());
    event.author = text_at(*pull, {"user", "login"});
    const std::string head_repo = text_at(*pull, {"head", "repo", "full_name"});
    // A head repository other than the base (or one that is gone) is a fork.
    event.from_fork = head_repo != event.repository;
    if (action != "opened" && action != "synchronize" && action != "reopened")
      event.ignored = fmt::format("pull_request action '{}' starts nothing", action);
    return event;
  }
  event.ignored = fmt::format("event '{}' starts nothing", event_name);
  return event;
}

const config::ServeRepository* find_repository(const config::ServeConfig& config,
                                               std::string_view full_name) {
  for (const auto& repository : config.repositories)
    if (repository.name == full_name) return &repository;
  return nullptr;
}

bool is_trusted(const WebhookEvent& event, const config::ServeConfig& config,
                const config::ServeRepository& repository) {
  if (event.event != "pull_request" || !event.from_fork) return true;
  return !event.author.empty() && (contains(config.trusted_authors, event.author) ||
                                   contains(repository.trusted_authors, event.author));
}

store::Trigger make_trigger(const WebhookEvent& event, std::string_view delivery,
                            const config::ServeConfig& config,
                            const config::ServeRepository& repository) {
  store::Trigger trigger;
  trigger.delivery = std::string(delivery);
  trigger.repository = repository.name;
  trigger.event = event.event;
  trigger.ref = event.ref;
  trigger.sha = event.sha;
  trigger.sender = event.sender;
  trigger.payload = event.payload;
  if (is_trusted(event, config, repository)) {
    trigger.status = store::TriggerStatus::queued;
  } else {
    trigger.status = store::TriggerStatus::waiting_approval;
    trigger.message = fmt::format(
        "pull request from a fork by {}, who is not a trusted author: waits for `kiln approve`",
        event.author.empty() ? "an unknown author" : event.author);
  }
  return trigger;
}

}  // namespace kiln::server
