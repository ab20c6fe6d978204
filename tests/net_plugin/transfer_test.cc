// Data-path correctness over loopback: every size class (zero, one byte,
// odd sizes, 4 KiB .. 64 MiB), messages in flight up to NCCL's 32, receive
// buffers larger than the message, order across messages, and memory
// registration. The stream count and engine come from the environment
// (BAGUA_NET_STREAMS, BAGUA_NET_ENGINE): tests/meson.build runs this binary
// once per combination.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "net_plugin/api/api.h"
#include "tests/net_plugin/support/harness.h"

namespace bagua::net::testing {
namespace {

class TransferTest : public ::testing::Test {
 protected:
  void SetUp() override { link_ = connectLink(); }
  void TearDown() override { closeLink(link_); }

  // Sends `size` bytes and checks the receiver got exactly them, `slack`
  // bytes of receive buffer to spare.
  void roundTrip(size_t size, size_t slack, uint64_t seed) {
    std::vector<uint8_t> out(size);
    std::vector<uint8_t> in(size + slack, 0xEE);
    fillPattern(out.data(), size, seed);
    void* rreq = postRecv(link_.recvComm, in.data(), in.size());
    void* sreq = postSend(link_.sendComm, out.data(), size);
    int sent = -1;
    int got = -1;
    ASSERT_EQ(waitPair(sreq, rreq, &sent, &got), ncclSuccess);
    EXPECT_EQ(static_cast<size_t>(got), size) << "test() must report the bytes actually received";
    EXPECT_EQ(verifyPattern(in.data(), size, seed), -1) << "size " << size;
    for (size_t i = size; i < in.size(); ++i) {
      ASSERT_EQ(in[i], 0xEE) << "byte " << i << " past the message was written";
    }
  }

