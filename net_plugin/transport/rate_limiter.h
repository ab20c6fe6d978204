// A transmit rate limit shared by the send streams of one NCCL rank: a
// testing aid (BAGUA_NET_RATE_LIMIT_MBPS) that emulates a slower NIC where
// tc is unavailable. Streams reserve each chunk before sending it and wait
// the returned delay, so the rank's sends never exceed the rate over any
// window longer than kSlack; idle time earns no credit beyond that.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>

namespace bagua::net {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  // How far ahead of the ideal schedule a sender may run (absorbs timer jitter).
  static constexpr std::chrono::microseconds kSlack{200};

  explicit RateLimiter(double bytesPerSecond) : nsPerByte_(1e9 / bytesPerSecond) {}

  // Books `bytes` on the link; returns how long to wait before sending them.
  std::chrono::nanoseconds reserve(size_t bytes) { return reserve(bytes, Clock::now()); }

  // The same at a given time (tests pass their own clock).
  std::chrono::nanoseconds reserve(size_t bytes, Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mutex_);
    Clock::time_point start = next_ > now ? next_ : now;
    next_ = start + std::chrono::nanoseconds(static_cast<long long>(nsPerByte_ * bytes));
    auto wait = start - now - kSlack;
    return wait.count() > 0 ? std::chrono::duration_cast<std::chrono::nanoseconds>(wait)
                            : std::chrono::nanoseconds(0);
  }

 private:
  std::mutex mutex_;
  double nsPerByte_;
  Clock::time_point next_{};
};

}  // namespace bagua::net
