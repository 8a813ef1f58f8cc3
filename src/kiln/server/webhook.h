#pragma once
// GitHub-format webhook events (GitHub, Gitea and Forgejo send the same shape) and how one
// becomes a queued trigger of `kiln serve`: which configured repository, which commit, and
// whether it may run at once or must wait for a person's approval.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kiln/config/host_config.h"
#include "kiln/core/result.h"
#include "kiln/store/records.h"

namespace kiln::server {

struct WebhookEvent {
  std::string event;       // push, pull_request, workflow_dispatch (X-GitHub-Event)
  std::string repository;  // repository.full_name: owner/name
  std::string ref;         // push: refs/heads/main; pull_request: refs/pull/N/head
  std::string sha;         // the commit to run; workflow_dispatch: "" until resolved
  std::string sender;      // sender.login
  bool from_fork = false;  // pull_request: the head lives in another repository
  std::string author;      // pull_request: pull_request.user.login; push: sender
  // Events that start nothing (a branch deletion, a closed pull request, a ping, an event kiln
  // does not run) are accepted with 202 and recorded nowhere; `ignored` says why.
  std::string ignored;
  nlohmann::json payload;  // the whole body, for github.event
};

// Reads the payload of an event named by X-GitHub-Event. Malformed JSON or a push/pull_request/
// workflow_dispatch without the fields kiln needs is invalid_input (answered with 400). A
// workflow_dispatch's ref is made a full ref (main -> refs/heads/main) and its inputs strings.
Result<WebhookEvent> parse_webhook(std::string_view event_name, std::string_view body);

// workflow_dispatch names a ref, not a commit: sets event.sha to the ref's commit on the
// repository's clone_url now (git ls-remote). not_found when the remote has no such ref.
Status resolve_dispatch_commit(WebhookEvent& event, const config::ServeRepository& repository);

// Replay protection beyond the delivery id. A replayed delivery is the same signed body (a
// changed byte breaks the signature), so the payload's identity is "EVENT:" and the SHA-256 of
// the body; the store keeps it unique. "" for workflow_dispatch: its payload names no moment,
// so two dispatches of one ref with the same inputs are byte for byte the same delivery.
std::string payload_identity(const WebhookEvent& event, std::string_view body);

// When the event happened by its own payload, in ms since the epoch: push's
// repository.pushed_at (GitHub sends seconds), pull_request's pull_request.updated_at (ISO
// 8601). nullopt when the payload names no such time (Gitea, Forgejo, workflow_dispatch).
std::optional<std::int64_t> event_time(const WebhookEvent& event);

// How old a signed event may be (by event_time) and how far in the future (clock skew):
// deliveries outside are refused, so a body captured once cannot be replayed later even where
// its identity is no longer stored.
inline constexpr std::chrono::hours k_replay_window{24};
inline constexpr std::chrono::minutes k_future_skew{5};

// invalid_input when event_time is outside [now - k_replay_window, now + k_future_skew].
Status check_event_time(const WebhookEvent& event, std::int64_t now_ms);

// The configured repository the event is for; nullptr when none is configured.
const config::ServeRepository* find_repository(const config::ServeConfig& config,
                                               std::string_view full_name);

// True when the event may run without approval: anything but a pull request from a fork, or one
// whose author is in the server's or the repository's trusted_authors.
bool is_trusted(const WebhookEvent& event, const config::ServeConfig& config,
                const config::ServeRepository& repository);

// The trigger to persist for an accepted event: queued, or waiting_approval when untrusted.
store::Trigger make_trigger(const WebhookEvent& event, std::string_view delivery,
                            const config::ServeConfig& config,
                            const config::ServeRepository& repository);

}  // namespace kiln::server
