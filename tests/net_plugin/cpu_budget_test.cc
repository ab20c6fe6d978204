// The CPU budget that sizes the engine: cgroup v2 cpu.max, v1 cfs quota,
// /proc/self/cgroup and mountinfo parsing, the quota walk up a cgroup tree
// (built in a temporary directory), and the affinity mask (narrowed with
// sched_setaffinity) reaching the engine's automatic thread count and spin.
#include "net_plugin/base/cpu_budget.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "net_plugin/transport/plugin_state.h"

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

TEST(CfsQuota, QuotaOverPeriodRoundedUp) {
  EXPECT_EQ(cpusFromCfsQuota("200000\n", "100000\n"), 2);
  EXPECT_EQ(cpusFromCfsQuota("150000\n", "100000\n"), 2);
  EXPECT_EQ(cpusFromCfsQuota("50000", "100000"), 1);
}

TEST(CfsQuota, NoQuotaOrMalformedIsZero) {
  EXPECT_EQ(cpusFromCfsQuota("-1\n", "100000\n"), 0) << "-1: no quota";
  EXPECT_EQ(cpusFromCfsQuota("", ""), 0) << "files missing";
  EXPECT_EQ(cpusFromCfsQuota("200000", "0"), 0);
  EXPECT_EQ(cpusFromCfsQuota("max", "100000"), 0);
}

// /proc/self/mountinfo of a host with v1 controllers mounted one per
// directory (as on this project's build VM) and of the common combined mount.
constexpr const char* kSeparateMounts =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
constexpr const char* kCombinedMount =
    "25 24 0:22 / /sys/fs/cgroup/cpuset rw shared:5 - cgroup cgroup rw,cpuset\n"
    "26 24 0:23 / /sys/fs/cgroup/cpu,cpuacct rw shared:6 - cgroup cgroup rw,cpu,cpuacct\n";
// A container without a cgroup namespace: the mount shows its own cgroup.
constexpr const char* kContainerMount =
    "40 39 0:23 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro master:6 - cgroup cgroup "
    "rw,cpu,cpuacct\n";

// cgroupV1Cpu's answer as "mountPoint|path", for one-line comparisons.
std::string v1Of(std::string_view mountinfo, std::string_view procSelfCgroup) {
  CgroupDir v1 = cgroupV1Cpu(mountinfo, procSelfCgroup);
  return v1.mountPoint + "|" + v1.path;
}

TEST(CgroupV1, FindsTheCpuHierarchyAndTheProcessCgroupBelowIt) {
  EXPECT_EQ(v1Of(kSeparateMounts, "3:cpuset:/\n2:cpuacct:/\n1:cpu:/job/7\n0::/\n"),
            "/sys/fs/cgroup/cpu|/job/7")
      << "not cpuset, not cpuacct alone";
  EXPECT_EQ(v1Of(kCombinedMount, "5:cpuset:/\n4:cpu,cpuacct:/slurm/uid_1/job_9\n"),
            "/sys/fs/cgroup/cpu,cpuacct|/slurm/uid_1/job_9");
  EXPECT_EQ(v1Of(kCombinedMount, "4:cpu,cpuacct:/\n"), "/sys/fs/cgroup/cpu,cpuacct|")
      << "the root cgroup";
}

TEST(CgroupV1, AContainerSeesItsCgroupAsTheMountRoot) {
  EXPECT_EQ(v1Of(kContainerMount, "4:cpu,cpuacct:/docker/abc\n"), "/sys/fs/cgroup/cpu,cpuacct|");
  EXPECT_EQ(v1Of(kContainerMount, "4:cpu,cpuacct:/docker/abc/inner\n"),
            "/sys/fs/cgroup/cpu,cpuacct|/inner");
  EXPECT_EQ(v1Of(kContainerMount, "4:cpu,cpuacct:/docker/abcdef\n"), "|")
      << "a sibling whose name only starts the same is not below the root: no mount shows it";
}

TEST(CgroupV1, OfSeveralMountsTheOneHoldingTheCgroupMostCloselyWins) {
  constexpr const char* kTwoMounts =
      "40 39 0:23 /docker/other /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n"
      "41 39 0:23 / /mnt/all rw - cgroup cgroup rw,cpu,cpuacct\n"
      "42 39 0:23 /docker/abc /mnt/mine rw - cgroup cgroup rw,cpu,cpuacct\n";
  EXPECT_EQ(v1Of(kTwoMounts, "4:cpu,cpuacct:/docker/abc/x\n"), "/mnt/mine|/x")
      << "not another container's cgroup, not the wider mount";
  EXPECT_EQ(v1Of(kTwoMounts, "4:cpu,cpuacct:/docker/zzz\n"), "/mnt/all|/docker/zzz");
}

