#pragma once
// The event that may start workflow runs: what happened (a push, a pull request, a manual
// dispatch, a schedule), to which ref, and with which changed files. Built by the CLI
// (`kiln run --event`), by the webhook receiver, or by the git poller; read by trigger matching
// and, through `payload`, by expressions as `github.event`.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"

namespace kiln::plan {

// Every field has a default, so `Event{.name = "push", .ref = "refs/heads/main"}` works.
struct Event {
  // push | pull_request | pull_request_target | workflow_dispatch | schedule (others are
  // passed through: a workflow that lists them runs, without filters).
  std::string name = {};
  // pull_request*: the activity type (opened, synchronize, reopened, closed, ...). Trigger
  // matching reads an empty action as "opened", which is what a local run simulates.
  std::string action = {};
  // The fully-qualified ref: refs/heads/<branch> or refs/tags/<tag> for a push; for a pull
  // request refs/pull/<n>/merge; for dispatch and schedule the branch that is run.
  std::string ref = {};
  std::string sha = {};     // the commit the run checks out
  std::string before = {};  // push: the previous tip of the ref (all zeros for a new ref)
  // pull_request*: branch names without refs/heads/. Branch filters match `base_ref`.
  std::string base_ref = {}, head_ref = {};
  // The files the push or pull request changes, relative to the repository root. Path filters
  // are only applied when `changed_files_known`; an unknown diff (too many commits, no history)
  // runs the workflow, as GitHub does when it cannot produce the diff.
  std::vector<std::string> changed_files = {};
  bool changed_files_known = false;
  std::map<std::string, std::string> inputs = {};  // workflow_dispatch inputs as given (text)
  std::string schedule =
      {};  // schedule: the cron text that fired (github.event.schedule); may be empty
  nlohmann::json payload = nlohmann::json::object();  // github.event

  // "refs/heads/main" -> true; then ref_name() is "main".
  bool is_branch() const;
  bool is_tag() const;
  // The short name of `ref` (github.ref_name): branch or tag name, or `ref` unchanged.
  std::string ref_name() const;
};

// Builds an Event from a GitHub webhook payload (also what `--event-file` reads): ref, before,
// after, pull_request.{base,head}.{ref,sha}, action, inputs, schedule. Changed files are not in
// a payload; the caller fills them from git. Errors when the payload is not an object or a
// field that is present has the wrong type.
Result<Event> event_from_payload(std::string_view name, const nlohmann::json& payload);

}  // namespace kiln::plan
