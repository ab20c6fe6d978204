// The monotonic clock in nanoseconds, for timestamps kept in atomics.
#pragma once

#include <chrono>
#include <cstdint>

namespace bagua::net {

inline int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace bagua::net
