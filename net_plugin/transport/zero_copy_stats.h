// Process-wide counters of zero-copy sends (BAGUA_NET_ZEROCOPY): how many
// went out, how many kernel notifications came back, and how many of those
// said the kernel copied after all. Logged when a send comm closes (INFO
// NET) and read by tests.
#pragma once

#include <atomic>
#include <cstdint>

namespace bagua::net {

struct ZeroCopyStats {
  std::atomic<uint64_t> sends{0};          // SENDMSG_ZC operations submitted
  std::atomic<uint64_t> notifications{0};  // buffers released by the kernel
  std::atomic<uint64_t> copied{0};         // ... of which the kernel had copied
};

inline ZeroCopyStats& zeroCopyStats() {
  static ZeroCopyStats stats;
  return stats;
}

}  // namespace bagua::net
