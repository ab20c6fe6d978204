// Workers spin (BAGUA_NET_SPIN_US) after a round that finished a small
// message and sleep after bulk transfers (engine.h, Worker::smallMessageDone):
// seen as the on-CPU time of the plugin's threads in the moments after a
// message completed. tests/meson.build runs it on each engine with one worker
// and the longest spin (100 ms): Spin.Workers* without the spin governor
// (BAGUA_NET_SPIN_BACKOFF=0, so a loaded test machine cannot cut the spin
// short), Spin.Contended* with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "net_plugin/engine/caller_wait.h"
#include "tests/net_plugin/support/busy_cpu.h"
#include "tests/net_plugin/support/harness.h"

namespace bagua::net::testing {
namespace {

// On-CPU time of the plugin's threads (and of `busy`, where given) in the
// 80 ms after a message of `size` bytes went through `link` and both
// requests completed.
struct CpuAfter {
  uint64_t workersNs = 0;
  uint64_t busyNs = 0;
  uint64_t wallNs = 0;  // the window's real length: 80 ms, or more on a loaded machine
};

CpuAfter cpuAfter(const Link& link, size_t size, BusyThread* busy = nullptr) {
  std::this_thread::sleep_for(200ms);  // any earlier spin (100 ms) has run out
  std::vector<uint8_t> out(size), in(size);
  fillPattern(out.data(), size, size);
  void* r = postRecv(link.recvComm, in.data(), in.size());
  void* s = postSend(link.sendComm, out.data(), size);
  EXPECT_EQ(waitRequest(s), ncclSuccess);
  EXPECT_EQ(waitRequest(r), ncclSuccess);
  EXPECT_EQ(verifyPattern(in.data(), size, size), -1);
  CpuAfter at;
  auto start = std::chrono::steady_clock::now();
  uint64_t workers = pluginThreadsCpuNs();
  uint64_t busyCpu = busy != nullptr ? busy->cpuNs() : 0;
  std::this_thread::sleep_for(80ms);
  at.workersNs = pluginThreadsCpuNs() - workers;
  at.busyNs = busy != nullptr ? busy->cpuNs() - busyCpu : 0;
  at.wallNs = static_cast<uint64_t>((std::chrono::steady_clock::now() - start).count());
  return at;
}

uint64_t workerCpuAfter(const Link& link, size_t size) { return cpuAfter(link, size).workersNs; }

TEST(Spin, WorkersSpinAfterSmallMessagesAndSleepAfterBulk) {
  Link link = connectLink();
  constexpr uint64_t kMs = 1000 * 1000;
  uint64_t small = workerCpuAfter(link, 4096);
  uint64_t bulk = workerCpuAfter(link, 8u << 20);
  // Spinning: most of the 80 ms on a CPU (15 ms leaves room for a loaded
  // machine); sleeping: next to nothing (0-1 ms measured).
  EXPECT_GT(small, 15 * kMs) << "no spin after a 4 KiB message (" << small / kMs << " ms)";
  EXPECT_LT(bulk, 8 * kMs) << "spun after an 8 MiB message (" << bulk / kMs << " ms)";
  closeLink(link);
}

// A caller that waited for a CPU (engine/caller_wait.h) keeps the workers
// from spinning: the message that earned a spin just before earns none.
TEST(Spin, WorkersDoNotSpinWhileCallersWaitForACpu) {
  Link link = connectLink();
  constexpr uint64_t kMs = 1000 * 1000;
  // Bounds loose enough for a loaded machine (a spin got 11 ms of the 80
  // with two busy loops on 2 vCPUs; no spin: 0-1 ms).
  uint64_t before = workerCpuAfter(link, 4096);
  EXPECT_GT(before, 4 * kMs) << "no spin after a 4 KiB message (" << before / kMs << " ms)";
  noteCallerWindow(0.5);  // a 50 ms window in which the caller waited half the time
  uint64_t after = workerCpuAfter(link, 4096);  // within the second it holds
  EXPECT_LT(after, std::min<uint64_t>(8 * kMs, before / 2))
      << "spun " << after / kMs << " ms after callers waited for a CPU (" << before / kMs
      << " ms before)";
  closeLink(link);
}

// The worker shares its CPU with a busy thread: its spin loses the CPU, and
// the governor (spin_governor.h) puts it to sleep instead of letting it take
// half the CPU for the whole 100 ms spin. Judged by the two threads' shares
// of the same window, which a loaded machine (a late wake-up of this thread,
// other processes on that CPU) scales alike: with BAGUA_NET_SPIN_BACKOFF=0
// the worker took 37-43 ms of 80 and the busy thread as much; with the
// governor 0-5 ms against 75-82 (2-vCPU VM, ASan, both engines).
TEST(Spin, ContendedWorkerStopsSpinning) {
  int cpu = firstAllowedCpu();
  Link link = connectLink();
  ASSERT_EQ(pinPluginThreads(cpu), 1)
      << "the plugin's one worker could not be pinned to CPU " << cpu;
  CpuAfter at;
  {
    BusyThread busy(cpu);
    at = cpuAfter(link, 4096, &busy);
  }
  constexpr uint64_t kMs = 1000 * 1000;
  EXPECT_GT(at.busyNs, 20 * kMs) << "the busy thread hardly ran (" << at.busyNs / kMs << " ms of "
                                 << at.wallNs / kMs << ")";
  EXPECT_LT(at.workersNs, at.busyNs / 4)
      << "a worker sharing its CPU with a busy thread spun for " << at.workersNs / kMs
      << " ms, the busy thread ran " << at.busyNs / kMs << " ms (window " << at.wallNs / kMs
      << " ms)";
  closeLink(link);
}

}  // namespace
}  // namespace bagua::net::testing
