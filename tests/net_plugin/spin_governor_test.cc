// The spin governor's decisions (engine/spin_governor.h), driven with made-up
// times: poll gaps in, "may spin" and back-offs out.
#include "net_plugin/engine/spin_governor.h"

#include <gtest/gtest.h>

namespace bagua::net {
namespace {

using Clock = SpinGovernor::Clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

const Clock::time_point kStart = Clock::time_point{} + std::chrono::hours(1);

TEST(SpinGovernor, ShortGapsKeepSpinning) {
  SpinGovernor governor;
  Clock::time_point t = kStart;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(governor.maySpin(t));
    EXPECT_TRUE(governor.polled(t, t + microseconds(2)));
    t += microseconds(2);
  }
  // Exactly the limit is still a poll that kept its CPU.
  EXPECT_TRUE(governor.polled(t, t + kLostCpuGap));
  EXPECT_EQ(governor.lostSpins(), 0u);
}

TEST(SpinGovernor, LostCpuStopsSpinningForTheBackoff) {
  SpinGovernor governor;
  Clock::time_point lost = kStart + milliseconds(3);
  EXPECT_FALSE(governor.polled(kStart, lost));
  EXPECT_EQ(governor.lostSpins(), 1u);
  EXPECT_EQ(governor.lastGap(), milliseconds(3));
  EXPECT_EQ(governor.backoff(), kFirstBackoff);
  EXPECT_FALSE(governor.maySpin(lost));
  EXPECT_FALSE(governor.maySpin(lost + kFirstBackoff - microseconds(1)));
  EXPECT_TRUE(governor.maySpin(lost + kFirstBackoff));
}

TEST(SpinGovernor, RepeatedLossesDoubleTheBackoffUpToTheMost) {
  SpinGovernor governor;
  Clock::time_point t = kStart;
  Clock::duration expected = kFirstBackoff;
  for (int i = 0; i < 16; ++i) {
    Clock::time_point lost = t + microseconds(300);
    EXPECT_FALSE(governor.polled(t, lost));
    EXPECT_EQ(governor.backoff(), expected) << "loss " << i;
    // The next spin starts as soon as the back-off ends, and loses its CPU too.
    t = lost + governor.backoff();
    EXPECT_TRUE(governor.maySpin(t));
    expected = std::min<Clock::duration>(expected * 2, kMostBackoff);
  }
  EXPECT_EQ(governor.backoff(), kMostBackoff);
}

TEST(SpinGovernor, ALossLongAfterTheLastStartsOver) {
  SpinGovernor governor;
  Clock::time_point t = kStart;
  for (int i = 0; i < 4; ++i) {
    Clock::time_point lost = t + milliseconds(1);
    EXPECT_FALSE(governor.polled(t, lost));
    t = lost + governor.backoff();
  }
  EXPECT_EQ(governor.backoff(), 8 * kFirstBackoff);
  // A quiet second of spinning after the back-off ended: the host was idle again.
  t += kMostBackoff;
  EXPECT_FALSE(governor.polled(t, t + milliseconds(1)));
  EXPECT_EQ(governor.backoff(), kFirstBackoff);
}

TEST(SpinGovernor, DisabledAlwaysSpins) {
  SpinGovernor governor(/*enabled=*/false);
  EXPECT_TRUE(governor.polled(kStart, kStart + std::chrono::seconds(1)));
  EXPECT_TRUE(governor.maySpin(kStart + std::chrono::seconds(1)));
  EXPECT_EQ(governor.lostSpins(), 0u);
}

}  // namespace
}  // namespace bagua::net