  Link link_;
};

class SizeSweep : public TransferTest, public ::testing::WithParamInterface<size_t> {};

TEST_P(SizeSweep, EveryByteArrives) { roundTrip(GetParam(), 0, GetParam()); }

TEST_P(SizeSweep, ReceiveLargerThanSendReportsRealSize) {
  roundTrip(GetParam(), 4097, GetParam() + 1);
}

INSTANTIATE_TEST_SUITE_P(Sizes, SizeSweep,
                         ::testing::Values(0, 1, 7, 127, 4095, 4096, 65535, 65536, 65537, 262144,
                                           1000003, 1 << 20, 4 << 20, 16 << 20, 64 << 20));

TEST_F(TransferTest, ManyMessagesInFlightArriveInOrder) {
  // 32 receives and sends outstanding at once, sizes mixed so small messages
  // overtake large ones on other streams; each must land in its own buffer.
  constexpr int kMessages = 32;
  std::vector<size_t> sizes;
  for (int i = 0; i < kMessages; ++i) sizes.push_back(i % 3 == 0 ? 3u << 20 : 100u * i + 1);
  std::vector<std::vector<uint8_t>> out(kMessages), in(kMessages);
  std::vector<void*> sreqs, rreqs;
  for (int i = 0; i < kMessages; ++i) {
    out[i].resize(sizes[i]);
    in[i].assign(sizes[i], 0);
    fillPattern(out[i].data(), sizes[i], 1000 + i);
    rreqs.push_back(postRecv(link_.recvComm, in[i].data(), in[i].size()));
  }
  for (int i = 0; i < kMessages; ++i) {
    sreqs.push_back(postSend(link_.sendComm, out[i].data(), sizes[i]));
  }
  for (int i = 0; i < kMessages; ++i) {
    int got = -1;
    ASSERT_EQ(waitRequest(sreqs[i]), ncclSuccess);
    ASSERT_EQ(waitRequest(rreqs[i], &got), ncclSuccess);
    EXPECT_EQ(static_cast<size_t>(got), sizes[i]);
    EXPECT_EQ(verifyPattern(in[i].data(), sizes[i], 1000 + i), -1) << "message " << i;
  }
}

TEST_F(TransferTest, SendsPostedBeforeReceivesStillMatchInOrder) {
  // NCCL may send before the peer posts; the plugin must hold the data back
  // (TCP flow control), not drop or misplace it.
  constexpr int kMessages = 8;
  std::vector<std::vector<uint8_t>> out(kMessages), in(kMessages);
  std::vector<void*> sreqs;
  for (int i = 0; i < kMessages; ++i) {
    out[i].resize(1u << 20);
    fillPattern(out[i].data(), out[i].size(), 77 + i);
    sreqs.push_back(postSend(link_.sendComm, out[i].data(), out[i].size()));
  }
  for (int i = 0; i < kMessages; ++i) {
    in[i].assign(out[i].size(), 0);
    void* rreq = postRecv(link_.recvComm, in[i].data(), in[i].size());
    ASSERT_EQ(waitRequest(rreq), ncclSuccess);
    EXPECT_EQ(verifyPattern(in[i].data(), in[i].size(), 77 + i), -1) << "message " << i;
  }
  for (void* s : sreqs) EXPECT_EQ(waitRequest(s), ncclSuccess);
}

TEST_F(TransferTest, RequestPoolHoldsNcclMaximumThenSaysTryLater) {
  // NCCL_NET_MAX_REQUESTS (32) receives fit; the 33rd returns a NULL request.
  std::vector<uint8_t> buf(64);
  std::vector<void*> reqs;
  for (int i = 0; i < NCCL_NET_MAX_REQUESTS; ++i) {
    void* req = nullptr;
    void* data = buf.data();
    size_t size = buf.size();
    ASSERT_EQ(api::irecv(link_.recvComm, 1, &data, &size, nullptr, &req), ncclSuccess);
    ASSERT_NE(req, nullptr) << "receive " << i;
    reqs.push_back(req);
  }
  void* extra = reinterpret_cast<void*>(0x1);  // NCCL may preset this; it must be overwritten
  void* data = buf.data();
  size_t size = buf.size();
  ASSERT_EQ(api::irecv(link_.recvComm, 1, &data, &size, nullptr, &extra), ncclSuccess);
  EXPECT_EQ(extra, nullptr);
  // Complete them so teardown is clean (sent from another buffer: the
  // receives write into `buf`).
  std::vector<uint8_t> out(8, 1);
  for (size_t i = 0; i < reqs.size(); ++i) {
    void* s = postSend(link_.sendComm, out.data(), 8);
    ASSERT_EQ(waitRequest(s), ncclSuccess);
    ASSERT_EQ(waitRequest(reqs[i]), ncclSuccess);
  }
}

TEST_F(TransferTest, RegisteredBuffersAreUsableAndChecked) {
  std::vector<uint8_t> out(1 << 20), in(1 << 20);
  fillPattern(out.data(), out.size(), 5);
  void* smr = nullptr;
  void* rmr = nullptr;
  ASSERT_EQ(api::regMr(link_.sendComm, out.data(), out.size(), NCCL_PTR_HOST, &smr), ncclSuccess);
  ASSERT_EQ(api::regMr(link_.recvComm, in.data(), in.size(), NCCL_PTR_HOST, &rmr), ncclSuccess);
  void* rreq = postRecv(link_.recvComm, in.data(), in.size(), rmr);
  void* sreq = postSend(link_.sendComm, out.data(), out.size(), smr);
  ASSERT_EQ(waitRequest(sreq), ncclSuccess);
  ASSERT_EQ(waitRequest(rreq), ncclSuccess);
  EXPECT_EQ(verifyPattern(in.data(), in.size(), 5), -1);
  // A buffer outside its registration is rejected, not sent.
  void* bad = nullptr;
  EXPECT_EQ(api::isend(link_.sendComm, out.data() + 1, out.size(), smr, &bad), ncclInvalidArgument);
  EXPECT_EQ(bad, nullptr);
  EXPECT_EQ(api::deregMr(link_.sendComm, smr), ncclSuccess);
  EXPECT_EQ(api::deregMr(link_.recvComm, rmr), ncclSuccess);
}

TEST_F(TransferTest, FlushOfHostMemoryCompletesAtOnce) {
  void* req = reinterpret_cast<void*>(0x1);
  int size = 8;
  void* data = nullptr;
  EXPECT_EQ(api::iflush(link_.recvComm, 1, &data, &size, nullptr, &req), ncclSuccess);
  EXPECT_EQ(req, nullptr);
}

TEST(Listener, OneListenCommAcceptsSeveralPeers) {
  void* listenComm = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ASSERT_EQ(api::listen(0, handle, &listenComm), ncclSuccess);
  constexpr int kPeers = 3;
  std::vector<std::vector<char>> handles(kPeers,
                                         std::vector<char>(handle, handle + sizeof(handle)));
  std::vector<void*> sends(kPeers, nullptr), recvs;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while ((recvs.size() < kPeers || std::count(sends.begin(), sends.end(), nullptr) > 0) &&
         std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < kPeers; ++i) {
      if (sends[i] == nullptr) {
        ASSERT_EQ(api::connect(nullptr, 0, handles[i].data(), &sends[i]), ncclSuccess);
      }
    }
    void* recv = nullptr;
    ASSERT_EQ(api::accept(listenComm, &recv), ncclSuccess);
    if (recv != nullptr) recvs.push_back(recv);
  }
  ASSERT_EQ(recvs.size(), static_cast<size_t>(kPeers));
  // Each accepted comm is paired with exactly one sender: one byte each.
  for (int i = 0; i < kPeers; ++i) {
    uint8_t b = static_cast<uint8_t>(i);
    ASSERT_EQ(waitRequest(postSend(sends[i], &b, 1)), ncclSuccess);
  }
  std::vector<int> seen;
  for (void* r : recvs) {
    uint8_t b = 0xFF;
    ASSERT_EQ(waitRequest(postRecv(r, &b, 1)), ncclSuccess);
    seen.push_back(b);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
  for (void* s : sends) EXPECT_EQ(api::closeSend(s), ncclSuccess);
  for (void* r : recvs) EXPECT_EQ(api::closeRecv(r), ncclSuccess);
  EXPECT_EQ(api::closeListen(listenComm), ncclSuccess);
}

}  // namespace
}  // namespace bagua::net::testing
