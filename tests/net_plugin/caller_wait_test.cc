// How long the plugin's callers wait for a CPU (engine/caller_wait.h): the
// schedstat parse and the window's share, the decision, and a real thread
// that shares its CPU with a busy one.
#include "net_plugin/engine/caller_wait.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "tests/net_plugin/support/busy_cpu.h"

namespace bagua::net {
namespace {

using namespace std::chrono_literals;

TEST(CallerWait, ParsesSchedStat) {
  SchedStat s;
  const char* text = "819692 40000 17\n";
  ASSERT_TRUE(parseSchedStat(text, std::strlen(text), &s));
  EXPECT_EQ(s.onCpuNs, 819692);
  EXPECT_EQ(s.waitNs, 40000);
  for (const char* bad : {"", "12 34", "a b c", "-1 0 0", "5 -7 1"}) {
    EXPECT_FALSE(parseSchedStat(bad, std::strlen(bad), &s)) << "'" << bad << "'";
  }
}

TEST(CallerWait, ShareOfTheWindow) {
  SchedStat before{100, 1000};
  SchedStat after{200, 6000};
  EXPECT_DOUBLE_EQ(waitShare(before, after, 50000), 0.1);
  EXPECT_DOUBLE_EQ(waitShare(before, after, 0), 0.0) << "no time passed";
  EXPECT_DOUBLE_EQ(waitShare(after, before, 50000), 0.0) << "a counter that went back";
}

// One process-wide state: the quiet windows first, then a busy one.
TEST(CallerWait, OnlyAWindowAboveTheShareMarksTheHostBusy) {
  EXPECT_EQ(describeCallerWait(), "") << "nothing sampled yet";
  noteCallerWindow(0.02);
  noteCallerWindow(kBusyWaitShare);
  EXPECT_FALSE(callersWaitedRecently());
  EXPECT_NE(describeCallerWait().find("2 windows of 50 ms sampled, 0 above 10%, most 10.0%"),
            std::string::npos)
      << describeCallerWait();
  noteCallerWindow(0.35);
  EXPECT_TRUE(callersWaitedRecently());
  EXPECT_NE(describeCallerWait().find("1 above 10%, most 35.0%"), std::string::npos)
      << describeCallerWait();
}

// Polls like test() for up to 400 ms on a CPU that a busy thread shares
// (CFS gives each about half); true when the host was seen busy.
bool pollSharingACpu() {
  int cpu = testing::firstAllowedCpu();
  testing::BusyThread busy(cpu);
  if (!testing::pinCallingThread(cpu)) return false;
  auto until = std::chrono::steady_clock::now() + 400ms;
  while (std::chrono::steady_clock::now() < until && !callersWaitedRecently()) {
    sampleCallerWait();
  }
  return callersWaitedRecently();
}

// A caller sharing its CPU waits far above 10% of its windows, and the host
// counts as busy. (The quiet case is the decision above: on a loaded CI
// machine a pinned thread may wait for other reasons.)
TEST(CallerWaitContended, APollingCallerSharingItsCpuSeesTheHostBusy) {
  EXPECT_TRUE(pollSharingACpu()) << describeCallerWait();
}

// The thread opened its schedstat before fork(): the child's copy of the fd
// reads the parent's thread (asleep in waitpid, never waiting for a CPU), so
// the child must open its own.
TEST(CallerWaitFork, AForkedChildSamplesItsOwnThread) {
  for (int i = 0; i < 200; ++i) sampleCallerWait();  // opens the parent's schedstat
  ASSERT_FALSE(callersWaitedRecently());
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(pollSharingACpu() ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the forked child did not see its own CPU wait";
}

}  // namespace
}  // namespace bagua::net
