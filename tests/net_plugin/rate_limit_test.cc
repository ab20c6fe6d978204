// BAGUA_NET_RATE_LIMIT_MBPS (a testing aid that emulates a slower NIC): the
// pacing arithmetic, and that a rank's sends really stay under the cap
// (tests/meson.build runs this binary with the knob at 800 Mbit/s). Only a
// lower bound on time is asserted: the cap must hold; speed is not tested.
// And a close that does not wait for the pacing (at 1 Mbit/s).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "net_plugin/api/api.h"
#include "net_plugin/transport/rate_limiter.h"
#include "tests/net_plugin/support/harness.h"

namespace bagua::net::testing {
namespace {

TEST(RateLimiter, BooksBytesAtTheRate) {
  using std::chrono::microseconds;
  RateLimiter limiter(1e9);  // 1 GB/s: 1 ns per byte
  auto t0 = RateLimiter::Clock::now();
  EXPECT_EQ(limiter.reserve(1000, t0).count(), 0) << "an idle link sends at once";
  // 1000 more kilobytes booked at the same instant: the last starts once the
  // 1000 before it are on the wire (1 ms), less the allowed slack.
  std::chrono::nanoseconds wait{0};
  for (int i = 0; i < 1000; ++i) wait = limiter.reserve(1000, t0);
  EXPECT_EQ(wait, microseconds(1000) - RateLimiter::kSlack);
  // 0.5 ms later the link is busy until 1.001 ms.
  EXPECT_EQ(limiter.reserve(1000, t0 + microseconds(500)), microseconds(501) - RateLimiter::kSlack);
  // Idle time earns no credit: after a long pause the link is simply free.
  EXPECT_EQ(limiter.reserve(1000, t0 + std::chrono::seconds(1)).count(), 0);
}

TEST(RateLimit, SendsStayUnderTheCap) {
  constexpr double kBytesPerSecond = 800e6 / 8;  // the suite's 800 Mbit/s
  constexpr size_t kBytes = 20u << 20;
  Link link = connectLink();
  std::vector<uint8_t> out(kBytes), in(kBytes);
  fillPattern(out.data(), kBytes, 3);
  auto start = std::chrono::steady_clock::now();
  void* r = postRecv(link.recvComm, in.data(), kBytes);
  void* s = postSend(link.sendComm, out.data(), kBytes);
  ASSERT_EQ(waitRequest(s), ncclSuccess);
  ASSERT_EQ(waitRequest(r), ncclSuccess);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(verifyPattern(in.data(), kBytes, 3), -1);
  EXPECT_GE(seconds, 0.9 * kBytes / kBytesPerSecond)
      << "20 MiB at 800 Mbit/s cannot take less than ~0.21 s";
  closeLink(link);
}

// Closing a comm whose streams wait for the limiter ends the waits at once
// (tests/meson.build runs this at 1 Mbit/s: a 256 KiB chunk waits ~2 s for
// the one before it, so a close that waited on the timers would take seconds).
TEST(RateLimitClose, ClosingDoesNotWaitForThePacing) {
  Link link = connectLink();
  std::vector<uint8_t> out(4u << 20);
  void* s = postSend(link.sendComm, out.data(), out.size());
  ASSERT_NE(s, nullptr);
  std::this_thread::sleep_for(200ms);  // the streams took chunks and wait for the limiter
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(api::closeSend(link.sendComm), ncclSuccess);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  link.sendComm = nullptr;
  EXPECT_LT(seconds, 1.0) << "closeSend waited for the limiter's timers";
  closeLink(link);
}

}  // namespace
}  // namespace bagua::net::testing
