#include "kiln/server/check_client.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <ctime>
#include <memory>

#include <fmt/core.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "kiln/core/text.h"

namespace kiln::server {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct ContextFree {
  void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};
struct FileClose {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

Result<std::unique_ptr<EVP_PKEY, KeyFree>> read_key(const std::filesystem::path& file) {
  std::unique_ptr<std::FILE, FileClose> in(std::fopen(file.c_str(), "rb"));
  if (!in)
    return make_error(ErrorCode::invalid_input, fmt::format("cannot read {}", file.string()));
  ERR_clear_error();
  std::unique_ptr<EVP_PKEY, KeyFree> key(PEM_read_PrivateKey(in.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!key || EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA)
    return make_error(ErrorCode::invalid_input,
                      fmt::format("{} holds no unencrypted PEM RSA private key (a GitHub App's "
                                  "key, as GitHub gives it)",
                                  file.string()));
  return key;
}

std::string iso_time(std::chrono::system_clock::time_point time) {
  std::time_t t = std::chrono::system_clock::to_time_t(time);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

Result<std::string> github_app_jwt(std::int64_t app_id, const std::filesystem::path& key_file,
                                   std::chrono::system_clock::time_point now) {
  KILN_TRY(auto key, read_key(key_file));
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch());
  const nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  const nlohmann::json claims = {{"iat", seconds.count() - 60},
                                 {"exp", seconds.count() + 9 * 60},
                                 {"iss", std::to_string(app_id)}};
  const std::string signing_input =
      core::base64(header.dump(), true, false) + "." + core::base64(claims.dump(), true, false);
  std::unique_ptr<EVP_MD_CTX, ContextFree> context(EVP_MD_CTX_new());
  std::size_t length = 0;
  if (!context ||
      EVP_DigestSignInit(context.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(context.get(), nullptr, &length,
                     reinterpret_cast<const unsigned char*>(signing_input.data()),
                     signing_input.size()) != 1)
    return make_error(ErrorCode::internal, "cannot sign the GitHub App's JWT");
  std::string signature(length, '\0');
  if (EVP_DigestSign(context.get(), reinterpret_cast<unsigned char*>(signature.data()), &length,
                     reinterpret_cast<const unsigned char*>(signing_input.data()),
                     signing_input.size()) != 1)
    return make_error(ErrorCode::internal, "cannot sign the GitHub App's JWT");
  signature.resize(length);
  return signing_input + "." + core::base64(signature, true, false);
}

Status check_checks_config(const config::ServeChecks& checks) {
  if (!checks.token.empty()) return {};
  auto key = read_key(checks.private_key_file);
  if (!key)
    return make_error(ErrorCode::invalid_input, "checks.private_key_file: " + key.error().message,
                      checks.key_where);
  return {};
}

CheckClient::CheckClient(config::ServeChecks checks)
    : checks_(std::move(checks)), api_(checks_.api_url) {}

Result<std::string> CheckClient::authorization() {
  if (!checks_.token.empty()) return "token " + checks_.token;
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (!installation_token_.empty() && now < token_until_) return "token " + installation_token_;
  KILN_TRY(auto jwt, github_app_jwt(checks_.app_id, checks_.private_key_file,
                                    std::chrono::system_clock::now()));
  const std::string path =
      fmt::format("/app/installations/{}/access_tokens", checks_.installation_id);
  KILN_TRY(auto answer, api_.send("POST", path, "Bearer " + jwt, "", "installation token"));
  auto body = nlohmann::json::parse(answer, nullptr, false);
  if (!body.is_object() || !body.contains("token") || !body["token"].is_string())
    return make_error(
        ErrorCode::io_error,
        fmt::format("installation token: POST {}{}: no token in the answer", api_.url(), path));
  installation_token_ = body["token"].get<std::string>();
  // Installation tokens last an hour; one is used for 50 minutes.
  token_until_ = now + std::chrono::minutes(50);
  return "token " + installation_token_;
}

Result<std::int64_t> CheckClient::start(const std::string& repository, const CheckRunStart& run) {
  KILN_TRY(auto auth, authorization());
  nlohmann::json body = {{"name", run.name},
                         {"head_sha", run.head_sha},
                         {"status", "in_progress"},
                         {"started_at", iso_time(std::chrono::system_clock::now())},
                         {"external_id", run.external_id}};
  if (!run.details_url.empty()) body["details_url"] = run.details_url;
  const std::string path = fmt::format("/repos/{}/check-runs", repository);
  const std::string what = fmt::format("check run {}", run.name);
  KILN_TRY(auto answer, api_.send("POST", path, auth, body.dump(), what));
  auto created = nlohmann::json::parse(answer, nullptr, false);
  if (!created.is_object() || !created.contains("id") || !created["id"].is_number_integer())
    return make_error(ErrorCode::io_error,
                      fmt::format("{}: POST {}{}: no id in the answer", what, api_.url(), path));
  return created["id"].get<std::int64_t>();
}

Status CheckClient::complete(const std::string& repository, std::int64_t id,
                             const CheckOutput& output) {
  KILN_TRY(auto auth, authorization());
  const std::string path = fmt::format("/repos/{}/check-runs/{}", repository, id);
  const auto& annotations = output.annotations;
  std::size_t sent = 0;
  do {
    nlohmann::json batch = nlohmann::json::array();
    for (; sent < annotations.size() && batch.size() < k_check_annotations_per_request; ++sent)
      batch.push_back(annotations[sent]);
    nlohmann::json body_output = {{"title", output.title}, {"summary", output.summary}};
    if (!output.text.empty()) body_output["text"] = output.text;
    if (!batch.empty()) body_output["annotations"] = std::move(batch);
    nlohmann::json body = {{"output", std::move(body_output)}};
    if (!output.details_url.empty()) body["details_url"] = output.details_url;
    if (!output.external_id.empty()) body["external_id"] = output.external_id;
    if (sent >= annotations.size()) {  // the last request completes the run
      body["status"] = "completed";
      body["conclusion"] = output.conclusion;
      body["completed_at"] = iso_time(std::chrono::system_clock::now());
    }
    KILN_TRY_VOID(api_.send("PATCH", path, auth, body.dump(), fmt::format("check run {}", id)));
  } while (sent < annotations.size());
  return {};
}

JobChecks::JobChecks(const config::ServeRepository& repository, std::string sha,
                     std::string public_url, std::string trigger_url, store::Store& store)
    : client_(*repository.checks),
      repository_(repository.name),
      sha_(std::move(sha)),
      public_url_(std::move(public_url)),
      trigger_url_(std::move(trigger_url)),
      store_(store) {}

void JobChecks::job_started(const std::string& job_key) {
  auto id = client_.start(repository_, {.name = "kiln / " + job_key,
                                        .head_sha = sha_,
                                        .details_url = trigger_url_,
                                        .external_id = ""});
  if (!id) {
    spdlog::warn("{}: {}", repository_, id.error().message);
    return;
  }
  std::lock_guard lock(mutex_);
  ids_[job_key] = *id;
}

void JobChecks::job_finished(const engine::JobSummary& job) {
  std::int64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (auto it = ids_.find(job.key); it != ids_.end()) id = it->second;
  }
  if (id == 0) return;  // never started (skipped), or the forge refused its start
  CheckOutput output = check_output(job);
  // The run it belongs to, for the link and for a re-run requested from the forge's page.
  std::int64_t run_id = 0;
  if (auto row = store_.get_job(job.store_id); row) run_id = row->run_id;
  if (run_id > 0) {
    output.details_url = fmt::format("{}/ui/runs/{}", public_url_, run_id);
    output.external_id = fmt::format("{}", run_id);
  }
  if (auto done = client_.complete(repository_, id, output); !done)
    spdlog::warn("{}: {}", repository_, done.error().message);
}

}  // namespace kiln::server
