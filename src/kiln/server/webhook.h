#pragma once
// GitHub-format webhook events (GitHub, Gitea and Forgejo send the same shape) and how one
// becomes a queued trigger of `kiln serve`: which configured repository, which commit, and
// whether it may run at once or must wait for a person's approval.

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