TEST(CgroupV1, EscapedMountPathsAreDecoded) {
  EXPECT_EQ(v1Of("40 39 0:23 /my\\040job /sys/fs/cgroup/cpu\\134x ro - cgroup cgroup rw,cpu\n",
                 "4:cpu:/my job/step\n"),
            "/sys/fs/cgroup/cpu\\x|/step");
}

TEST(CgroupV2, TheMountRootIsSubtracted) {
  auto v2Of = [](std::string_view mountinfo, std::string_view procSelfCgroup) {
    CgroupDir v2 = cgroupV2Dir(mountinfo, procSelfCgroup);
    return v2.mountPoint + "|" + v2.path;
  };
  constexpr const char* kHost = "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(v2Of(kHost, "0::/user.slice/job.scope\n"), "/sys/fs/cgroup|/user.slice/job.scope");
  EXPECT_EQ(v2Of(kHost, "0::/\n"), "/sys/fs/cgroup|");
  // Docker --cgroupns=host: the container's /sys/fs/cgroup is its own cgroup.
  constexpr const char* kContainer =
      "50 40 0:26 /system.slice/docker-ab.scope /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(v2Of(kContainer, "0::/system.slice/docker-ab.scope\n"), "/sys/fs/cgroup|");
  EXPECT_EQ(v2Of(kSeparateMounts, "1:cpu:/\n0::/x\n"), "/sys/fs/cgroup/unified|/x")
      << "the hybrid layout's v2 mount";
  EXPECT_EQ(v2Of(kCombinedMount, "4:cpu,cpuacct:/\n"), "|") << "no v2 line, no v2 mount";
}

