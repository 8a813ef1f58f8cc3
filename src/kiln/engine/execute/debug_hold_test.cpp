#include "kiln/engine/execute/debug_hold.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kiln::engine {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

fs::path temp_dir(const char* name) {
  auto dir = fs::temp_directory_path() / fmt::format("kiln-{}-{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(DebugHold, WrittenPrivateAndReadBack) {
  auto dir = temp_dir("hold");
  DebugHold hold;
  hold.run_id = 12;
  hold.job = "test (linux, 3.11)";
  hold.engine = "/usr/bin/podman";
  hold.container = "kiln-12-test-job-abc";
  hold.workspace = "/repo/.kiln/work/12/test/workspace";
  hold.env = {{"CUDA_VISIBLE_DEVICES", "GPU-1"}, {"TOKEN", "s3cr3t"}};
  hold.gpus = {"GPU-1"};
  hold.expires_at_ms = 1'700'000'000'000;
  hold.owner_pid = 42;
  hold.owner_start = 7;
  auto path = debug_hold_path(dir, hold.run_id, hold.job);
  EXPECT_EQ(path, dir / "holds" / "12-test__linux__3.11_.json");
  ASSERT_TRUE(write_debug_hold(path, hold));
  struct stat info{};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);  // the environment may hold secrets
  auto back = read_debug_hold(path);
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->job, hold.job);
  EXPECT_EQ(back->container, hold.container);
  EXPECT_EQ(back->workspace, hold.workspace);
  EXPECT_EQ(back->env, hold.env);
  EXPECT_EQ(back->gpus, hold.gpus);
  EXPECT_EQ(back->expires_at_ms, hold.expires_at_ms);
  EXPECT_EQ(back->owner_pid, 42);
  fs::remove_all(dir);
}

TEST(DebugHold, ABadRecordIsAnErrorNotAnException) {
  auto dir = temp_dir("hold-bad");
  EXPECT_EQ(read_debug_hold(dir / "none.json").error().code, ErrorCode::not_found);
  for (const char* text : {"", "{", "[]", R"({"run_id": "x"})", R"({"run_id": 1e400})"}) {
    std::ofstream(dir / "bad.json") << text;
    auto read = read_debug_hold(dir / "bad.json");
    ASSERT_FALSE(read) << text;
    EXPECT_EQ(read.error().code, ErrorCode::invalid_input) << text;
  }
  fs::remove_all(dir);
}

TEST(DebugHold, EndsAtReleaseExpiryOrCancel) {
  auto dir = temp_dir("hold-wait");
  auto path = dir / "h.json";
  std::ofstream(path) << "{}";
  auto soon = std::chrono::system_clock::now() + 50ms;
  EXPECT_EQ(wait_debug_hold(path, soon, nullptr), HoldEnd::expired);
  exec::CancelToken cancel;
  cancel.cancel();
  EXPECT_EQ(wait_debug_hold(path, std::chrono::system_clock::now() + 1h, &cancel),
            HoldEnd::cancelled);
  std::thread release([&] {
    std::this_thread::sleep_for(50ms);
    fs::remove(path);
  });
  exec::CancelToken idle;
  EXPECT_EQ(wait_debug_hold(path, std::chrono::system_clock::now() + 1h, &idle), HoldEnd::released);
  release.join();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::engine
