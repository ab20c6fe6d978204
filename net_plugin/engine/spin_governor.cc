#include "net_plugin/engine/spin_governor.h"

#include <algorithm>

namespace bagua::net {

bool SpinGovernor::polled(Clock::time_point previous, Clock::time_point now) {
  if (!enabled_ || now - previous <= kLostCpuGap) return true;
  // Lost again soon after the last back-off ended: the host is still busy.
  bool again = lostSpins_ > 0 && now - quietUntil_ < kMostBackoff;
  backoff_ = again ? std::min<Clock::duration>(backoff_ * 2, kMostBackoff) : kFirstBackoff;
  quietUntil_ = now + backoff_;
  lastGap_ = now - previous;
  ++lostSpins_;
  return false;
}

}  // namespace bagua::net
