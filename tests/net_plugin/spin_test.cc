// Workers spin (BAGUA_NET_SPIN_US) after a round that finished a small
// message and sleep after bulk transfers (engine.h, Worker::smallMessageDone):
// seen as the on-CPU time of the plugin's threads in the moments after a
// message completed. tests/meson.build runs it on each engine with one worker
// and the longest spin (100 ms).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "tests/net_plugin/support/harness.h"

namespace bagua::net::testing {
namespace {

// On-CPU time (ns) of the plugin's threads in the 80 ms after a message of
// `size` bytes went through `link` and both requests completed.
uint64_t workerCpuAfter(const Link& link, size_t size) {
  std::this_thread::sleep_for(200ms);  // any earlier spin (100 ms) has run out
  std::vector<uint8_t> out(size), in(size);
  fillPattern(out.data(), size, size);
  void* r = postRecv(link.recvComm, in.data(), in.size());
  void* s = postSend(link.sendComm, out.data(), size);
  EXPECT_EQ(waitRequest(s), ncclSuccess);
  EXPECT_EQ(waitRequest(r), ncclSuccess);
  EXPECT_EQ(verifyPattern(in.data(), size, size), -1);
  uint64_t before = pluginThreadsCpuNs();
  std::this_thread::sleep_for(80ms);
  return pluginThreadsCpuNs() - before;
}

TEST(Spin, WorkersSpinAfterSmallMessagesAndSleepAfterBulk) {
  Link link = connectLink();
  constexpr uint64_t kMs = 1000 * 1000;
  uint64_t small = workerCpuAfter(link, 4096);
  uint64_t bulk = workerCpuAfter(link, 8u << 20);
  // Spinning: most of the 80 ms on a CPU (15 ms leaves room for a loaded
  // machine); sleeping: next to nothing (0-1 ms measured).
  EXPECT_GT(small, 15 * kMs) << "no spin after a 4 KiB message (" << small / kMs << " ms)";
  EXPECT_LT(bulk, 8 * kMs) << "spun after an 8 MiB message (" << bulk / kMs << " ms)";
  closeLink(link);
}

}  // namespace
}  // namespace bagua::net::testing
