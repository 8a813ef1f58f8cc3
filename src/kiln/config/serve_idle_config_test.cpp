// kiln.yml's serve.idle and serve.busy (serve_config.cpp): the values, and each bad value as an
// error at its FILE:LINE:COL.

#include <gtest/gtest.h>

#include <string>

#include "kiln/config/host_config.h"

namespace kiln::config {
namespace {

using namespace std::chrono_literals;

std::string error_of(const std::string& text) {
  auto config = parse_host_config(text, "kiln.yml");
  return config ? std::string("no error") : config.error().to_string();
}

TEST(ServeIdleConfig, Values) {
  auto config = parse_host_config(R"(serve:
  idle: {after: 45m, run: "systemctl suspend", timeout: 2m}
  busy:
    run: scale-up --now
)",
                                  "/etc/kiln/kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  ASSERT_TRUE(config->serve.idle);
  EXPECT_EQ(config->serve.idle->after, 45min);
  EXPECT_EQ(config->serve.idle->hook.run, "systemctl suspend");
  EXPECT_EQ(config->serve.idle->hook.timeout, 2min);
  ASSERT_TRUE(config->serve.busy);
  EXPECT_EQ(config->serve.busy->run, "scale-up --now");
  EXPECT_EQ(config->serve.busy->timeout, 10min);  // the default
}

TEST(ServeIdleConfig, Defaults) {
  auto config = parse_host_config("serve:\n  idle: {run: power-down}\n", "kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  ASSERT_TRUE(config->serve.idle);
  EXPECT_EQ(config->serve.idle->after, 30min);
  EXPECT_FALSE(config->serve.busy);
  auto none = parse_host_config("serve:\n  max_concurrent_runs: 1\n", "kiln.yml");
  ASSERT_TRUE(none) << none.error().to_string();
  EXPECT_FALSE(none->serve.idle);
}

TEST(ServeIdleConfig, BadValuesAreLocated) {
  EXPECT_EQ(error_of("serve:\n  idle: {after: 2s, run: x, every: 1m}\n"),
            "kiln.yml:2:29: error: serve.idle: unknown key 'every' (known: after, run, timeout)");
  EXPECT_EQ(error_of("serve:\n  idle: {run: x}\n  busy: {run: y, after: 2s}\n"),
            "kiln.yml:3:18: error: serve.busy: unknown key 'after' (known: run, timeout)");
  EXPECT_EQ(error_of("serve:\n  idle: {after: soon, run: x}\n").substr(0, 40),
            "kiln.yml:2:17: error: serve.idle.after: ");
  EXPECT_EQ(error_of("serve:\n  idle: {after: 500ms, run: x}\n"),
            "kiln.yml:2:17: error: serve.idle.after: 500ms is shorter than 1s");
  EXPECT_EQ(error_of("serve:\n  idle: {run: x, timeout: 0s}\n"),
            "kiln.yml:2:27: error: serve.idle.timeout: 0s is shorter than 1s");
  EXPECT_EQ(error_of("serve:\n  idle: {after: 2s, run: '  '}\n"),
            "kiln.yml:2:26: error: serve.idle.run: the command is empty");
  EXPECT_EQ(error_of("serve:\n  idle: {after: 2s}\n"),
            "kiln.yml:2:9: error: serve.idle: run is required (a command for /bin/sh -c)");
  EXPECT_EQ(error_of("serve:\n  idle: power-down\n"),
            "kiln.yml:2:9: error: serve.idle: expected a mapping ({run: COMMAND, after: 30m})");
  EXPECT_EQ(error_of("serve:\n  idle: {run: [a, b]}\n"),
            "kiln.yml:2:15: error: serve.idle.run: expected a single value");
  EXPECT_EQ(error_of("serve:\n  busy: {run: power-up}\n"),
            "kiln.yml:2:9: error: serve.busy: needs serve.idle (it runs when work arrives after "
            "the idle command ran)");
}

}  // namespace
}  // namespace kiln::config
