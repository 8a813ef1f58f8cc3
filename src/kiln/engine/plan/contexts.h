#pragma once
// The `github` and `runner` contexts of a job, and the GITHUB_* / RUNNER_* variables that mirror
// them in the job's environment.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "kiln/engine/plan/repository.h"
#include "kiln/plan/event.h"
#include "kiln/workflow/expr/expr.h"

namespace kiln::engine {

struct JobPlace {
  std::int64_t run_id = 0;
  std::int64_t run_number = 1;
  int run_attempt = 1;
  std::string workflow_name;
  std::string workflow_path;  // relative to the repository
  std::string job_id;
  std::filesystem::path workspace;
  std::filesystem::path temp_dir;
  std::filesystem::path tool_cache;
  std::filesystem::path event_path;  // github.event as a JSON file
};

struct JobContexts {
  expr::Value github;
  expr::Value runner;
  std::map<std::string, std::string> env;  // GITHUB_*, RUNNER_*, CI
};

JobContexts make_job_contexts(const RepositoryInfo& repo, const plan::Event& event,
                              const JobPlace& place);

// The `github` context before a job exists (run-name, workflow env, concurrency groups).
expr::Value workflow_github_context(const RepositoryInfo& repo, const plan::Event& event,
                                    const std::string& workflow_name,
                                    const std::string& workflow_path, std::int64_t run_id,
                                    std::int64_t run_number);

}  // namespace kiln::engine
