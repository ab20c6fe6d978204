// A moment that one thread marks and others ask about: "did X happen within
// the last P?" (a lost spin, a busy caller window), lock-free.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "net_plugin/base/steady_ns.h"

namespace bagua::net {

class RecentMark {
 public:
  void mark() { ns_.store(steadyNs(), std::memory_order_relaxed); }

  // Whether mark() was called less than `period` ago (false before the first).
  bool within(std::chrono::nanoseconds period) const {
    int64_t last = ns_.load(std::memory_order_relaxed);
    return last != 0 && steadyNs() - last < period.count();
  }

 private:
  std::atomic<int64_t> ns_{0};  // steady_clock ns of the last mark; 0: none
};

}  // namespace bagua::net