TEST(CgroupV1, NoV1CpuControllerIsEmpty) {
  EXPECT_EQ(v1Of("41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "0::/a\n"), "|");
  EXPECT_EQ(v1Of("", ""), "|");
  EXPECT_EQ(v1Of("garbage without fields\n", "1:cpu:/x\n"), "|");
}

TEST_F(CgroupTree, TheTightestV1QuotaOnThePathWins) {
  auto writeCfs = [this](const std::string& path, const std::string& quota) {
    std::filesystem::create_directories(root_ + path);
    std::ofstream(root_ + path + "/cpu.cfs_quota_us") << quota << "\n";
    std::ofstream(root_ + path + "/cpu.cfs_period_us") << "100000\n";
  };
  writeCfs("", "-1");
  writeCfs("/job", "400000");
  writeCfs("/job/step", "-1");
  EXPECT_EQ(cgroupV1CpuLimit(root_, "/job/step"), 4) << "an ancestor's quota binds";
  writeCfs("/job/step/task", "150000");
  EXPECT_EQ(cgroupV1CpuLimit(root_, "/job/step/task"), 2);
  EXPECT_EQ(cgroupV1CpuLimit(root_, ""), 0) << "the mount's own cgroup: no quota";
  writeCfs("", "300000");
  EXPECT_EQ(cgroupV1CpuLimit(root_, ""), 3) << "a container's quota sits at the mount root";
  EXPECT_EQ(cgroupV1CpuLimit(root_, "/missing"), 3);
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
  PluginState state(params());
  EXPECT_EQ(state.engineThreads(), 2);
  EXPECT_EQ(state.engineSpinUs(), 0);
  EXPECT_EQ(state.engineKind(), EngineKind::kEpoll);
  EXPECT_TRUE(state.testYields());
}

TEST(UsableCpus, TwoCpusGetTwoWorkersAndNoSpin) {
  NarrowedCpus two(2);
  if (!two.ok()) GTEST_SKIP() << "needs 2 allowed CPUs";
  EXPECT_EQ(usableCpuCount(), 2);
  PluginState state(params());
  EXPECT_EQ(state.engineThreads(), 2);
  EXPECT_EQ(state.engineSpinUs(), 0);
  EXPECT_EQ(state.engineKind(), EngineKind::kEpoll);
  EXPECT_TRUE(state.testYields()) << "two callers polling test() fill 2 CPUs";
}

TEST(UsableCpus, FourCpusGetIoUringFirst) {
  NarrowedCpus four(4);
  if (!four.ok()) GTEST_SKIP() << "needs 4 allowed CPUs";
  if (usableCpuCount() < 4) GTEST_SKIP() << "a cgroup CPU quota holds this process below 4";
  EXPECT_EQ(PluginState(params()).engineKind(), EngineKind::kAuto);
  EXPECT_FALSE(PluginState(params()).testYields());
}

// Workers pinned to a list (BAGUA_NET_CPUS) are sized by its CPUs, however
// many the process may use: one listed CPU gets the smallest pool, no spin.
TEST(UsableCpus, PinnedWorkersAreSizedByTheirList) {
  CpuBudget sixteen;
  sixteen.affinityCpus = 16;
  sixteen.onlineCpus = 16;
  Params p;
  PluginState unpinned(p, sixteen);
  EXPECT_EQ(unpinned.engineThreads(), 16);
  EXPECT_EQ(unpinned.engineSpinUs(), 50);
  p.cpus = {8};
  PluginState one(p, sixteen);
  EXPECT_EQ(one.engineThreads(), 2);
  EXPECT_EQ(one.engineSpinUs(), 0);
  p.cpus = {8, 9, 10, 11};
  PluginState four(p, sixteen);
  EXPECT_EQ(four.engineThreads(), 8) << "two workers per listed CPU from 4 up";
  EXPECT_EQ(four.engineSpinUs(), 50) << "4 CPUs of a 16-CPU host spin";
}

TEST(UsableCpus, SetKnobsWinOverTheAutomaticChoice) {
  NarrowedCpus one(1);
  ASSERT_TRUE(one.ok()) << "sched_setaffinity failed";
  Params p;
  p.threads = 5;
  p.spinUs = 7;
  p.engine = EngineKind::kIoUring;
  p.testYield = 0;
  PluginState state(p);
  EXPECT_EQ(state.engineThreads(), 5);
  EXPECT_EQ(state.engineSpinUs(), 7);
  EXPECT_EQ(state.engineKind(), EngineKind::kIoUring);
  EXPECT_FALSE(state.testYields());
  p.testYield = 1;
  EXPECT_TRUE(PluginState(p).testYields());
}

std::string fileText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The kernel's own v1 files: a child process joins a fresh cgroup with a
// 0.5-CPU quota. Needs a writable v1 cpu hierarchy (root on a v1 or hybrid
// host, such as the build VM); skips elsewhere.
TEST(UsableCpus, FollowsARealCgroupV1Quota) {
  CgroupDir v1 = cgroupV1Cpu(fileText("/proc/self/mountinfo"), fileText("/proc/self/cgroup"));
  if (v1.mountPoint.empty()) GTEST_SKIP() << "no cgroup v1 cpu controller here";
  std::string dir = v1.mountPoint + v1.path + "/bagua-test-" + std::to_string(getpid());
  if (mkdir(dir.c_str(), 0755) != 0) GTEST_SKIP() << "cannot create " << dir << " (not root?)";
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() { rmdir(dir.c_str()); }
  } removeDir{dir};
  auto write = [](const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text << std::flush;
    return static_cast<bool>(out);
  };
  if (!write(dir + "/cpu.cfs_period_us", "100000") || !write(dir + "/cpu.cfs_quota_us", "50000")) {
    GTEST_SKIP() << "cannot set a quota in " << dir;
  }
  pid_t child = fork();
  if (child == 0) {
    // 100: could not join the cgroup (not a result usableCpuCount can give here).
    _exit(write(dir + "/cgroup.procs", std::to_string(getpid())) ? usableCpuCount() : 100);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 100) GTEST_SKIP() << "cannot join " << dir;
  EXPECT_EQ(WEXITSTATUS(status), 1) << "a 0.5-CPU quota rounds up to 1 usable CPU";
}

TEST(AutoSizing, WorkersAndSpinPerUsableCpus) {
  EXPECT_EQ(autoWorkerThreads(1), 2);
  EXPECT_EQ(autoWorkerThreads(3), 2);
  EXPECT_EQ(autoWorkerThreads(4), 8);
  EXPECT_EQ(autoWorkerThreads(6), 12);
  EXPECT_EQ(autoWorkerThreads(8), 16);
  EXPECT_EQ(autoWorkerThreads(192), 16);
  // One rank on the host: its CPUs are the host's share.
  EXPECT_EQ(autoSpinUs(2, 2), 0);
  EXPECT_EQ(autoSpinUs(4, 4), 0);
  EXPECT_EQ(autoSpinUs(7, 7), 0);
  EXPECT_EQ(autoSpinUs(8, 8), 50);
  EXPECT_EQ(autoSpinUs(64, 64), 50);
  // Several: 4 of 16 spins (4 ranks on 16 CPUs), 2 of 16 does not (8 ranks).
  EXPECT_EQ(autoSpinUs(4, 16), 50);
  EXPECT_EQ(autoSpinUs(3, 16), 0);
  EXPECT_EQ(autoSpinUs(2, 16), 0);
}

CpuBudget budget(int affinity, int quota, int online) {
  CpuBudget b;
  b.affinityCpus = affinity;
  b.quotaCpus = quota;
  b.onlineCpus = online;
  return b;
}

TEST(RankShare, OneRankKeepsTheWholeBudget) {
  EXPECT_EQ(usableCpus(budget(16, 0, 16), 1), 16);
  EXPECT_EQ(usableCpus(budget(16, 0, 16), 0), 16) << "0 (unknown) counts as one rank";
  EXPECT_EQ(usableCpus(budget(16, 6, 16), 1), 6) << "the quota bounds the mask";
  EXPECT_EQ(usableCpus(budget(4, 0, 64), 1), 4);
}

TEST(RankShare, UnboundRanksDivideTheHost) {
  EXPECT_EQ(usableCpus(budget(16, 0, 16), 8), 2);
  EXPECT_EQ(usableCpus(budget(16, 0, 16), 4), 4);
  EXPECT_EQ(usableCpus(budget(16, 0, 16), 2), 8);
  EXPECT_EQ(usableCpus(budget(192, 0, 192), 8), 24);
  EXPECT_EQ(usableCpus(budget(16, 0, 16), 32), 1) << "never below one CPU";
}

TEST(RankShare, MasksThatFitSideBySideAreABinding) {
  // 8 ranks bound to 2 CPUs each on 16, 4 ranks to 4: kept whole.
  EXPECT_EQ(usableCpus(budget(2, 0, 16), 8), 2);
  EXPECT_EQ(usableCpus(budget(4, 0, 16), 4), 4);
  EXPECT_EQ(usableCpus(budget(8, 0, 64), 8), 8);
  // Masks of 6 for 4 ranks on 16 overlap somewhere: shared.
  EXPECT_EQ(usableCpus(budget(6, 0, 16), 4), 1);
}

TEST(RankShare, TheContainersQuotaIsShared) {
  // A container capped at 16 CPUs of a 128-CPU host, 8 ranks inside.
  EXPECT_EQ(usableCpus(budget(128, 16, 128), 8), 2);
  // Bound ranks in a capped container: the tighter of the two.
  EXPECT_EQ(usableCpus(budget(4, 8, 128), 8), 1);
  EXPECT_EQ(usableCpus(budget(8, 64, 128), 8), 8);
}

TEST(RankShare, LauncherVariables) {
  auto from = [](std::map<std::string, std::string> vars) {
    return localRanksFromLauncher([&vars](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    });
  };
  EXPECT_EQ(from({}), 1);
  EXPECT_EQ(from({{"LOCAL_WORLD_SIZE", "8"}}), 8);
  EXPECT_EQ(from({{"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}), 4);
  EXPECT_EQ(from({{"MPI_LOCALNRANKS", "2"}}), 2);
  EXPECT_EQ(from({{"SLURM_NTASKS_PER_NODE", "6"}}), 6);
  EXPECT_EQ(from({{"LOCAL_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}), 8)
      << "torchrun's own count first";
  EXPECT_EQ(from({{"LOCAL_WORLD_SIZE", "x"}, {"MPI_LOCALNRANKS", "3"}}), 3)
      << "a malformed value is skipped";
  EXPECT_EQ(from({{"LOCAL_WORLD_SIZE", "0"}}), 1);
  EXPECT_EQ(from({{"LOCAL_WORLD_SIZE", "8(x2)"}}), 1);
}

TEST(RankShare, PluginStateSizesEachRankByItsShare) {
  Params p;
  p.localRanks = 1;
  PluginState alone(p);
  p.localRanks = 4096;  // more ranks than any test machine's CPUs: 1 CPU each
  PluginState crowded(p);
  EXPECT_EQ(crowded.hostShareCpus(), alone.usableCpus());
  if (alone.usableCpus() * 4096 <= static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN))) {
    GTEST_SKIP() << "this process's mask fits 4096 times in the host";
  }
  EXPECT_EQ(crowded.usableCpus(), 1);
  EXPECT_EQ(crowded.engineThreads(), alone.engineThreads()) << "workers: by the host's share";
  EXPECT_EQ(crowded.engineSpinUs(), 0);
  EXPECT_EQ(crowded.engineKind(), EngineKind::kEpoll);
  EXPECT_TRUE(crowded.testYields());
}

TEST(AutoSizing, TestYieldsPerUsableCpus) {
  EXPECT_TRUE(autoTestYield(1));
  EXPECT_TRUE(autoTestYield(2));
  EXPECT_FALSE(autoTestYield(3));
  EXPECT_FALSE(autoTestYield(16));
}

TEST(AutoSizing, WholeMessagesUpTo4MiBOnTwoOrFewerCpus) {
  EXPECT_EQ(minSplitBytesFor(kAutoBytes, 1), 4u << 20);
  EXPECT_EQ(minSplitBytesFor(kAutoBytes, 2), 4u << 20);
  EXPECT_EQ(minSplitBytesFor(kAutoBytes, 3), 64u << 10);
  EXPECT_EQ(minSplitBytesFor(kAutoBytes, 16), 64u << 10);
  EXPECT_EQ(minSplitBytesFor(kAutoBytes, 0), 64u << 10) << "unknown: the many-CPU value";
  EXPECT_EQ(minSplitBytesFor(128u << 10, 2), 128u << 10) << "a value set wins";
  EXPECT_EQ(minSplitBytesFor(0, 2), 0u);
  // The process's state resolves it from the process's own CPUs, not a rank's
  // share: 8 ranks on 16 CPUs keep 64K (their figures were measured so).
  Params p;
  PluginState two(p, budget(2, 0, 16));
  EXPECT_EQ(two.params().minSplitBytes, 4u << 20);
  PluginState sixteen(p, budget(16, 0, 16));
  EXPECT_EQ(sixteen.params().minSplitBytes, 64u << 10);
  p.localRanks = 8;
  PluginState shared(p, budget(16, 0, 16));
  EXPECT_EQ(shared.usableCpus(), 2);
  EXPECT_EQ(shared.params().minSplitBytes, 64u << 10);
  p.minSplitBytes = 1u << 20;
  EXPECT_EQ(PluginState(p, budget(2, 0, 16)).params().minSplitBytes, 1u << 20);
}

// Which messages the caller stream takes (send_comm.h), per rank share of a
// 16-CPU host: every small one where workers sleep, up to 2 KiB where they
// spin on few CPUs (512 B within a run of messages), none (while the host is
// quiet) where they spin on many.
TEST(AutoSizing, CallerStreamPerRankShare) {
  Params p;
  p.localRanks = 2;  // 8 CPUs each: workers spin
  CallerStreamUse two = PluginState(p, budget(16, 0, 16)).callerStream();
  EXPECT_TRUE(two.open);
  EXPECT_EQ(two.quietBytes, 0u);
  p.localRanks = 4;  // 4 each: workers spin
  CallerStreamUse four = PluginState(p, budget(16, 0, 16)).callerStream();
  EXPECT_TRUE(four.open);
  EXPECT_EQ(four.quietBytes, kCallerStreamBytesWhileSpinning);
  EXPECT_EQ(four.quietBytesInARun, kCallerStreamBytesInARun);
  EXPECT_LT(four.quietBytesInARun, four.quietBytes);
  p.localRanks = 8;  // 2 each: workers sleep
  PluginState eight(p, budget(16, 0, 16));
  EXPECT_EQ(eight.engineSpinUs(), 0);
  EXPECT_EQ(eight.callerStream().quietBytes, eight.params().minSplitBytes);
  p.localRanks = 2;
  p.spinUs = 0;  // told not to spin
  EXPECT_EQ(PluginState(p, budget(16, 0, 16)).callerStream().quietBytes, 64u << 10);
  p.callerStream = 0;
  EXPECT_FALSE(PluginState(p, budget(16, 0, 16)).callerStream().open);
  p.spinUs = -1;
  p.callerStream = 1;  // set: every small message, spinning or not
  CallerStreamUse set = PluginState(p, budget(16, 0, 16)).callerStream();
  EXPECT_TRUE(set.open);
  EXPECT_EQ(set.quietBytes, 64u << 10);
  // The inline engine has no workers to spin: one where the automatic spin
  // would be 0 (8 ranks), none where it would spin (2 ranks), as before.
  p.callerStream = -1;
  p.engine = EngineKind::kInline;
  EXPECT_FALSE(PluginState(p, budget(16, 0, 16)).callerStream().open);
  p.localRanks = 8;
  EXPECT_TRUE(PluginState(p, budget(16, 0, 16)).callerStream().open);
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
