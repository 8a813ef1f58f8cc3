// The status client against a local HTTP server that records what it receives.

#include "kiln/server/status_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <thread>

namespace kiln::server {
namespace {

struct Recorded {
  std::string path, authorization, body;
};

TEST(StatusClient, PostsOneStatusPerCallToTheForgesPath) {
  httplib::Server forge;
  std::vector<Recorded> requests;
  std::mutex mutex;
  forge.Post(R"(/api/v1/repos/.*)", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mutex);
    requests.push_back({req.path, req.get_header_value("Authorization"), req.body});
    res.status = 201;
  });
  int port = forge.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread thread([&] { forge.listen_after_bind(); });

  StatusClient client(fmt::format("http://127.0.0.1:{}/api/v1/", port), "tok");
  const std::string sha = "0123456789abcdef0123456789abcdef01234567";
  auto posted = client.post(
      "acme/widgets", sha,
      {"success", "kiln / CI / build", "succeeded in 2s", "http://ci.example/api/runs/3"});
  EXPECT_TRUE(posted) << posted.error().message;
  forge.stop();
  thread.join();

  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/api/v1/repos/acme/widgets/statuses/" + sha);
  EXPECT_EQ(requests[0].authorization, "token tok");
  auto body = nlohmann::json::parse(requests[0].body);
  EXPECT_EQ(body["state"], "success");
  EXPECT_EQ(body["context"], "kiln / CI / build");
  EXPECT_EQ(body["target_url"], "http://ci.example/api/runs/3");
}

TEST(StatusClient, ErrorsAreReported) {
  httplib::Server forge;
  forge.Post(R"(/.*)", [](const httplib::Request&, httplib::Response& res) { res.status = 404; });
  int port = forge.bind_to_any_port("127.0.0.1");
  std::thread thread([&] { forge.listen_after_bind(); });
  StatusClient client(fmt::format("http://127.0.0.1:{}", port), "");
  auto posted = client.post("a/b", "sha", {"pending", "c", "d", "u"});
  forge.stop();
  thread.join();
  ASSERT_FALSE(posted);
  EXPECT_NE(posted.error().message.find("404"), std::string::npos);
  EXPECT_FALSE(StatusClient("no-scheme", "").post("a/b", "sha", {}));
}

}  // namespace
}  // namespace kiln::server
