#include "kiln/server/webhook.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "kiln/server/poller.h"
#include "kiln/server/signature.h"

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

// workflow_dispatch: {"ref", "inputs", "workflow", "repository", "sender"}. The payload names no
// commit: the server resolves the ref (resolve_dispatch_commit). Input values that are not
// strings (a forge may send a boolean input as true) are turned into their text, as GitHub
// shows every input of github.event.inputs as a string.
Result<WebhookEvent> parse_dispatch(WebhookEvent event) {
  json& payload = event.payload;
  event.ref = text_at(payload, {"ref"});
  event.author = event.sender;
  if (event.repository.empty() || event.ref.empty())
    return fail(ErrorCode::invalid_input,
                "workflow_dispatch event without repository.full_name or ref");
  if (!event.ref.starts_with("refs/")) event.ref = "refs/heads/" + event.ref;
  payload["ref"] = event.ref;
  if (auto inputs = payload.find("inputs"); inputs != payload.end() && !inputs->is_null()) {
    if (!inputs->is_object())
      return fail(ErrorCode::invalid_input, "workflow_dispatch: 'inputs' is not an object");
    for (auto& [key, value] : inputs->items()) {
      if (value.is_string()) continue;
      if (value.is_object() || value.is_array())
        return fail(ErrorCode::invalid_input, "workflow_dispatch: input '{}' is not a value", key);
      value = value.is_null() ? std::string() : value.dump();
    }
  }
  if (auto workflow = payload.find("workflow"); workflow != payload.end()) {
    // GitHub names the dispatched file (.github/workflows/ci.yml); only such a path may reach
    // the checkout.
    const std::string path = workflow->is_string() ? workflow->get<std::string>() : "";
    if (!path.starts_with(".github/workflows/") || path.find("..") != std::string::npos ||
        path.find('\\') != std::string::npos)
      return fail(ErrorCode::invalid_input,
                  "workflow_dispatch: 'workflow' must be a file under .github/workflows/");
  }
  return event;
}

// "2026-12-02T00:15:07Z", "...07.123Z", "...07+02:00": ms since the epoch.
std::optional<std::int64_t> parse_iso8601(const std::string& text) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  std::size_t at = static_cast<std::size_t>(consumed);
  if (at < text.size() && text[at] == '.')
    for (++at; at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]));) ++at;
  std::int64_t offset_s = 0;
  const std::string zone = text.substr(at);
  int hours = 0, minutes = 0;
  if (zone == "Z" || zone.empty()) {
  } else if ((zone[0] == '+' || zone[0] == '-') &&
             std::sscanf(zone.c_str() + 1, "%2d:%2d", &hours, &minutes) == 2) {
    offset_s = (zone[0] == '+' ? 1 : -1) * (hours * 3600 + minutes * 60);
  } else {
    return std::nullopt;
  }
  return (static_cast<std::int64_t>(timegm(&tm)) - offset_s) * 1000;
}

// A time in a payload: seconds since the epoch (a number) or ISO 8601 text.
std::optional<std::int64_t> time_value(const json& value) {
  if (value.is_number_integer()) return value.get<std::int64_t>() * 1000;
  if (value.is_string()) return parse_iso8601(value.get<std::string>());
  return std::nullopt;
}

const json* find_path(const json& value, std::initializer_list<const char*> path) {
  const json* node = &value;
  for (const char* key : path) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

}  // namespace

std::string payload_identity(const WebhookEvent& event, std::string_view body) {
  if (event.event == "workflow_dispatch") return {};
  return event.event + ":" + sha256_hex(body);
}

std::optional<std::int64_t> event_time(const WebhookEvent& event) {
  const json* value = nullptr;
  if (event.event == "push") value = find_path(event.payload, {"repository", "pushed_at"});
  if (event.event == "pull_request")
    value = find_path(event.payload, {"pull_request", "updated_at"});
  return value ? time_value(*value) : std::nullopt;
}

Status check_event_time(const WebhookEvent& event, std::int64_t now_ms) {
  const auto when = event_time(event);
  if (!when) return {};
  const std::int64_t window = std::chrono::milliseconds(k_replay_window).count();
  const std::int64_t skew = std::chrono::milliseconds(k_future_skew).count();
  if (*when < now_ms - window)
    return fail(ErrorCode::invalid_input,
                "the {} happened {} h ago, before the replay window of {} h: not run", event.event,
                (now_ms - *when) / 3'600'000, k_replay_window.count());
  if (*when > now_ms + skew)
    return fail(ErrorCode::invalid_input,
                "the {} is dated {} s in the future (more than the {} min allowed for clock skew)",
                event.event, (*when - now_ms) / 1000, k_future_skew.count());
  return {};
}

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
  if (event_name == "workflow_dispatch") return parse_dispatch(std::move(event));
  event.ignored = fmt::format("event '{}' starts nothing", event_name);
  return event;
}

Status resolve_dispatch_commit(WebhookEvent& event, const config::ServeRepository& repository) {
  KILN_TRY(auto heads, ls_remote(repository.clone_url, {event.ref}));
  auto found = heads.find(event.ref);
  if (found == heads.end())
    return fail(ErrorCode::not_found, "{} has no ref {}", repository.name, event.ref);
  event.sha = found->second;
  return {};
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
