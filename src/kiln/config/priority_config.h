#pragma once
// kiln.yml's `priority:` section (docs/configuration.md "Priority classes"): the order in which
// queued jobs take this host's GPUs and job slots. Classes are listed highest first; a job takes
// the first class whose every given key matches it, and a job that matches none is in the
// implicit lowest class `default`. Within a class jobs start first come, first served. A job that
// waits climbs one class per `aging` of waiting, so that a busy high class never starves a low one.
//
//   priority:
//     aging: 10m                       # one class up per 10 minutes of waiting (default 10m)
//     classes:
//       - name: release
//         branch: [main, 'release/*']  # the pushed branch, or a pull request's base branch
//         event: push                  # push, pull_request, pull_request_target,
//                                      # workflow_dispatch, schedule, image_version
//       - name: pull-request
//         event: [pull_request, pull_request_target]
//       - name: nightly
//         repository: 'ml/*'           # owner/name (kiln run: the repository's folder name)
//         label: nightly               # one of the job's runs-on labels
//
// Patterns are GitHub's branch-filter globs (workflow/glob.h); a key given as a list matches
// when any of its patterns does.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/workflow/glob.h"

namespace kiln::config {

// What a job is matched on.
struct PriorityFacts {
  std::string repository;  // owner/name
  std::string branch;      // the pushed branch; a pull request's base branch
  std::string event;       // push, pull_request, ...
  std::vector<std::string> labels;
};

struct PriorityClass {
  std::string name;
  // Each empty: any. Each non-empty: one of the patterns must match.
  std::vector<workflow::Glob> repository, branch, event, label;
  SourceLocation where;

  bool matches(const PriorityFacts& job) const;
};

// The name of the implicit class of jobs no class matches.
inline constexpr std::string_view k_default_priority_class = "default";

struct PriorityPolicy {
  std::vector<PriorityClass> classes;  // highest first
  std::chrono::milliseconds aging{10 * 60'000};

  // The job's class: its index in `classes` (0 is the highest), or classes.size() for
  // `default`, and its name.
  struct Placement {
    int rank = 0;
    std::string name;
  };
  Placement classify(const PriorityFacts& job) const;

  // The class a job of `rank` that has waited `waited` competes in: one class up per `aging`,
  // never above the highest.
  int effective_rank(int rank, std::chrono::milliseconds waited) const;
};

}  // namespace kiln::config
