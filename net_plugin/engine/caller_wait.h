// Whether the threads that call the plugin (NCCL's proxy) wait for a CPU.
//
// The spin governor (spin_governor.h) sees a busy host only from a spin
// that loses its CPU, and a 50 us spin is rarely preempted: on one GPU host
// with 8 busy loops beside 4 ranks, 4 of 12 rank processes never saw one
// and kept handing 512 B-64 KiB messages to sleeping workers (1.7-3.5x the
// socket transport's time; bench/results/spin_backoff_gpu_2026-12-01). The
// proxy thread sees it directly: it is always runnable while a collective
// runs, so the time the kernel kept it waiting for a CPU
// (/proc/thread-self/schedstat, "run delay") is what the busy CPUs cost it.
//
// test() samples its calling thread every kCallerWaitWindow; a window in
// which that thread waited more than kBusyWaitShare of the time marks the
// host busy for kMostBackoff: workers then do not spin, and the caller
// stream takes every message up to 64 KiB (send_comm.h), as after a lost
// spin. Only where workers spin and BAGUA_NET_SPIN_BACKOFF is on.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace bagua::net {

inline constexpr std::chrono::milliseconds kCallerWaitWindow{50};
inline constexpr double kBusyWaitShare = 0.10;

// One thread's scheduler statistics.
struct SchedStat {
  int64_t onCpuNs = 0;
  int64_t waitNs = 0;  // runnable, waiting for a CPU
};

// Parses schedstat's "<on-CPU ns> <wait ns> <time slices>"; false when the
// text is not that.
bool parseSchedStat(const char* text, size_t n, SchedStat* out);

// The share of `wallNs` the thread spent waiting between two samples (0
// when the clock did not move or the counter went back).
double waitShare(const SchedStat& before, const SchedStat& after, int64_t wallNs);

// One thread's sampler: a counter, a clock read on one call in 64, and at
// the end of each kCallerWaitWindow one read of the thread's schedstat,
// kept open (a pread at offset 0 reads it afresh); each window's share goes
// to noteCallerWindow. A schedstat that cannot be opened or read (no /proc,
// a kernel without CONFIG_SCHED_INFO) turns the sampler off for good.
class CallerWaitSampler {
 public:
  // `path`: the calling thread's schedstat; tests give a file of their own.
  explicit CallerWaitSampler(const char* path = "/proc/thread-self/schedstat") : path_(path) {}
  ~CallerWaitSampler();
  CallerWaitSampler(const CallerWaitSampler&) = delete;
  CallerWaitSampler& operator=(const CallerWaitSampler&) = delete;

  void sample();
  // True once the schedstat could not be read: sample() does nothing more.
  bool off() const { return fd_ == kOff; }

 private:
  static constexpr int kOff = -2;
  bool read(SchedStat* out);

  const char* path_;
  int fd_ = -1;
  int pid_ = 0;  // whose thread fd_ reads
  unsigned calls_ = 0;
  int64_t windowStartNs_ = 0;
  SchedStat start_;
};

// From test(): the calling thread's own CallerWaitSampler.
void sampleCallerWait();

// Whether a sampled window within the last kMostBackoff was above
// kBusyWaitShare.
bool callersWaitedRecently();

// For the log at a comm's close: the windows sampled, the busy ones and the
// largest share seen; empty before the first window.
std::string describeCallerWait();

// The same decision for a window measured elsewhere (tests): records it.
void noteCallerWindow(double share);

}  // namespace bagua::net
