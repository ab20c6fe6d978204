// The CPU budget that sizes the engine: cgroup v2 cpu.max and
// /proc/self/cgroup parsing, the quota walk up a cgroup tree (built in a
// temporary directory), and the affinity mask (narrowed with
// sched_setaffinity) reaching the engine's automatic thread count and spin.
#include "net_plugin/core/cpu_budget.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "net_plugin/core/plugin_state.h"

namespace bagua::net {
namespace {

TEST(CpuMax, QuotaOverPeriodRoundedUp) {
  EXPECT_EQ(cpusFromCpuMax("200000 100000\n"), 2);
  EXPECT_EQ(cpusFromCpuMax("150000 100000\n"), 2);
  EXPECT_EQ(cpusFromCpuMax("50000 100000"), 1);
  EXPECT_EQ(cpusFromCpuMax("1600000 100000\n"), 16);
}

TEST(CpuMax, NoQuotaOrMalformedIsZero) {
  EXPECT_EQ(cpusFromCpuMax("max 100000\n"), 0);
  EXPECT_EQ(cpusFromCpuMax(""), 0);
  EXPECT_EQ(cpusFromCpuMax("200000"), 0);
  EXPECT_EQ(cpusFromCpuMax("200000 0"), 0);
  EXPECT_EQ(cpusFromCpuMax("-5 100000"), 0);
  EXPECT_EQ(cpusFromCpuMax("two hundred"), 0);
}

TEST(CgroupPath, TakesTheV2Line) {
  EXPECT_EQ(cgroupV2Path("0::/system.slice/job.scope\n"), "/system.slice/job.scope");
  EXPECT_EQ(cgroupV2Path("12:cpu,cpuacct:/v1\n4:memory:/v1\n0::/unified\n"), "/unified");
  EXPECT_EQ(cgroupV2Path("0::/\n"), "/");
  EXPECT_EQ(cgroupV2Path("12:cpu,cpuacct:/only-v1\n"), "");
  EXPECT_EQ(cgroupV2Path(""), "");
}

class CgroupTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bagua-cgroup-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void writeCpuMax(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(root_ + path);
    std::ofstream(root_ + path + "/cpu.max") << text;
  }
  std::string root_;
};

TEST_F(CgroupTree, TheTightestQuotaOnThePathWins) {
  writeCpuMax("/job", "400000 100000\n");
  writeCpuMax("/job/step", "max 100000\n");
  EXPECT_EQ(cgroupCpuLimit(root_, "/job/step"), 4) << "an ancestor's quota binds";
  writeCpuMax("/job/step/task", "150000 100000\n");
  EXPECT_EQ(cgroupCpuLimit(root_, "/job/step/task"), 2);
  EXPECT_EQ(cgroupCpuLimit(root_, "/job"), 4);
}

TEST_F(CgroupTree, NoQuotaAnywhereIsZero) {
  writeCpuMax("/free", "max 100000\n");
  EXPECT_EQ(cgroupCpuLimit(root_, "/free"), 0);
  EXPECT_EQ(cgroupCpuLimit(root_, "/missing/dirs"), 0);
  EXPECT_EQ(cgroupCpuLimit(root_, "/"), 0);
}

// Narrows this thread's affinity to the first `count` allowed CPUs for the
// scope.
class NarrowedCpus {
 public:
  explicit NarrowedCpus(int count) {
    CPU_ZERO(&saved_);
    sched_getaffinity(0, sizeof(saved_), &saved_);
    cpu_set_t some;
    CPU_ZERO(&some);
    for (int cpu = 0, taken = 0; cpu < CPU_SETSIZE && taken < count; ++cpu) {
      if (CPU_ISSET(cpu, &saved_)) {
        CPU_SET(cpu, &some);
        ++taken;
      }
    }
    ok_ = CPU_COUNT(&some) == count && sched_setaffinity(0, sizeof(some), &some) == 0;
  }
  ~NarrowedCpus() { sched_setaffinity(0, sizeof(saved_), &saved_); }
  bool ok() const { return ok_; }
  int savedCount() const { return CPU_COUNT(&saved_); }

 private:
  cpu_set_t saved_;
  bool ok_ = false;
};

TEST(UsableCpus, FollowsTheAffinityMask) {
  int before = usableCpuCount();
  EXPECT_GE(before, 1);
  NarrowedCpus one(1);
  ASSERT_TRUE(one.ok()) << "sched_setaffinity failed";
  EXPECT_LE(before, one.savedCount()) << "never more than the mask allows";
  EXPECT_EQ(usableCpuCount(), 1);
  // The engine sizes itself from the same count: the smallest pool, no spin,
  // and (BAGUA_NET_ENGINE unset here) epoll.
  EXPECT_EQ(PluginState::get().engineThreads(), 2);
  EXPECT_EQ(PluginState::get().engineSpinUs(), 0);
  EXPECT_EQ(PluginState::get().engineKind(), EngineKind::kEpoll);
}

TEST(UsableCpus, TwoCpusGetTwoWorkersAndNoSpin) {
  NarrowedCpus two(2);
  if (!two.ok()) GTEST_SKIP() << "needs 2 allowed CPUs";
  EXPECT_EQ(usableCpuCount(), 2);
  EXPECT_EQ(PluginState::get().engineThreads(), 2);
  EXPECT_EQ(PluginState::get().engineSpinUs(), 0);
  EXPECT_EQ(PluginState::get().engineKind(), EngineKind::kEpoll);
}

TEST(UsableCpus, FourCpusGetIoUringFirst) {
  NarrowedCpus four(4);
  if (!four.ok()) GTEST_SKIP() << "needs 4 allowed CPUs";
  if (usableCpuCount() < 4) GTEST_SKIP() << "a cgroup CPU quota holds this process below 4";
  EXPECT_EQ(PluginState::get().engineKind(), EngineKind::kAuto);
}

TEST(AutoSizing, WorkersAndSpinPerUsableCpus) {
  EXPECT_EQ(autoWorkerThreads(1), 2);
  EXPECT_EQ(autoWorkerThreads(3), 2);
  EXPECT_EQ(autoWorkerThreads(4), 8);
  EXPECT_EQ(autoWorkerThreads(6), 12);
  EXPECT_EQ(autoWorkerThreads(8), 16);
  EXPECT_EQ(autoWorkerThreads(192), 16);
  EXPECT_EQ(autoSpinUs(2), 0);
  EXPECT_EQ(autoSpinUs(4), 0);
  EXPECT_EQ(autoSpinUs(7), 0);
  EXPECT_EQ(autoSpinUs(8), 50);
  EXPECT_EQ(autoSpinUs(64), 50);
}

TEST(AutoSizing, EngineKindPerUsableCpus) {
  EXPECT_EQ(autoEngineKind(1, ZeroCopyMode::kOff), EngineKind::kEpoll);
  EXPECT_EQ(autoEngineKind(3, ZeroCopyMode::kOff), EngineKind::kEpoll);
  EXPECT_EQ(autoEngineKind(4, ZeroCopyMode::kOff), EngineKind::kAuto);
  EXPECT_EQ(autoEngineKind(64, ZeroCopyMode::kOff), EngineKind::kAuto);
  // Zero-copy sends exist only in the io_uring engine.
  EXPECT_EQ(autoEngineKind(2, ZeroCopyMode::kAuto), EngineKind::kAuto);
  EXPECT_EQ(autoEngineKind(2, ZeroCopyMode::kAlways), EngineKind::kAuto);
}

}  // namespace
}  // namespace bagua::net
