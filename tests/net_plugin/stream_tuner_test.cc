// The adaptive stream count (BAGUA_NET_MAX_STREAMS, transport/stream_tuner.h).
//
// StreamCountRule.*: the widen/narrow rule on given epochs (no sockets).
// AdaptiveStreams.*: real connections over loopback; tests/meson.build runs
// them with BAGUA_NET_MAX_STREAMS=6, BAGUA_NET_STREAMS=2 and socket buffers
// capped at 64K. Loopback is too fast for a window to limit it, so the test
// makes the receiver late instead: it posts its receives some milliseconds
// after the sends, while the senders' windows are full, which TCP_INFO counts
// as receive-window-limited time, the signal the rule widens on. Loss, the
// regime it narrows in, cannot be made on loopback without netem; the rule's
// tests and the delay-line benchmark (bench/cpu/delay_bench.sh) cover it.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "net_plugin/base/params.h"
#include "net_plugin/transport/send_comm.h"
#include "net_plugin/transport/stream_tuner.h"
#include "tests/net_plugin/support/harness.h"

namespace bagua::net::testing {
namespace {

// One epoch of traffic: `limitedPct` of 100 ms busy time window- or
// buffer-limited, `resentPct` of 64 MiB resent.
StreamTraffic epoch(double limitedPct, double resentPct) {
  StreamTraffic t;
  t.busyUs = 100000;
  t.limitedUs = static_cast<uint64_t>(limitedPct * 1000);
  t.bytesSent = 64u << 20;
  t.bytesResent = static_cast<uint64_t>(resentPct / 100 * static_cast<double>(t.bytesSent));
  return t;
}

TEST(StreamCountRule, WidensWhileWindowLimitedAndLossless) {
  EXPECT_EQ(nextStreamCount(epoch(52.6, 0), 1, 8), 2);  // 128K buffers, 1 stream (measured)
  EXPECT_EQ(nextStreamCount(epoch(20, 0.9), 4, 8), 5);
  EXPECT_EQ(nextStreamCount(epoch(90, 0), 8, 8), 8) << "never beyond the streams opened";
}

TEST(StreamCountRule, NarrowsWhenTheNetworkLimitsAndBytesAreResent) {
  EXPECT_EQ(nextStreamCount(epoch(0.2, 17.3), 4, 8), 3);  // default buffers, 4 streams (measured)
  EXPECT_EQ(nextStreamCount(epoch(0, 1.5), 2, 8), 1);
  EXPECT_EQ(nextStreamCount(epoch(0, 6), 1, 8), 1) << "never below one stream";
}

TEST(StreamCountRule, NarrowsOnHeavyLossEvenWhileLimited) {
  EXPECT_EQ(nextStreamCount(epoch(31.4, 14.6), 8, 8), 7);  // 128K buffers, 8 streams (measured)
  EXPECT_EQ(nextStreamCount(epoch(90, 5.5), 3, 8), 2);
}

TEST(StreamCountRule, HoldsBetweenTheRegimes) {
  EXPECT_EQ(nextStreamCount(epoch(47, 4), 4, 8), 4) << "limited, but the path already loses";
  EXPECT_EQ(nextStreamCount(epoch(10, 0), 4, 8), 4) << "limited, though not enough to widen";
  EXPECT_EQ(nextStreamCount(epoch(1, 0), 4, 8), 4) << "network-limited without loss";
  EXPECT_EQ(nextStreamCount(epoch(1, 0.9), 4, 8), 4) << "loss below the threshold";
  EXPECT_EQ(nextStreamCount(epoch(6, 3), 4, 8), 4) << "some loss while somewhat limited";
}

TEST(StreamCountRule, AQuietEpochDecidesNothing) {
  StreamTraffic shortBusy = epoch(90, 0);
  shortBusy.busyUs = kMinEpochBusyUs - 1;
  shortBusy.limitedUs = shortBusy.busyUs;
  EXPECT_EQ(nextStreamCount(shortBusy, 4, 8), 4);
  StreamTraffic fewBytes = epoch(0, 50);
  fewBytes.bytesSent = kMinEpochBytes - 1;
  EXPECT_EQ(nextStreamCount(fewBytes, 4, 8), 4);
  EXPECT_EQ(nextStreamCount(StreamTraffic{}, 4, 8), 4);
}

TEST(StreamCountRule, StartsOnTheStreamsTheLinkNeeds) {
  EXPECT_EQ(initialStreamCount(4, 0), 4) << "speed unknown (loopback): every stream";
  EXPECT_EQ(initialStreamCount(4, 1000), 1);
  EXPECT_EQ(initialStreamCount(4, 10000), 1) << "one stream fills 10 Gbit/s";
  EXPECT_EQ(initialStreamCount(4, 25000), 3);
  EXPECT_EQ(initialStreamCount(4, 100000), 4) << "never more than the streams asked for";
  EXPECT_EQ(initialStreamCount(8, 400000), 8);
  EXPECT_EQ(initialStreamCount(1, 100000), 1);
}

TEST(StreamTraffic, DifferencesSaturateAtZero) {
  StreamTraffic a{10, 5, 100, 1};
  StreamTraffic b{20, 2, 50, 3};
  StreamTraffic d = a - b;
  EXPECT_EQ(d.busyUs, 0u);
  EXPECT_EQ(d.limitedUs, 3u);
  EXPECT_EQ(d.bytesSent, 50u);
  EXPECT_EQ(d.bytesResent, 0u);
}

TEST(StreamTraffic, ReadsTcpSocketsAndFailsOnOthers) {
  StreamTraffic t;
  int tcp = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(tcp, 0);
  EXPECT_NE(readStreamTraffic(tcp, &t), TrafficRead::kFailed);
  close(tcp);
  EXPECT_EQ(readStreamTraffic(tcp, &t), TrafficRead::kFailed) << "a closed fd";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_EQ(readStreamTraffic(fds[0], &t), TrafficRead::kFailed) << "not a socket";
  close(fds[0]);
  close(fds[1]);
}

SendComm* sendCommOf(const Link& link) {
  return static_cast<SendComm*>(static_cast<Comm*>(link.sendComm));
}

// Sockets of this process that sent at least `bytes` of data (ACKs do not
// count, so the receiving ends of a link never do).
int socketsThatSent(uint64_t bytes) {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(dir)) {
      StreamTraffic t;
      if (e->d_name[0] != '.' && readStreamTraffic(std::atoi(e->d_name), &t) == TrafficRead::kOk &&
          t.bytesSent >= bytes) {
        ++count;
      }
    }
    closedir(dir);
  }
  return count;
}

