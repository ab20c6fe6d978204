#include "net_plugin/engine/caller_wait.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>

#include "net_plugin/base/log.h"
#include "net_plugin/base/recent_mark.h"
#include "net_plugin/base/steady_ns.h"
#include "net_plugin/engine/spin_governor.h"

namespace bagua::net {
namespace {

RecentMark busyWindow;  // the last window above kBusyWaitShare
std::atomic<uint64_t> windows{0};
std::atomic<uint64_t> busyWindows{0};
std::atomic<int64_t> mostSharePpm{0};

constexpr unsigned kCallsPerClockRead = 64;
constexpr int64_t kWindowNs =
    std::chrono::duration_cast<std::chrono::nanoseconds>(kCallerWaitWindow).count();

}  // namespace

bool parseSchedStat(const char* text, size_t n, SchedStat* out) {
  std::string s(text, n);
  long long onCpu = 0;
  long long wait = 0;
  unsigned long long slices = 0;
  if (std::sscanf(s.c_str(), "%lld %lld %llu", &onCpu, &wait, &slices) != 3) return false;
  if (onCpu < 0 || wait < 0) return false;
  out->onCpuNs = onCpu;
  out->waitNs = wait;
  return true;
}

double waitShare(const SchedStat& before, const SchedStat& after, int64_t wallNs) {
  if (wallNs <= 0 || after.waitNs < before.waitNs) return 0.0;
  return static_cast<double>(after.waitNs - before.waitNs) / static_cast<double>(wallNs);
}

CallerWaitSampler::~CallerWaitSampler() {
  if (fd_ >= 0) ::close(fd_);
}

void CallerWaitSampler::sample() {
  // NCCL's proxy calls test() every few hundred ns: the clock is read on
  // one call in kCallsPerClockRead only.
  if (fd_ == kOff || ++calls_ % kCallsPerClockRead != 0) return;
  int64_t now = steadyNs();
  if (fd_ >= 0 && now - windowStartNs_ < kWindowNs) return;
  SchedStat stat;
  if (!read(&stat)) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = kOff;
    return;
  }
  if (windowStartNs_ != 0) noteCallerWindow(waitShare(start_, stat, now - windowStartNs_));
  start_ = stat;
  windowStartNs_ = now;
}

bool CallerWaitSampler::read(SchedStat* out) {
  // A fork()ed child's copy of the fd still reads the parent's thread.
  if (fd_ >= 0 && ::getpid() != pid_) {
    ::close(fd_);
    fd_ = -1;
    windowStartNs_ = 0;
  }
  if (fd_ == -1) {
    fd_ = ::open(path_, O_RDONLY | O_CLOEXEC);
    pid_ = ::getpid();
  }
  if (fd_ < 0) return false;
  char text[128];
  ssize_t n = ::pread(fd_, text, sizeof(text) - 1, 0);
  return n > 0 && parseSchedStat(text, static_cast<size_t>(n), out);
}

void sampleCallerWait() {
  thread_local CallerWaitSampler sampler;
  sampler.sample();
}

void noteCallerWindow(double share) {
  windows.fetch_add(1, std::memory_order_relaxed);
  auto ppm = static_cast<int64_t>(share * 1e6);
  int64_t most = mostSharePpm.load(std::memory_order_relaxed);
  while (ppm > most && !mostSharePpm.compare_exchange_weak(most, ppm, std::memory_order_relaxed)) {
  }
  if (share <= kBusyWaitShare) return;
  busyWindow.mark();
  if (busyWindows.fetch_add(1, std::memory_order_relaxed) > 0) return;
  BAGUA_INFO(NCCL_NET,
             "a thread calling the plugin waited for a CPU %.0f%% of %lld ms: the host's CPUs are "
             "busy, so workers do not spin and the caller stream takes messages up to 64 KiB "
             "while that lasts (BAGUA_NET_SPIN_BACKOFF=0 turns this off)",
             share * 100.0, static_cast<long long>(kCallerWaitWindow.count()));
}

bool callersWaitedRecently() { return busyWindow.within(kMostBackoff); }

std::string describeCallerWait() {
  if (windows.load(std::memory_order_relaxed) == 0) return "";
  char line[160];
  std::snprintf(line, sizeof(line),
                "callers' wait for a CPU: %" PRIu64 " windows of %lld ms sampled, %" PRIu64
                " above %.0f%%, most %.1f%%",
                windows.load(std::memory_order_relaxed),
                static_cast<long long>(kCallerWaitWindow.count()),
                busyWindows.load(std::memory_order_relaxed), kBusyWaitShare * 100.0,
                static_cast<double>(mostSharePpm.load(std::memory_order_relaxed)) / 1e4);
  return line;
}

}  // namespace bagua::net
