// The spin governor's decisions (engine/spin_governor.h), driven with made-up
// times: poll gaps and the thread's CPU time in, "may spin" and back-offs out.
#include "net_plugin/engine/spin_governor.h"

#include <gtest/gtest.h>

namespace bagua::net {
namespace {

using Clock = SpinGovernor::Clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

const Clock::time_point kStart = Clock::time_point{} + std::chrono::hours(1);

// The spinning thread's CPU time, as the governor reads it.
Clock::duration cpuNow{};
Clock::duration threadCpu() { return cpuNow; }

// A spin that starts at `t` and then spends no CPU (so every gap is off-CPU).
void startIdleSpin(SpinGovernor* governor, Clock::time_point t) {
  cpuNow = Clock::duration{};
  governor->spinStarted(t, cpuNow);
}

TEST(SpinGovernor, ShortGapsKeepSpinning) {
  SpinGovernor governor;
  Clock::time_point t = kStart;
  startIdleSpin(&governor, t);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(governor.maySpin(t));
    EXPECT_TRUE(governor.polled(t, t + microseconds(2), threadCpu));
    t += microseconds(2);
  }
  // Exactly the limit is still a poll that kept its CPU.
  EXPECT_TRUE(governor.polled(t, t + kLostCpuGap, threadCpu));
  EXPECT_EQ(governor.lostSpins(), 0u);
}

TEST(SpinGovernor, LostCpuStopsSpinningForTheBackoff) {
  SpinGovernor governor;
  startIdleSpin(&governor, kStart);
  Clock::time_point lost = kStart + milliseconds(3);
  EXPECT_FALSE(governor.polled(kStart, lost, threadCpu));
  EXPECT_EQ(governor.lostSpins(), 1u);
  EXPECT_EQ(governor.lastGap(), milliseconds(3));
  EXPECT_EQ(governor.backoff(), kFirstBackoff);
  EXPECT_FALSE(governor.maySpin(lost));
  EXPECT_FALSE(governor.maySpin(lost + kFirstBackoff - microseconds(1)));
  EXPECT_TRUE(governor.maySpin(lost + kFirstBackoff));
}

// A long gap the thread spent on its CPU (a socket copy between two polls)
// is its own work, not a loss; the same gap off its CPU is.
TEST(SpinGovernor, OwnWorkBetweenPollsIsNoLoss) {
  SpinGovernor governor;
  startIdleSpin(&governor, kStart);
  Clock::time_point t = kStart + milliseconds(2);
  cpuNow = milliseconds(2) - microseconds(100);  // 100 us off the CPU: interrupts
  EXPECT_TRUE(governor.polled(kStart, t, threadCpu));
  EXPECT_TRUE(governor.maySpin(t));
  cpuNow += milliseconds(1);  // 1 ms more of work, then 1 ms of waiting
  EXPECT_FALSE(governor.polled(t, t + milliseconds(2), threadCpu));
  EXPECT_EQ(governor.lastGap(), milliseconds(1) + microseconds(100));
}

TEST(SpinGovernor, RepeatedLossesDoubleTheBackoffUpToTheMost) {
  SpinGovernor governor;
  Clock::time_point t = kStart;
  Clock::duration expected = kFirstBackoff;
  for (int i = 0; i < 16; ++i) {
    startIdleSpin(&governor, t);
    Clock::time_point lost = t + microseconds(300);
    EXPECT_FALSE(governor.polled(t, lost, threadCpu));
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
    startIdleSpin(&governor, t);
    Clock::time_point lost = t + milliseconds(1);
    EXPECT_FALSE(governor.polled(t, lost, threadCpu));
    t = lost + governor.backoff();
  }
  EXPECT_EQ(governor.backoff(), 8 * kFirstBackoff);
  // A quiet second of spinning after the back-off ended: the host was idle again.
  t += kMostBackoff;
  startIdleSpin(&governor, t);
  EXPECT_FALSE(governor.polled(t, t + milliseconds(1), threadCpu));
  EXPECT_EQ(governor.backoff(), kFirstBackoff);
}

TEST(SpinGovernor, DisabledAlwaysSpins) {
  SpinGovernor governor(/*enabled=*/false);
  startIdleSpin(&governor, kStart);
  EXPECT_TRUE(governor.polled(kStart, kStart + std::chrono::seconds(1), threadCpu));
  EXPECT_TRUE(governor.maySpin(kStart + std::chrono::seconds(1)));
  EXPECT_EQ(governor.lostSpins(), 0u);
}

}  // namespace
}  // namespace bagua::net
