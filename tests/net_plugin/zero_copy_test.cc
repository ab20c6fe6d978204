// Zero-copy sends (BAGUA_NET_ZEROCOPY): tests/meson.build runs this binary
// with always, auto and off, on each engine. On loopback the kernel copies
// every zero-copy send after all (and says so), which makes it the harshest
// case for the bookkeeping: every chunk gets a notification, and a send must
// not complete before it, because the caller may reuse the buffer at once.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "net_plugin/api/api.h"
#include "net_plugin/api/process.h"
#include "net_plugin/base/params.h"
#include "net_plugin/transport/zero_copy_stats.h"
#include "tests/net_plugin/support/harness.h"

namespace bagua::net::testing {
namespace {

struct Counts {
  uint64_t sends;
  uint64_t notifications;
  uint64_t copied;
};

Counts counts() {
  const ZeroCopyStats& s = zeroCopyStats();
  return {s.sends.load(), s.notifications.load(), s.copied.load()};
}

// Whether this process's engine sends zero-copy when asked to.
bool engineCanZeroCopy() { return api::processState().engine()->worker(0).zeroCopySupported(); }

// Sends `messages` messages of `size` bytes in flight at once; each send
// buffer is overwritten as soon as its send completes, before the receiver
// has necessarily read it. Returns the number of corrupted messages.
int sendAndScribble(Link& link, size_t size, int messages) {
  std::vector<std::vector<uint8_t>> out(messages), in(messages);
  std::vector<void*> sreqs, rreqs;
  for (int i = 0; i < messages; ++i) {
    out[i].resize(size);
    in[i].assign(size, 0);
    fillPattern(out[i].data(), size, 77 + i);
    rreqs.push_back(postRecv(link.recvComm, in[i].data(), size));
  }
  for (int i = 0; i < messages; ++i) sreqs.push_back(postSend(link.sendComm, out[i].data(), size));
  for (int i = 0; i < messages; ++i) {
    EXPECT_EQ(waitRequest(sreqs[i]), ncclSuccess);
    std::memset(out[i].data(), 0xAB, size);  // NCCL refills its buffer now
  }
  int corrupted = 0;
  for (int i = 0; i < messages; ++i) {
    EXPECT_EQ(waitRequest(rreqs[i]), ncclSuccess);
    corrupted += verifyPattern(in[i].data(), size, 77 + i) != -1;
  }
  return corrupted;
}

TEST(ZeroCopy, ASendCompletesOnlyOnceItsBufferIsFree) {
  Link link = connectLink();
  for (int round = 0; round < 4; ++round) {
    EXPECT_EQ(sendAndScribble(link, 4u << 20, 8), 0) << "round " << round;
    EXPECT_EQ(sendAndScribble(link, 300000, 16), 0) << "round " << round;
  }
  closeLink(link);
}

TEST(ZeroCopy, TheModeDecidesHowManySendsGoZeroCopy) {
  Counts before = counts();
  Link link = connectLink();
  constexpr size_t kSize = 16u << 20;
  constexpr int kMessages = 8;
  EXPECT_EQ(sendAndScribble(link, kSize, kMessages), 0);
  closeLink(link);  // every notification is in once the streams closed
  Counts after = counts();
  uint64_t sends = after.sends - before.sends;
  uint64_t notifications = after.notifications - before.notifications;
  uint64_t copied = after.copied - before.copied;
  const Params& p = params();
  uint64_t chunks = kMessages * (kSize / p.chunkBytes);
  if (p.zeroCopy == ZeroCopyMode::kOff || !engineCanZeroCopy()) {
    EXPECT_EQ(sends, 0u);
    return;
  }
  EXPECT_EQ(notifications, sends) << "every zero-copy send of a finished message was released";
  EXPECT_EQ(copied, notifications) << "on loopback the kernel copies every zero-copy send";
  if (p.zeroCopy == ZeroCopyMode::kAlways) {
    EXPECT_GE(sends, chunks) << "always: every chunk goes zero-copy";
  } else {
    // auto: a stream stops after its first copied notification; until then
    // it may have started one send per slot.
    EXPECT_GE(sends, 1u);
    EXPECT_LE(sends, static_cast<uint64_t>(p.streams) * 8) << "auto must give up on loopback";
  }
}

TEST(ZeroCopy, ClosingWithUnreadZeroCopyDataDoesNotHang) {
  // The receiver never reads: sent chunks stay in socket queues, and their
  // notifications can only come once close drops them.
  Link link = connectLink();
  std::vector<uint8_t> out(32u << 20, 0x11);
  void* sreq = postSend(link.sendComm, out.data(), out.size());
  std::this_thread::sleep_for(200ms);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(api::closeSend(link.sendComm), ncclSuccess);
  link.sendComm = nullptr;
  (void)sreq;  // invalid once its comm closed, as in NCCL
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  closeLink(link);
}

}  // namespace
}  // namespace bagua::net::testing
