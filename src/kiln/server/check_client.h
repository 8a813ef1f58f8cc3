#pragma once
// GitHub check runs, one per job (docs/serve.md "Check runs"): created in_progress when the job
// starts (POST {api_url}/repos/OWNER/REPO/check-runs), completed when it ends (PATCH
// .../check-runs/ID) with the job's output (check_output.h), annotations 50 to a request.
// Authenticated with a token, or as a GitHub App: a JWT (RS256, signed with the app's private
// key) buys an installation token (POST /app/installations/ID/access_tokens), kept until it is
// close to expiring.

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "kiln/config/host_config.h"
#include "kiln/core/result.h"
#include "kiln/server/check_output.h"
#include "kiln/server/forge_api.h"
#include "kiln/store/store.h"

namespace kiln::server {

// The app's JWT (RS256) for `now`: issued 60 s before it (clock skew), valid 9 minutes.
// invalid_input when the key file holds no RSA private key.
Result<std::string> github_app_jwt(std::int64_t app_id, const std::filesystem::path& key_file,
                                   std::chrono::system_clock::time_point now);

// Reads the app's key once (server start): a missing or unusable file is a configuration error
// at checks.private_key_file's FILE:LINE:COL.
Status check_checks_config(const config::ServeChecks& checks);

struct CheckRunStart {
  std::string name{};  // "kiln / build": the job, as the commit statuses name it
  std::string head_sha{};
  std::string details_url{};  // the run on the server
  std::string external_id{};  // the run's id once known (JobChecks sets it on completion)
};

class CheckClient {
 public:
  explicit CheckClient(config::ServeChecks checks);

  // The check run's id.
  Result<std::int64_t> start(const std::string& repository, const CheckRunStart& run);
  // Completes it with `output`; the annotations past the first 50 in further requests.
  Status complete(const std::string& repository, std::int64_t id, const CheckOutput& output);

 private:
  Result<std::string> authorization();

  config::ServeChecks checks_;
  ForgeApi api_;
  std::mutex mutex_;
  std::string installation_token_;
  std::chrono::steady_clock::time_point token_until_{};
};

// The check runs of one trigger's jobs: started when a job starts, completed when it ends.
// Failures to reach the forge are logged, never fail a job. Called from job threads.
class JobChecks {
 public:
  JobChecks(const config::ServeRepository& repository, std::string sha, std::string public_url,
            std::string trigger_url, store::Store& store);

  void job_started(const std::string& job_key);
  void job_finished(const engine::JobSummary& job);

 private:
  CheckClient client_;
  const std::string repository_, sha_, public_url_, trigger_url_;
  store::Store& store_;
  std::mutex mutex_;
  std::map<std::string, std::int64_t> ids_;  // job key -> its check run
};

}  // namespace kiln::server
