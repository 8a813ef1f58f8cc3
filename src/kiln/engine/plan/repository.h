#pragma once
// The git repository a run is for, and the event that starts the run: `kiln run` with no
// --event is a push of the current HEAD; other events are built from git and --event-file.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/engine/engine.h"
#include "kiln/plan/event.h"

namespace kiln::engine {

struct RepositoryInfo {
  std::filesystem::path root;  // the work tree's top level
  std::string name;            // "owner/repo" from the origin remote, else "local/<dir>"
  std::string head_sha;
  std::string head_ref;        // "refs/heads/main"; empty when HEAD is detached
  std::string parent_sha;      // HEAD's first parent; empty for a root commit
  std::string default_branch;  // origin's HEAD, else main or master where it exists, else the
                               // current branch
  std::string author_name, author_email, subject;
  std::vector<std::string> head_changed_files;  // HEAD against its first parent (root: all)
  // The working copy as a commit (snapshot_work_tree), when it has uncommitted changes: what
  // actions/checkout gives for the event's commit when that is HEAD. Empty: a clean tree.
  std::string work_tree_sha;
};

Result<RepositoryInfo> inspect_repository(const std::filesystem::path& path);

// The top level of the work tree holding `path`: the nearest directory upwards with a `.git`
// entry (a directory, or a file for worktrees and submodules).
std::optional<std::filesystem::path> find_work_tree(const std::filesystem::path& path);

// The work tree as it is, uncommitted changes and untracked files that are not ignored
// included, as a commit object whose parent is HEAD (through a temporary index: no ref, branch,
// index or file of the repository changes); empty when the tree is clean. `kiln run` runs this
// working copy, as act does: the workflow files are read from it, actions/checkout gives it.
Result<std::string> snapshot_work_tree(const RepositoryInfo& repo);

// Files changed between two commits (`from` empty: every file of `to`).
Result<std::vector<std::string>> changed_files(const RepositoryInfo& repo, const std::string& from,
                                               const std::string& to);

// The event of a run, with github.event's payload filled the way GitHub fills it.
Result<plan::Event> make_event(const RunOptions& options, const RepositoryInfo& repo);

// The text of an event file (`kiln run --event-file`): a webhook payload, a JSON object. What
// make_event fills in must have its shape when present (repository, pull_request and its head
// and base, inputs: objects; ref, after, before, action, schedule: strings); an error names the
// file and the member.
Result<nlohmann::json> parse_event_file(std::string_view text, const std::string& file);

}  // namespace kiln::engine
