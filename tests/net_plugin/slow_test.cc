// Slow suite: a message above 2 GiB (v9+ sizes are 64-bit; int-sized code
// paths would wrap), every byte checked. Needs about 5.5 GiB of memory.
#include <gtest/gtest.h>
#include <sys/sysinfo.h>

#include <vector>

#include "net_plugin/api/api.h"
#include "tests/net_plugin/support/harness.h"

namespace bagua::net::testing {
namespace {

TEST(Slow, MessageLargerThan2GiB) {
  constexpr size_t kSize = (5ull << 29) + 12345;  // 2.5 GiB and a bit
  struct sysinfo info {};
  sysinfo(&info);
  if (static_cast<double>(info.totalram) * info.mem_unit < 3.0 * kSize) {
    GTEST_SKIP() << "needs about " << (3 * kSize >> 30) << " GiB of memory";
  }
  Link link = connectLink();
  std::vector<uint8_t> out(kSize), in(kSize);
  fillPattern(out.data(), kSize, 2024);
  void* rreq = postRecv(link.recvComm, in.data(), in.size());
  void* sreq = postSend(link.sendComm, out.data(), kSize);
  int got = 0;
  ASSERT_EQ(waitRequest(sreq, nullptr, 300s), ncclSuccess);
  ASSERT_EQ(waitRequest(rreq, &got, 300s), ncclSuccess);
  EXPECT_EQ(got, INT32_MAX) << "test() reports sizes as int; larger ones saturate";
  EXPECT_EQ(verifyPattern(in.data(), kSize, 2024), -1);
  closeLink(link);
}

}  // namespace
}  // namespace bagua::net::testing
