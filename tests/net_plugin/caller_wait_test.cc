// How long the plugin's callers wait for a CPU (engine/caller_wait.h): the
// schedstat parse and the window's share, the decision, and a real thread
// that shares its CPU with a busy one.
#include "net_plugin/engine/caller_wait.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

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

// A sampler over a file the test writes: its windows, and what turns it off.
// (Its own suite: the window it notes is the process's busy one.)
class CallerWaitSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/bagua-schedstat-XXXXXX";
    int fd = mkstemp(name);
    ASSERT_GE(fd, 0);
    ::close(fd);
    path_ = name;
  }
  void TearDown() override { std::remove(path_.c_str()); }

  // Rewrites the file in place (the sampler keeps it open).
  void write(const std::string& text) { std::ofstream(path_, std::ios::trunc) << text; }
  // 64 calls: the sampler reads the clock on one of them.
  static void poll(CallerWaitSampler& sampler) {
    for (int i = 0; i < 64; ++i) sampler.sample();
  }

  std::string path_;
};

TEST_F(CallerWaitSamplerTest, AWindowSpentWaitingMarksTheHostBusy) {
  ASSERT_FALSE(callersWaitedRecently());
  write("1000 0 1\n");
  CallerWaitSampler sampler(path_.c_str());
  poll(sampler);               // the first window starts
  write("2000 40000000 2\n");  // 40 ms waited in the window
  poll(sampler);               // too soon: the window is not over
  EXPECT_FALSE(callersWaitedRecently());
  std::this_thread::sleep_for(kCallerWaitWindow + 5ms);
  poll(sampler);
  EXPECT_FALSE(sampler.off());
  EXPECT_TRUE(callersWaitedRecently()) << describeCallerWait();
}

TEST_F(CallerWaitSamplerTest, AnUnreadableSchedstatTurnsTheSamplerOff) {
  const std::string before = describeCallerWait();
  CallerWaitSampler missing("/nonexistent/schedstat");
  poll(missing);
  EXPECT_TRUE(missing.off());
  for (const char* bad : {"", "not a schedstat\n"}) {
    write(bad);
    CallerWaitSampler sampler(path_.c_str());
    poll(sampler);
    EXPECT_TRUE(sampler.off()) << "'" << bad << "'";
    write("1000 0 1\n");  // readable again: it stays off
    std::this_thread::sleep_for(kCallerWaitWindow + 5ms);
    poll(sampler);
    EXPECT_TRUE(sampler.off());
  }
  EXPECT_EQ(describeCallerWait(), before) << "a sampler that is off noted a window";
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
