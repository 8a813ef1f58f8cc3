#include "kiln/engine/plan/contexts.h"

#include <unistd.h>

#include <fmt/format.h>

namespace kiln::engine {
namespace {

std::string ref_name(const std::string& ref) {
  for (std::string_view prefix : {"refs/heads/", "refs/tags/"})
    if (ref.starts_with(prefix)) return ref.substr(prefix.size());
  if (ref.starts_with("refs/pull/")) return ref.substr(10);  // "1/merge", as GitHub shows it
  return ref;
}

std::string host_name() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "kiln";
  return buffer;
}

std::string actor() {
  if (const char* user = std::getenv("USER"); user && *user) return user;
  return "kiln";
}

}  // namespace

expr::Value workflow_github_context(const RepositoryInfo& repo, const plan::Event& event,
                                    const std::string& workflow_name,
                                    const std::string& workflow_path, std::int64_t run_id,
                                    std::int64_t run_number) {
  const bool is_pr = event.name.starts_with("pull_request");
  expr::Value github = {
      {"action", ""},
      {"actor", actor()},
      {"triggering_actor", actor()},
      {"api_url", "http://localhost/api"},
      {"base_ref", is_pr ? event.base_ref : ""},
      {"head_ref", is_pr ? event.head_ref : ""},
      {"event", event.payload},
      {"event_name", event.name},
      {"ref", event.ref},
      {"ref_name", ref_name(event.ref)},
      {"ref_type", event.ref.starts_with("refs/tags/") ? "tag" : "branch"},
      {"ref_protected", false},
      {"repository", repo.name},
      {"repository_owner", repo.name.substr(0, repo.name.find('/'))},
      {"retention_days", "90"},
      {"run_attempt", "1"},
      {"run_id", std::to_string(run_id)},
      {"run_number", std::to_string(run_number)},
      {"server_url", "http://localhost"},
      {"sha", event.sha},
      {"workflow", workflow_name},
      {"workflow_ref", fmt::format("{}/{}@{}", repo.name, workflow_path, event.ref)},
      {"workflow_sha", event.sha},
      {"token", ""},
  };
  return github;
}

JobContexts make_job_contexts(const RepositoryInfo& repo, const plan::Event& event,
                              const JobPlace& place) {
  JobContexts contexts;
  contexts.github = workflow_github_context(repo, event, place.workflow_name, place.workflow_path,
                                            place.run_id, place.run_number);
  auto& github = contexts.github;
  github["run_attempt"] = std::to_string(place.run_attempt);
  github["job"] = place.job_id;
  github["workspace"] = place.workspace.string();
  github["event_path"] = place.event_path.string();
  github["action_path"] = "";

  contexts.runner = {
      {"name", host_name()},
      {"os", "Linux"},
      {"arch", sizeof(void*) == 8 ? "X64" : "X86"},
      {"temp", place.temp_dir.string()},
      {"tool_cache", place.tool_cache.string()},
      {"debug", ""},
      {"environment", "self-hosted"},
  };

  auto& env = contexts.env;
  env["CI"] = "true";
  env["GITHUB_ACTIONS"] = "true";
  env["GITHUB_ACTOR"] = github["actor"];
  env["GITHUB_TRIGGERING_ACTOR"] = github["triggering_actor"];
  env["GITHUB_API_URL"] = github["api_url"];
  env["GITHUB_SERVER_URL"] = github["server_url"];
  env["GITHUB_BASE_REF"] = github["base_ref"];
  env["GITHUB_HEAD_REF"] = github["head_ref"];
  env["GITHUB_EVENT_NAME"] = event.name;
  env["GITHUB_EVENT_PATH"] = place.event_path.string();
  env["GITHUB_JOB"] = place.job_id;
  env["GITHUB_REF"] = event.ref;
  env["GITHUB_REF_NAME"] = github["ref_name"];
  env["GITHUB_REF_TYPE"] = github["ref_type"];
  env["GITHUB_REF_PROTECTED"] = "false";
  env["GITHUB_REPOSITORY"] = repo.name;
  env["GITHUB_REPOSITORY_OWNER"] = github["repository_owner"];
  env["GITHUB_RETENTION_DAYS"] = "90";
  env["GITHUB_RUN_ATTEMPT"] = std::to_string(place.run_attempt);
  env["GITHUB_RUN_ID"] = std::to_string(place.run_id);
  env["GITHUB_RUN_NUMBER"] = std::to_string(place.run_number);
  env["GITHUB_SHA"] = event.sha;
  env["GITHUB_WORKFLOW"] = place.workflow_name;
  env["GITHUB_WORKFLOW_REF"] = github["workflow_ref"];
  env["GITHUB_WORKFLOW_SHA"] = event.sha;
  env["GITHUB_WORKSPACE"] = place.workspace.string();
  env["RUNNER_NAME"] = contexts.runner["name"];
  env["RUNNER_OS"] = "Linux";
  env["RUNNER_ARCH"] = contexts.runner["arch"];
  env["RUNNER_TEMP"] = place.temp_dir.string();
  env["RUNNER_TOOL_CACHE"] = place.tool_cache.string();
  env["RUNNER_ENVIRONMENT"] = "self-hosted";
  return contexts;
}

}  // namespace kiln::engine
