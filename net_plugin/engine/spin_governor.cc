#include "net_plugin/engine/spin_governor.h"

#include <algorithm>

namespace bagua::net {

void SpinGovernor::spinStarted(Clock::time_point now, Clock::duration threadCpu) {
  spinStart_ = now;
  spinStartCpu_ = threadCpu;
}

bool SpinGovernor::polled(Clock::time_point previous, Clock::time_point now, CpuTime threadCpu) {
  if (!enabled_ || now - previous <= kLostCpuGap) return true;
  Clock::duration offCpu = (now - spinStart_) - (threadCpu() - spinStartCpu_);
  if (offCpu <= kLostCpuGap) return true;  // the thread's own work
  // Lost again soon after the last back-off ended: the host is still busy.
  bool again = lostSpins_ > 0 && now - quietUntil_ < kMostBackoff;
  backoff_ = again ? std::min<Clock::duration>(backoff_ * 2, kMostBackoff) : kFirstBackoff;
  quietUntil_ = now + backoff_;
  lastGap_ = offCpu;
  ++lostSpins_;
  return false;
}

}  // namespace bagua::net
