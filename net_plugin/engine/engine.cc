// Engine selection: io_uring unless told otherwise or unavailable; epoll,
// with worker threads or driven by the callers (inline).
#include "net_plugin/engine/engine.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <system_error>

#include "net_plugin/base/log.h"
#include "net_plugin/base/recent_mark.h"
#include "net_plugin/base/status.h"
#include "net_plugin/engine/spin_governor.h"

namespace bagua::net {

namespace {

std::unique_ptr<Engine> startEngine(const EngineConfig& config, std::string* note) {
  if (config.kind == EngineKind::kEpoll || config.kind == EngineKind::kInline) {
    return createEpollEngine(config);
  }
  if (config.kind == EngineKind::kIoUring) return createUringEngine(config);
  try {
    return createUringEngine(config);
  } catch (const NetError& e) {
    *note = std::string("io_uring unavailable (") + e.what() + "), falling back to epoll";
    return createEpollEngine(config);
  }
}

}  // namespace

int workerCpu(int index, const std::vector<int>& cpus) {
  return cpus.empty() ? -1 : cpus[static_cast<size_t>(index) % cpus.size()];
}

void pinWorkerThread(int index, int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (err != 0) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      BAGUA_WARN("BAGUA_NET_CPUS: cannot pin worker %d to CPU %d: %s (continuing unpinned)", index,
                 cpu, strerror(err));
    }
    return;
  }
  BAGUA_TRACE_LOG("worker %d pinned to CPU %d", index, cpu);
}

namespace {
RecentMark lostSpin;  // the process's last lost spin
}  // namespace

std::chrono::steady_clock::duration threadCpuTime() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}

bool spinsLostRecently() { return lostSpin.within(kMostBackoff); }

void noteLostSpin(int index, const SpinGovernor& governor) {
  lostSpin.mark();
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  using std::chrono::milliseconds;
  BAGUA_INFO(NCCL_NET,
             "worker %d was off its CPU for %lld us while spinning: the host's CPUs are busy, so "
             "workers stop spinning after a small message for %lld ms and longer while that "
             "lasts (BAGUA_NET_SPIN_BACKOFF=0 keeps them spinning)",
             index, static_cast<long long>(duration_cast<microseconds>(governor.lastGap()).count()),
             static_cast<long long>(duration_cast<milliseconds>(governor.backoff()).count()));
}

std::unique_ptr<Engine> createEngine(const EngineConfig& config, std::string* note) {
  try {
    return startEngine(config, note);
  } catch (const std::system_error& e) {  // std::thread could not start one
    throw NetError(Status::kSystemError, std::string("starting the I/O engine's worker threads: ") +
                                             e.what() +
                                             " (out of memory or process/thread limits)");
  }
}

}  // namespace bagua::net
