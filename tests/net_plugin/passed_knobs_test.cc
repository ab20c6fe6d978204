// Knobs are passed down, not read from a global: connections made in one
// process through the transport layer's own objects (listener, connector,
// comms) with different Params each keep their own stream count and chunk
// size, and both carry data correctly at the same time.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "net_plugin/base/cpu_budget.h"
#include "net_plugin/base/devices.h"
#include "net_plugin/base/params.h"
#include "net_plugin/engine/engine.h"
#include "net_plugin/transport/connector.h"
#include "net_plugin/transport/listener.h"
#include "tests/net_plugin/support/patterns.h"

namespace bagua::net {
namespace {

using Clock = std::chrono::steady_clock;

// A connection to ourselves made with `p`, on the engine `engines` gives.
struct Connection {
  std::unique_ptr<ListenComm> listener;
  std::unique_ptr<SendComm> send;
  std::unique_ptr<RecvComm> recv;

  ~Connection() {
    // A comm whose worker did not let go in time must be leaked (comm.h).
    if (send && !send->close()) (void)send.release();
    if (recv && !recv->close()) (void)recv.release();
  }
};

void connect(const NetDevice& device, const Params& p, const EngineSource& engines, Connection* c) {
  c->listener = std::make_unique<ListenComm>(device, streamsToOpen(p), p, engines);
  Connector connector(c->listener->handle(), streamsToOpen(p), p.streams,
                      CallerStreamUse{.open = p.callerStream == 1, .quietBytes = SIZE_MAX}, nullptr,
                      p, engines);
  Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  while ((!c->send || !c->recv) && Clock::now() < deadline) {
    if (!c->send) c->send = connector.progress();
    if (!c->recv) c->recv = c->listener->accept();
  }
  ASSERT_TRUE(c->send && c->recv) << "no connection within 10 s";
}

// Polls test() until `req` finishes; false on failure or after 30 s.
bool wait(Comm& comm, Request* req, int* size) {
  Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
  int done = 0;
  while (Clock::now() < deadline) {
    if (comm.test(req, &done, size) != Status::kOk) return false;
    if (done) return true;
  }
  return false;
}

// Polls a send and a receive in turn until both finish, as NCCL's proxy does
// (a caller stream moves only while its receiver tests); false on failure or
// after 30 s.
bool waitBoth(Comm& sendComm, Request* send, Comm& recvComm, Request* recv, int* size) {
  Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
  int sendDone = 0;
  int recvDone = 0;
  while ((sendDone == 0 || recvDone == 0) && Clock::now() < deadline) {
    if (sendDone == 0 && sendComm.test(send, &sendDone, nullptr) != Status::kOk) return false;
    if (recvDone == 0 && recvComm.test(recv, &recvDone, size) != Status::kOk) return false;
  }
  return sendDone != 0 && recvDone != 0;
}

TEST(PassedKnobs, TwoConnectionsOfOneProcessKeepTheirOwnKnobs) {
  std::signal(SIGPIPE, SIG_IGN);  // a peer closing mid-send is an error code, not a kill
  std::vector<NetDevice> devices = discoverDevices(params());
  ASSERT_FALSE(devices.empty()) << "run with NCCL_SOCKET_IFNAME=lo";
  std::string note;
  std::shared_ptr<Engine> engine = createEngine(EngineConfig{EngineKind::kEpoll, 2, 0, {}}, &note);
  EngineSource engines = [engine] { return engine; };

  Params narrow;
  narrow.streams = 2;
  narrow.chunkBytes = 64 << 10;
  narrow.adaptiveStreams = 0;
  Params wide;
  wide.streams = 5;
  wide.chunkBytes = 1 << 20;
  wide.adaptiveStreams = 0;
  Connection a;
  Connection b;
  connect(devices[0], narrow, engines, &a);
  connect(devices[0], wide, engines, &b);
  ASSERT_FALSE(HasFailure());

  EXPECT_EQ(a.send->streamCount(), 2u);
  EXPECT_EQ(a.recv->streamCount(), 2u);
  EXPECT_EQ(a.send->chunkBytes(), size_t{64} << 10);
  EXPECT_EQ(b.send->streamCount(), 5u);
  EXPECT_EQ(b.recv->streamCount(), 5u);
  EXPECT_EQ(b.send->chunkBytes(), size_t{1} << 20);

  // Both at once: 3 MiB is 48 chunks on one and 3 on the other.
  constexpr size_t kSize = 3 << 20;
  Connection* both[] = {&a, &b};
  std::vector<uint8_t> out[2], in[2];
  Request* sends[2] = {};
  Request* recvs[2] = {};
  for (int i = 0; i < 2; ++i) {
    out[i].resize(kSize);
    in[i].assign(kSize, 0);
    testing::fillPattern(out[i].data(), kSize, static_cast<uint64_t>(i) + 1);
    ASSERT_EQ(both[i]->recv->irecv(in[i].data(), kSize, &recvs[i]), Status::kOk);
    ASSERT_EQ(both[i]->send->isend(out[i].data(), kSize, &sends[i]), Status::kOk);
    ASSERT_NE(sends[i], nullptr);
    ASSERT_NE(recvs[i], nullptr);
  }
  for (int i = 0; i < 2; ++i) {
    int size = 0;
    EXPECT_TRUE(wait(*both[i]->send, sends[i], nullptr)) << "send " << i;
    EXPECT_TRUE(wait(*both[i]->recv, recvs[i], &size)) << "receive " << i;
    EXPECT_EQ(size, static_cast<int>(kSize));
    EXPECT_EQ(testing::verifyPattern(in[i].data(), kSize, static_cast<uint64_t>(i) + 1), -1);
  }
}

// With a caller stream, every small message goes on it (isend sends it, the
// receiver reads it in test()) and large ones go on the workers' streams;
// without one, it carries nothing. All arrive intact either way.
TEST(PassedKnobs, TheCallerStreamCarriesSmallMessagesOnly) {
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<NetDevice> devices = discoverDevices(params());
  ASSERT_FALSE(devices.empty()) << "run with NCCL_SOCKET_IFNAME=lo";
  std::string note;
  std::shared_ptr<Engine> engine = createEngine(EngineConfig{EngineKind::kEpoll, 2, 0, {}}, &note);
  EngineSource engines = [engine] { return engine; };
  for (int caller : {1, 0}) {
    Params p;
    p.streams = 2;
    p.callerStream = caller;
    Connection c;
    connect(devices[0], p, engines, &c);
    ASSERT_FALSE(HasFailure());
    EXPECT_EQ(c.send->hasCallerStream(), caller == 1);
    EXPECT_EQ(c.recv->hasCallerStream(), caller == 1);
    EXPECT_EQ(c.send->streamCount(), 2u) << "the caller stream is not a data stream";

    constexpr int kSmall = 40;
    // What a comm makes of the knob's auto outside the process's state: 64K.
    const size_t split = minSplitBytesFor(p.minSplitBytes, 0);
    for (size_t size : {size_t{0}, size_t{4096}, split, split + 1, size_t{3} << 20}) {
      int rounds = size <= split ? kSmall : 2;
      for (int i = 0; i < rounds; ++i) {
        std::vector<uint8_t> out(size), in(size + 8);
        testing::fillPattern(out.data(), size, size + static_cast<uint64_t>(i));
        Request* recv = nullptr;
        Request* send = nullptr;
        ASSERT_EQ(c.recv->irecv(in.data(), in.size(), &recv), Status::kOk);
        ASSERT_EQ(c.send->isend(out.data(), size, &send), Status::kOk);
        ASSERT_TRUE(send != nullptr && recv != nullptr);
        int got = -1;
        ASSERT_TRUE(waitBoth(*c.send, send, *c.recv, recv, &got))
            << "size " << size << " failed or did not arrive in 30 s";
        EXPECT_EQ(got, static_cast<int>(size));
        EXPECT_EQ(testing::verifyPattern(in.data(), size, size + static_cast<uint64_t>(i)), -1);
      }
    }
    // 0 B, 4 KiB and minSplitBytes, kSmall each; larger ones never.
    EXPECT_EQ(c.send->callerStreamMessages(), caller == 1 ? 3u * kSmall : 0u);
  }
}

}  // namespace
}  // namespace bagua::net
