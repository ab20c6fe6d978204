// Another thread's work on a CPU (a data loader, another rank) for the
// tests of the busy-host rules: spin_test.cc, caller_wait_test.cc.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <time.h>

#include <atomic>
#include <cstdint>
#include <thread>

namespace bagua::net::testing {

// The first CPU this process may run on.
inline int firstAllowedCpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) return cpu;
  }
  return 0;
}

// Pins the calling thread to `cpu`; false when the CPU is not allowed.
inline bool pinCallingThread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// A thread that keeps `cpu` busy until destroyed.
class BusyThread {
 public:
  explicit BusyThread(int cpu) {
    thread_ = std::thread([this, cpu] {
      pinCallingThread(cpu);
      while (!stop_.load(std::memory_order_relaxed)) {
      }
    });
  }
  // Its CPU time so far (ns).
  uint64_t cpuNs() {
    clockid_t clock;
    timespec ts{};
    if (pthread_getcpuclockid(thread_.native_handle(), &clock) != 0 ||
        clock_gettime(clock, &ts) != 0) {
      return 0;
    }
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
  }
  ~BusyThread() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace bagua::net::testing
