// Check runs against a local HTTP server standing in for GitHub's API: a GitHub App's JWT buys
// an installation token, runs start and complete, annotations go 50 to a request.

#include "kiln/server/check_client.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

namespace kiln::server {
namespace {

namespace fs = std::filesystem;

std::string base64url_decode(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
  };
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (char c : text) {
    int v = value(c);
    if (v < 0) return "<bad>";
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  return out;
}

// An RSA key written as PEM (as GitHub gives an app's key), and kept for verifying.
struct AppKey {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  fs::path file =
      fs::temp_directory_path() / ("kiln-app-key-" + std::to_string(::getpid()) + ".pem");
  AppKey() {
    std::FILE* out = std::fopen(file.c_str(), "wb");
    PEM_write_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(out);
  }
  ~AppKey() {
    EVP_PKEY_free(key);
    fs::remove(file);
  }
  bool verifies(const std::string& jwt) const {
    const auto dot = jwt.rfind('.');
    const std::string input = jwt.substr(0, dot);
    const std::string signature = base64url_decode(jwt.substr(dot + 1));
    EVP_MD_CTX* context = EVP_MD_CTX_new();
    bool ok =
        EVP_DigestVerifyInit(context, nullptr, EVP_sha256(), nullptr, key) == 1 &&
        EVP_DigestVerify(context, reinterpret_cast<const unsigned char*>(signature.data()),
                         signature.size(), reinterpret_cast<const unsigned char*>(input.data()),
                         input.size()) == 1;
    EVP_MD_CTX_free(context);
    return ok;
  }
};

TEST(GithubAppJwt, IsSignedRs256WithTheAppsKeyAndNamesTheApp) {
  AppKey key;
  const auto now = std::chrono::system_clock::from_time_t(1'800'000'000);
  auto jwt = github_app_jwt(4242, key.file, now);
  ASSERT_TRUE(jwt) << jwt.error().message;
  EXPECT_TRUE(key.verifies(*jwt));
  EXPECT_FALSE(key.verifies(*jwt + "A"));
  const auto first = jwt->find('.'), second = jwt->rfind('.');
  auto header = nlohmann::json::parse(base64url_decode(jwt->substr(0, first)));
  auto claims = nlohmann::json::parse(base64url_decode(jwt->substr(first + 1, second - first - 1)));
  EXPECT_EQ(header["alg"], "RS256");
  EXPECT_EQ(claims["iss"], "4242");
  EXPECT_EQ(claims["iat"], 1'800'000'000 - 60);
  EXPECT_EQ(claims["exp"], 1'800'000'000 + 540);  // GitHub refuses more than 10 minutes
}

TEST(GithubAppJwt, AFileWithoutAnRsaKeyIsAConfigurationErrorWhereTheKeyIsNamed) {
  const fs::path file = fs::temp_directory_path() / "kiln-not-a-key.pem";
  {
    std::FILE* out = std::fopen(file.c_str(), "wb");
    std::fputs("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n", out);
    std::fclose(out);
  }
  config::ServeChecks checks{.api_url = "http://127.0.0.1:1",
                             .app_id = 1,
                             .installation_id = 2,
                             .private_key_file = file,
                             .key_where = {"kiln.yml", 12, 25}};
  auto checked = check_checks_config(checks);
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().code, ErrorCode::invalid_input);
  EXPECT_EQ(checked.error().where.line, 12);
  EXPECT_NE(checked.error().message.find("no unencrypted PEM RSA private key"), std::string::npos);
  checks.private_key_file = file.string() + ".missing";
  EXPECT_FALSE(check_checks_config(checks));
  fs::remove(file);
}

struct Recorded {
  std::string method, path, authorization;
  nlohmann::json body;
};

TEST(CheckClient, AnAppsRunStartsAndCompletesWithAnnotationsFiftyToARequest) {
  AppKey key;
  httplib::Server github;
  std::vector<Recorded> requests;
  std::mutex mutex;
  auto record = [&](const httplib::Request& req) {
    std::lock_guard lock(mutex);
    requests.push_back({req.method, req.path, req.get_header_value("Authorization"),
                        req.body.empty() ? nlohmann::json() : nlohmann::json::parse(req.body)});
  };
  github.Post("/api/v3/app/installations/77/access_tokens", [&](const httplib::Request& req,
                                                                httplib::Response& res) {
    record(req);
    const auto auth = req.get_header_value("Authorization");
    res.status = auth.starts_with("Bearer ") && key.verifies(auth.substr(7)) ? 201 : 401;
    res.set_content(R"({"token": "ghs_installation", "expires_at": "2099-01-01T00:00:00Z"})",
                    "application/json");
  });
  github.Post("/api/v3/repos/acme/widgets/check-runs",
              [&](const httplib::Request& req, httplib::Response& res) {
                record(req);
                res.status = 201;
                res.set_content(R"({"id": 9001})", "application/json");
              });
  github.Patch("/api/v3/repos/acme/widgets/check-runs/9001",
               [&](const httplib::Request& req, httplib::Response& res) {
                 record(req);
                 res.status = 200;
                 res.set_content("{}", "application/json");
               });
  int port = github.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread thread([&] { github.listen_after_bind(); });

  CheckClient client({.api_url = fmt::format("http://127.0.0.1:{}/api/v3/", port),
                      .app_id = 5,
                      .installation_id = 77,
                      .private_key_file = key.file});
  auto id = client.start("acme/widgets", {.name = "kiln / test",
                                          .head_sha = std::string(40, 'a'),
                                          .details_url = "http://ci/api/triggers/1",
                                          .external_id = ""});
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(*id, 9001);
  CheckOutput output{.conclusion = "failure", .title = "step 'x' exited with 1", .summary = "s"};
  for (int i = 1; i <= 120; ++i)
    output.annotations.push_back({{"path", "a.cu"},
                                  {"start_line", i},
                                  {"end_line", i},
                                  {"annotation_level", "failure"},
                                  {"message", "m"}});
  output.external_id = "12";
  auto done = client.complete("acme/widgets", *id, output);
  EXPECT_TRUE(done) << done.error().message;
  github.stop();
  thread.join();

  // One installation token for all of them; three PATCHes of 50, 50 and 20 annotations, the
  // last one completing the run.
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_EQ(requests[0].path, "/api/v3/app/installations/77/access_tokens");
  EXPECT_EQ(requests[1].method, "POST");
  EXPECT_EQ(requests[1].authorization, "token ghs_installation");
  EXPECT_EQ(requests[1].body["status"], "in_progress");
  EXPECT_EQ(requests[1].body["head_sha"], std::string(40, 'a'));
  EXPECT_EQ(requests[1].body["name"], "kiln / test");
  for (int i = 2; i <= 4; ++i) {
    EXPECT_EQ(requests[i].method, "PATCH");
    EXPECT_EQ(requests[i].authorization, "token ghs_installation");
    EXPECT_EQ(requests[i].body["external_id"], "12");
  }
  EXPECT_EQ(requests[2].body["output"]["annotations"].size(), 50u);
  EXPECT_EQ(requests[3].body["output"]["annotations"].size(), 50u);
  EXPECT_EQ(requests[4].body["output"]["annotations"].size(), 20u);
  EXPECT_FALSE(requests[2].body.contains("conclusion"));
  EXPECT_FALSE(requests[3].body.contains("conclusion"));
  EXPECT_EQ(requests[4].body["status"], "completed");
  EXPECT_EQ(requests[4].body["conclusion"], "failure");
  EXPECT_EQ(requests[4].body["output"]["annotations"][19]["start_line"], 120);
}

TEST(CheckClient, AForgeThatRefusesIsAnError) {
  httplib::Server github;
  github.Post(R"(/repos/.*)", [](const httplib::Request&, httplib::Response& res) {
    res.status = 403;
    res.set_content(R"({"message": "Resource not accessible by personal access token"})",
                    "application/json");
  });
  int port = github.bind_to_any_port("127.0.0.1");
  std::thread thread([&] { github.listen_after_bind(); });
  CheckClient client({.api_url = fmt::format("http://127.0.0.1:{}", port), .token = "ghp_x"});
  auto id = client.start("acme/widgets", {.name = "kiln / a", .head_sha = "b"});
  github.stop();
  thread.join();
  ASSERT_FALSE(id);
  EXPECT_NE(id.error().message.find("HTTP 403"), std::string::npos) << id.error().message;
  EXPECT_NE(id.error().message.find("personal access token"), std::string::npos);
}

}  // namespace
}  // namespace kiln::server
