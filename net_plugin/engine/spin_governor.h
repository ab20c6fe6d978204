// When a worker may spin. After a small message a worker polls for spinUs
// instead of sleeping (engine.h, Worker::smallMessageDone), so the next one
// pays no thread wake-up. That is a good trade only while the CPU it burns
// would be idle anyway. Where the host's CPUs are contended (a training
// job's data loaders, other ranks' threads, a hypervisor lending the vCPU
// away), a spinning thread takes them from NCCL's proxy threads, which move
// every message: on one GPU host whose CPUs were contended, 4 ranks'
// all_reduce at 8 B-256 KiB took 2-3x the socket transport's time with
// spinning workers and 0.8-1.3x without (bench/results/spin_backoff_gpu_2026-12-01).
//
// The signal: a poll that returns long after the previous one (longer than
// kLostCpuGap), with the thread off its CPU for longer than that since the
// spin started (its CPU time says so; its own work between two polls, such
// as a socket copy, is no loss), means another runnable thread or the
// hypervisor had the CPU. The worker then stops spinning for a
// back-off: kFirstBackoff, doubled (up to kMostBackoff) for each loss that
// comes within kMostBackoff of the last back-off's end. A host that stays
// busy thus keeps its workers asleep but for one spin a second; on one that
// is idle again the spin runs as before. Decisions are the worker's own (one
// governor per worker thread, no locking); time is passed in so that tests
// can drive it.
#pragma once

#include <chrono>
#include <cstdint>

namespace bagua::net {

// Off-CPU time above this within one spin means the spinning thread lost its
// CPU: far above the interrupts between two polls (a few us), below a
// scheduler time slice (0.75-3 ms).
inline constexpr std::chrono::microseconds kLostCpuGap{200};
inline constexpr std::chrono::milliseconds kFirstBackoff{1};
inline constexpr std::chrono::milliseconds kMostBackoff{1000};

class SpinGovernor {
 public:
  using Clock = std::chrono::steady_clock;

  // `enabled` false (BAGUA_NET_SPIN_BACKOFF=0): spinning is always allowed.
  explicit SpinGovernor(bool enabled = true) : enabled_(enabled) {}

  // Whether a spin may start at `now`.
  bool maySpin(Clock::time_point now) const { return !enabled_ || now >= quietUntil_; }

  // A spin starts at `now`; `threadCpu` is the thread's CPU time then.
  void spinStarted(Clock::time_point now, Clock::duration threadCpu);

  // A poll of the current spin returned at `now`, the one before it (or the
  // spin's start) at `previous`. Where the gap is above kLostCpuGap it asks
  // `threadCpu()` (the thread's CPU time) how long the thread was off its
  // CPU since the spin started: false when that is above kLostCpuGap too,
  // and the caller stops spinning; maySpin() is false for the back-off.
  using CpuTime = Clock::duration (*)();
  bool polled(Clock::time_point previous, Clock::time_point now, CpuTime threadCpu);

  // Spins cut short because they lost their CPU, since the start.
  uint64_t lostSpins() const { return lostSpins_; }
  // The back-off the last lost spin started (kFirstBackoff before any).
  Clock::duration backoff() const { return backoff_; }
  // The off-CPU time that cut the last lost spin.
  Clock::duration lastGap() const { return lastGap_; }

 private:
  bool enabled_;
  Clock::time_point spinStart_{};
  Clock::duration spinStartCpu_{};
  Clock::time_point quietUntil_{};
  Clock::duration backoff_ = kFirstBackoff;
  Clock::duration lastGap_{};
  uint64_t lostSpins_ = 0;
};

}  // namespace bagua::net