TEST(AdaptiveStreams, ConnectionsOpenTheMostAndSendOnTheStreamCount) {
  ASSERT_EQ(params().maxStreams, 6) << "run by tests/meson.build with BAGUA_NET_MAX_STREAMS=6";
  Link link = connectLink();
  EXPECT_EQ(static_cast<Comm*>(link.sendComm)->streamCount(), 6u);
  EXPECT_EQ(static_cast<Comm*>(link.recvComm)->streamCount(), 6u);
  EXPECT_EQ(sendCommOf(link)->activeStreams(), 2);
  // Messages of eight chunks each, receives posted first: only the active
  // streams may carry them. The count may move meanwhile (a slow run, e.g.
  // under TSan, can see resends on loopback and narrow to 1), so the bound is
  // the most streams active at once.
  constexpr size_t kSize = 2u << 20;
  std::vector<uint8_t> out(kSize), in(kSize);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    fillPattern(out.data(), kSize, seed);
    void* r = postRecv(link.recvComm, in.data(), kSize);
    void* s = postSend(link.sendComm, out.data(), kSize);
    ASSERT_EQ(waitRequest(s), ncclSuccess);
    ASSERT_EQ(waitRequest(r), ncclSuccess);
    ASSERT_EQ(verifyPattern(in.data(), kSize, seed), -1);
  }
  int sent = socketsThatSent(256 * 1024);
  EXPECT_GE(sent, 1);
  EXPECT_LE(sent, sendCommOf(link)->mostActiveStreams()) << "streams beyond the active count sent";
  closeLink(link);
}

// BAGUA_NET_SPEED_MBPS=10000 (tests/meson.build): a 10 Gbit/s link starts on
// one stream of those opened, and the message still arrives whole.
TEST(AdaptiveStreams, ASlowLinkStartsOnOneStream) {
  ASSERT_EQ(params().speedMbps, 10000) << "run by tests/meson.build with BAGUA_NET_SPEED_MBPS=10000";
  Link link = connectLink();
  EXPECT_EQ(static_cast<Comm*>(link.sendComm)->streamCount(), 6u);
  EXPECT_EQ(sendCommOf(link)->activeStreams(), 1);
  constexpr size_t kSize = 1u << 20;
  std::vector<uint8_t> out(kSize), in(kSize);
  fillPattern(out.data(), kSize, 7);
  void* r = postRecv(link.recvComm, in.data(), kSize);
  void* s = postSend(link.sendComm, out.data(), kSize);
  ASSERT_EQ(waitRequest(s), ncclSuccess);
  ASSERT_EQ(waitRequest(r), ncclSuccess);
  EXPECT_EQ(verifyPattern(in.data(), kSize, 7), -1);
  closeLink(link);
}

// Streams that wait on the receiver's window: the count must grow, and every
// message sent while it moves must arrive intact (chunks of one message
// then travel on streams that joined mid-message).
TEST(AdaptiveStreams, WidensWhileWindowLimitedAndKeepsEveryByte) {
  Link link = connectLink();
  constexpr size_t kSize = 2u << 20;
  constexpr int kDepth = 4;
  std::vector<std::vector<uint8_t>> out(kDepth, std::vector<uint8_t>(kSize));
  std::vector<std::vector<uint8_t>> in(kDepth, std::vector<uint8_t>(kSize));
  auto deadline = std::chrono::steady_clock::now() + 30s;
  uint64_t seed = 1;
  int messages = 0;
  while (sendCommOf(link)->activeStreams() < 4 && std::chrono::steady_clock::now() < deadline) {
    void* sends[kDepth];
    void* recvs[kDepth];
    for (int i = 0; i < kDepth; ++i) {
      fillPattern(out[i].data(), kSize, seed + i);
      sends[i] = postSend(link.sendComm, out[i].data(), kSize);
    }
    std::this_thread::sleep_for(20ms);  // the windows fill; the senders wait on them
    for (int i = 0; i < kDepth; ++i) recvs[i] = postRecv(link.recvComm, in[i].data(), kSize);
    for (int i = 0; i < kDepth; ++i) {
      ASSERT_EQ(waitRequest(sends[i]), ncclSuccess);
      ASSERT_EQ(waitRequest(recvs[i]), ncclSuccess);
      ASSERT_EQ(verifyPattern(in[i].data(), kSize, seed + i), -1) << "message " << messages + i;
    }
    seed += kDepth;
    messages += kDepth;
  }
  EXPECT_GE(sendCommOf(link)->activeStreams(), 4)
      << "still " << sendCommOf(link)->activeStreams() << " streams after " << messages
      << " messages of 2 MiB sent ahead of their receives";
  closeLink(link);
}

}  // namespace
}  // namespace bagua::net::testing
