// posix::ChildProcess and the waits over several children: exit codes,
// signals, what a child threw, deadlines, waitAny's order and stopAll's
// escalation from SIGTERM to SIGKILL.
#include "posix/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <vector>

namespace bagua::posix {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(ChildProcess, ReturnsTheBodysExitCode) {
  ChildProcess child([] { return 7; });
  EXPECT_EQ(child.wait(10s), 7);
  EXPECT_FALSE(child.running());
  EXPECT_EQ(child.describeExit(), "exited with code 7");
  EXPECT_EQ(child.message(), "");
}

TEST(ChildProcess, BringsBackWhatTheBodyThrew) {
  ChildProcess child([]() -> int { throw std::runtime_error("rank 3 saw garbage"); });
  EXPECT_EQ(child.wait(10s), ChildProcess::kThrewExit);
  EXPECT_EQ(child.message(), "rank 3 saw garbage");
}

TEST(ChildProcess, KilledChildReportsTheSignal) {
  ChildProcess child([] {
    pause();
    return 0;
  });
  EXPECT_TRUE(child.running());
  child.kill(SIGKILL);
  EXPECT_EQ(child.wait(10s), 128 + SIGKILL);
  EXPECT_EQ(child.describeExit(),
            "was killed by signal 9 (" + std::string(strsignal(SIGKILL)) + ")");
}

TEST(ChildProcess, AChildStillRunningAtTheDeadlineIsKilled) {
  ChildProcess child([] {
    pause();
    return 0;
  });
  auto start = Clock::now();
  EXPECT_EQ(child.wait(100ms), ChildProcess::kStillRunning);
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_FALSE(child.running());
  EXPECT_EQ(child.describeExit(), "was still running");
}

TEST(ChildProcess, DestructorKillsARunningChild) {
  pid_t pid = 0;
  {
    ChildProcess child([] {
      pause();
      return 0;
    });
    pid = child.pid();
  }
  EXPECT_NE(::kill(pid, 0), 0) << "the child outlived its ChildProcess";
}

TEST(ChildProcesses, WaitAnyReturnsTheOneThatEnded) {
  std::vector<ChildProcess> children;
  children.emplace_back([] {
    pause();
    return 0;
  });
  children.emplace_back([] { return 3; });
  EXPECT_EQ(waitAny(children), 1u);
  EXPECT_EQ(children[1].exitCode(), 3);
  EXPECT_TRUE(children[0].running());
  children[0].kill(SIGKILL);
  EXPECT_EQ(waitAny(children), 0u);
  EXPECT_EQ(waitAny(children), children.size()) << "none left running";
}

TEST(ChildProcesses, StopAllEscalatesToSigkill) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  std::vector<ChildProcess> children;
  children.emplace_back([] {
    pause();  // SIGTERM's default action ends it
    return 0;
  });
  children.emplace_back([&] {
    signal(SIGTERM, SIG_IGN);
    char one = 1;
    if (::write(ready[1], &one, 1) != 1) return 1;
    pause();
    return 0;
  });
  char got = 0;
  ASSERT_EQ(::read(ready[0], &got, 1), 1) << "the second child never ignored SIGTERM";
  ::close(ready[0]);
  ::close(ready[1]);
  auto start = Clock::now();
  stopAll(children, 200ms);
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_EQ(children[0].exitCode(), 128 + SIGTERM);
  EXPECT_EQ(children[1].exitCode(), 128 + SIGKILL);
}

TEST(ChildProcesses, WaitAllGivesUpOnHungChildren) {
  std::vector<ChildProcess> children;
  children.emplace_back([] { return 0; });
  children.emplace_back([] {
    pause();
    return 0;
  });
  waitAll(children, 200ms);
  EXPECT_EQ(children[0].exitCode(), 0);
  EXPECT_EQ(children[1].exitCode(), ChildProcess::kStillRunning);
}

}  // namespace
}  // namespace bagua::posix
