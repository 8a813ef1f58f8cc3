#include "kiln/exec/cancel_token.h"

#include <poll.h>

#include <thread>

#include <gtest/gtest.h>

namespace kiln::exec {
namespace {

using namespace std::chrono_literals;

TEST(CancelToken, WaitTimesOutWhenNotCancelled) {
  CancelToken token;
  EXPECT_FALSE(token.cancelled());
  EXPECT_FALSE(token.wait_for(20ms));
}

TEST(CancelToken, CancelFromAnotherThreadWakesWaiterAndFd) {
  CancelToken token;
  ASSERT_GE(token.fd(), 0);
  std::thread canceller([&] {
    std::this_thread::sleep_for(30ms);
    token.cancel();
    token.cancel();  // idempotent
  });
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(token.wait_for(5s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  canceller.join();
  EXPECT_TRUE(token.cancelled());
  // The fd stays readable for every later poll.
  for (int i = 0; i < 2; ++i) {
    pollfd p{token.fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 0), 1);
  }
}

}  // namespace
}  // namespace kiln::exec
