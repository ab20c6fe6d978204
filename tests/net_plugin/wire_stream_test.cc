// The receive side against a hand-written sender: every chunk boundary of
// the byte stream may fall anywhere in a receive. A raw socket presents a
// valid hello (one stream) and then writes chunk headers and payloads,
// first all in one write, then dribbled a few bytes at a time, so headers
// arrive whole, split, and partly together with the previous payload (the
// receiver's look-ahead read); last all at once before any receive is
// posted, so several chunks wait in a parked stream's stash. The same on a
// caller stream (read inside irecv/test, not by a worker), a caller
// stream cut inside a chunk, a message in two chunks on it, and a sender
// dead between two chunks.
// tests/meson.build runs it on every engine.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

#include "net_plugin/api/api.h"
#include "net_plugin/transport/wire.h"
#include "tests/net_plugin/support/harness.h"

namespace bagua::net::testing {
namespace {

// One message as the hand-written sender cuts it.
struct Message {
  uint64_t size;
  std::vector<uint32_t> chunkLens;  // in wire order; they cover the message
};

void appendBytes(std::vector<uint8_t>* out, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  out->insert(out->end(), p, p + n);
}

// The wire bytes of `messages`, numbered from `firstSeq`, each message's
// payload the pattern of its sequence number.
std::vector<uint8_t> wireBytes(const std::vector<Message>& messages, uint64_t firstSeq) {
  std::vector<uint8_t> out;
  uint64_t seq = firstSeq;
  for (const Message& m : messages) {
    std::vector<uint8_t> payload(m.size);
    fillPattern(payload.data(), payload.size(), seq);
    uint64_t offset = 0;
    for (uint32_t len : m.chunkLens) {
      ChunkHeader header = makeChunkHeader(seq, m.size, offset, len);
      appendBytes(&out, &header, sizeof(header));
      appendBytes(&out, payload.data() + offset, len);
      offset += len;
    }
    ++seq;
  }
  return out;
}

// Writes `bytes` in pieces of `piece` bytes (0: one write), pausing after each.
void writeInPieces(int fd, const std::vector<uint8_t>& bytes, size_t piece) {
  size_t step = piece == 0 ? bytes.size() : piece;
  for (size_t at = 0; at < bytes.size(); at += step) {
    size_t n = std::min(step, bytes.size() - at);
    ASSERT_EQ(::send(fd, bytes.data() + at, n, MSG_NOSIGNAL), static_cast<ssize_t>(n));
    if (piece != 0) std::this_thread::sleep_for(200us);
  }
}

// A hand-written sender of `nStreams` raw streams (hellos sent, flags as
// given); returns the listener, the accepted receive comm and the fds.
void rawSender(int nStreams, uint16_t flags, void** listenComm, void** recvComm,
               std::vector<int>* fds) {
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ASSERT_EQ(api::listen(0, handle, listenComm), ncclSuccess);
  ListenHandle h;
  std::memcpy(&h, handle, sizeof(h));
  for (int i = 0; i < nStreams; ++i) {
    int fd = rawConnect(handle);
    fds->push_back(fd);
    Hello hello = makeHello(static_cast<uint16_t>(i), static_cast<uint16_t>(nStreams), h.token,
                            /*connId=*/77, flags);
    ASSERT_EQ(::send(fd, &hello, sizeof(hello), MSG_NOSIGNAL),
              static_cast<ssize_t>(sizeof(hello)));
  }
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (*recvComm == nullptr && std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(api::accept(*listenComm, recvComm), ncclSuccess);
  }
  ASSERT_NE(*recvComm, nullptr) << "a sender with the right token is accepted";
}

// Polls test() on `request` for `period`: it must neither finish nor fail.
void expectPendingFor(void* request, std::chrono::milliseconds period) {
  auto until = std::chrono::steady_clock::now() + period;
  while (std::chrono::steady_clock::now() < until) {
    int done = 0;
    ASSERT_EQ(api::test(request, &done, nullptr), ncclSuccess);
    ASSERT_EQ(done, 0);
  }
}

// The byte stream on `fd` is either the sender's only stream (read by a
// worker) or its caller stream (read inside irecv/test).
void checkBoundaries(bool callerStream) {
  void* listenComm = nullptr;
  void* recvComm = nullptr;
  std::vector<int> fds;
  rawSender(callerStream ? 2 : 1, callerStream ? kHelloCallerStream : 0, &listenComm, &recvComm,
            &fds);
  ASSERT_NE(recvComm, nullptr);
  int fd = fds.back();

  // Chunks of odd lengths, a one-byte chunk, an empty message, and chunks
  // out of offset order (the receiver places by offset).
  const std::vector<Message> messages = {
      {6001, {1000, 1, 5000}}, {0, {0}}, {100, {100}}, {70000, {40000, 30000}}, {3, {1, 1, 1}}};
  struct Pass {
    size_t piece;
    const char* what;
    bool postFirst = true;  // false: the bytes wait in the stream (parked) until posted
  };
  uint64_t seq = 0;
  for (Pass pass : {Pass{0, "one write"}, Pass{7, "7-byte pieces"}, Pass{33, "33-byte pieces"},
                    Pass{4099, "4099-byte pieces"},
                    Pass{0, "one write before the receives are posted", false}}) {
    std::vector<std::vector<uint8_t>> in;
    std::vector<void*> requests;
    for (const Message& m : messages) in.emplace_back(m.size + 16);
    if (!pass.postFirst) {
      writeInPieces(fd, wireBytes(messages, seq), pass.piece);
      std::this_thread::sleep_for(50ms);  // several chunks wait behind the parked stream
    }
    for (size_t i = 0; i < messages.size(); ++i) {
      requests.push_back(postRecv(recvComm, in[i].data(), in[i].size()));
    }
    if (pass.postFirst) writeInPieces(fd, wireBytes(messages, seq), pass.piece);
    for (size_t i = 0; i < messages.size(); ++i) {
      int size = -1;
      ASSERT_EQ(waitRequest(requests[i], &size, 20s), ncclSuccess)
          << pass.what << ", message " << i;
      EXPECT_EQ(size, static_cast<int>(messages[i].size)) << pass.what << ", message " << i;
      EXPECT_EQ(verifyPattern(in[i].data(), messages[i].size, seq + i), -1)
          << pass.what << ", message " << i;
    }
    seq += messages.size();
  }
  for (int f : fds) ::close(f);
  EXPECT_EQ(api::closeRecv(recvComm), ncclSuccess);
  EXPECT_EQ(api::closeListen(listenComm), ncclSuccess);
}

TEST(WireStream, ChunkBoundariesAnywhereInTheByteStreamArePlacedRight) {
  checkBoundaries(/*callerStream=*/false);
}

TEST(WireStream, ChunkBoundariesAnywhereOnTheCallerStreamArePlacedRight) {
  checkBoundaries(/*callerStream=*/true);
}

// Streams of one connection that disagree on the caller-stream flag are
// refused (the group never becomes a comm) and the refusal is logged.
TEST(WireStream, StreamsThatDisagreeOnTheCallerStreamAreRefused) {
  clearCapturedLog();
  void* listenComm = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ASSERT_EQ(api::listen(0, handle, &listenComm), ncclSuccess);
  ListenHandle h;
  std::memcpy(&h, handle, sizeof(h));
  std::vector<int> fds;
  for (uint16_t i = 0; i < 2; ++i) {
    fds.push_back(rawConnect(handle));
    Hello hello = makeHello(i, 2, h.token, /*connId=*/78, i == 0 ? kHelloCallerStream : 0);
    ASSERT_EQ(::send(fds.back(), &hello, sizeof(hello), MSG_NOSIGNAL),
              static_cast<ssize_t>(sizeof(hello)));
  }
  void* recvComm = nullptr;
  auto deadline = std::chrono::steady_clock::now() + 300ms;
  while (recvComm == nullptr && std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(api::accept(listenComm, &recvComm), ncclSuccess);
  }
  EXPECT_EQ(recvComm, nullptr) << "a connection whose streams disagree must not become a comm";
  EXPECT_TRUE(logContains("disagree on their count")) << "the refusal is named";
  for (int f : fds) ::close(f);
  EXPECT_EQ(api::closeListen(listenComm), ncclSuccess);
}

// A sender that dies in the middle of a chunk on its caller stream: the
// receive fails with an error naming it, found by test() alone.
TEST(WireStream, ACallerStreamCutInAChunkFailsTheReceive) {
  clearCapturedLog();
  void* listenComm = nullptr;
  void* recvComm = nullptr;
  std::vector<int> fds;
  rawSender(2, kHelloCallerStream, &listenComm, &recvComm, &fds);
  ASSERT_NE(recvComm, nullptr);
  std::vector<uint8_t> in(1000);
  void* request = postRecv(recvComm, in.data(), in.size());
  ChunkHeader header = makeChunkHeader(0, 1000, 0, 1000);
  ASSERT_EQ(::send(fds[1], &header, sizeof(header), MSG_NOSIGNAL),
            static_cast<ssize_t>(sizeof(header)));
  ASSERT_EQ(::send(fds[1], in.data(), 10, MSG_NOSIGNAL), 10);
  for (int f : fds) ::close(f);
  EXPECT_EQ(waitForError(request, 10s), ncclRemoteError);
  EXPECT_TRUE(logContains("in the middle of a chunk"));
  EXPECT_EQ(api::closeRecv(recvComm), ncclSuccess);
  EXPECT_EQ(api::closeListen(listenComm), ncclSuccess);
}

// A message in two chunks on the caller stream, the second written only
// after the first has arrived: test() keeps reading the caller stream though
// part of the message is in (our senders put one chunk there per message;
// the receiver must not depend on it).
TEST(WireStream, AMessageInChunksOnTheCallerStreamArrivesWhole) {
  void* listenComm = nullptr;
  void* recvComm = nullptr;
  std::vector<int> fds;
  rawSender(2, kHelloCallerStream, &listenComm, &recvComm, &fds);
  ASSERT_NE(recvComm, nullptr);
  std::vector<uint8_t> in(2000);
  void* request = postRecv(recvComm, in.data(), in.size());
  std::vector<uint8_t> bytes = wireBytes({Message{2000, {1000, 1000}}}, 0);
  size_t firstChunk = sizeof(ChunkHeader) + 1000;
  writeInPieces(fds[1], std::vector<uint8_t>(bytes.begin(), bytes.begin() + firstChunk), 0);
  expectPendingFor(request, 200ms);
  ASSERT_FALSE(HasFailure());
  writeInPieces(fds[1], std::vector<uint8_t>(bytes.begin() + firstChunk, bytes.end()), 0);
  int size = -1;
  EXPECT_EQ(waitRequest(request, &size, 10s), ncclSuccess);
  EXPECT_EQ(size, 2000);
  EXPECT_EQ(verifyPattern(in.data(), 2000, 0), -1);
  for (int f : fds) ::close(f);
  EXPECT_EQ(api::closeRecv(recvComm), ncclSuccess);
  EXPECT_EQ(api::closeListen(listenComm), ncclSuccess);
}

// A sender that dies between two chunks of a message after its first chunk
// arrived on a data stream: the caller stream's EOF, the last of the three,
// is read only in the caller loop, which test() must then still turn though
// the message (partly arrived) cannot travel on the caller stream.
TEST(WireStream, ASenderDeadBetweenChunksFailsAPartlyReceivedMessage) {
  clearCapturedLog();
  void* listenComm = nullptr;
  void* recvComm = nullptr;
  std::vector<int> fds;
  rawSender(3, kHelloCallerStream, &listenComm, &recvComm, &fds);  // 2 data streams + caller
  ASSERT_NE(recvComm, nullptr);
  std::vector<uint8_t> in(2000);
  void* request = postRecv(recvComm, in.data(), in.size());
  std::vector<uint8_t> first = wireBytes({Message{2000, {1000}}}, 0);
  first.resize(sizeof(ChunkHeader) + 1000);  // the first half only
  writeInPieces(fds[0], first, 0);
  // Until the first half has arrived, the receive neither finishes nor fails.
  expectPendingFor(request, 200ms);
  ASSERT_FALSE(HasFailure());
  for (int f : fds) ::close(f);
  EXPECT_EQ(waitForError(request, 10s), ncclRemoteError);
  EXPECT_TRUE(logContains("the peer closed the connection"));
  EXPECT_EQ(api::closeRecv(recvComm), ncclSuccess);
  EXPECT_EQ(api::closeListen(listenComm), ncclSuccess);
}

// A stream parked on the header of a message not posted yet has no read
// pending, so it never reads its EOF. A sender that goes away with an earlier
// message still to come (its other stream ending between chunks) must fail
// that earlier receive, not leave it pending for ever.
TEST(WireStream, ASenderGoneWhileAStreamWaitsForALaterMessageFailsTheReceive) {
  clearCapturedLog();
  void* listenComm = nullptr;
  void* recvComm = nullptr;
  std::vector<int> fds;
  rawSender(2, 0, &listenComm, &recvComm, &fds);
  ASSERT_NE(recvComm, nullptr);
  std::vector<uint8_t> in(64);
  void* first = postRecv(recvComm, in.data(), in.size());  // message 0: never sent
  // Message 1 on stream 1 (a caller stream's small message overtakes a
  // queued one so): stream 1 parks on it.
  writeInPieces(fds[1], wireBytes({Message{8, {8}}}, 1), 0);
  expectPendingFor(first, 200ms);
  ASSERT_FALSE(HasFailure());
  for (int f : fds) ::close(f);  // the sender's process exits
  EXPECT_EQ(waitForError(first, 10s), ncclRemoteError);
  EXPECT_TRUE(logContains("before a posted receive's message arrived"));
  EXPECT_EQ(api::closeRecv(recvComm), ncclSuccess);
  EXPECT_EQ(api::closeListen(listenComm), ncclSuccess);
}

// Receives collected out of order: while message 0 is still arriving, 63
// later ones complete and are collected. The 64th would take message 0's
// slot: irecv() asks the caller to try later (a NULL request) until message
// 0 is collected, and message 0 then arrives whole (its slot was once
// overwritten, and its next chunk failed the comm as a protocol error).
TEST(WireStream, ReceivesCollectedOutOfOrderNeverShareASlot) {
  clearCapturedLog();
  void* listenComm = nullptr;
  void* recvComm = nullptr;
  std::vector<int> fds;
  rawSender(2, 0, &listenComm, &recvComm, &fds);
  ASSERT_NE(recvComm, nullptr);
  std::vector<uint8_t> big(2000);
  void* first = postRecv(recvComm, big.data(), big.size());
  std::vector<uint8_t> message0 = wireBytes({Message{2000, {1000, 1000}}}, 0);
  size_t half = sizeof(ChunkHeader) + 1000;
  writeInPieces(fds[0], std::vector<uint8_t>(message0.begin(), message0.begin() + half), 0);
  expectPendingFor(first, 100ms);
  std::vector<uint8_t> small(8);
  for (uint64_t seq = 1; seq < 64; ++seq) {
    void* request = postRecv(recvComm, small.data(), small.size());
    writeInPieces(fds[1], wireBytes({Message{8, {8}}}, seq), 0);
    ASSERT_EQ(waitRequest(request, nullptr, 10s), ncclSuccess) << "message " << seq;
    ASSERT_EQ(verifyPattern(small.data(), small.size(), seq), -1) << "message " << seq;
  }
  void* data = small.data();
  size_t size = small.size();
  void* request = nullptr;
  ASSERT_EQ(api::irecv(recvComm, 1, &data, &size, nullptr, &request), ncclSuccess);
  EXPECT_EQ(request, nullptr) << "message 64 would share message 0's slot";
  writeInPieces(fds[0], std::vector<uint8_t>(message0.begin() + half, message0.end()), 0);
  int received = 0;
  ASSERT_EQ(waitRequest(first, &received, 10s), ncclSuccess);
  EXPECT_EQ(received, 2000);
  EXPECT_EQ(verifyPattern(big.data(), big.size(), 0), -1);
  request = postRecv(recvComm, small.data(), small.size());  // the slot is free again
  writeInPieces(fds[1], wireBytes({Message{8, {8}}}, 64), 0);
  EXPECT_EQ(waitRequest(request, nullptr, 10s), ncclSuccess);
  EXPECT_EQ(verifyPattern(small.data(), small.size(), 64), -1);
  EXPECT_FALSE(logContains("protocol error"));
  for (int f : fds) ::close(f);
  EXPECT_EQ(api::closeRecv(recvComm), ncclSuccess);
  EXPECT_EQ(api::closeListen(listenComm), ncclSuccess);
}

}  // namespace
}  // namespace bagua::net::testing
