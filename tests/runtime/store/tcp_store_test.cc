// TcpStore and TcpStoreServer beyond the common Store behaviour: a server
// that starts after its clients, connection errors naming the address,
// malformed bytes and vanished clients costing only their own connection,
// and a server that goes away giving CommError rather than a hang.
#include "runtime/store/tcp_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <memory>
#include <ostream>
#include <thread>

#include "posix/child_process.h"
#include "runtime/common/error.h"
#include "runtime/store/store_protocol.h"
#include "runtime/store/tcp_store_server.h"
#include "tests/runtime/store/store_test_support.h"

namespace bagua {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace proto = store_protocol;
using store_testing::bytes;
using store_testing::closedByPeer;
using store_testing::connectRaw;
using store_testing::eventually;
using store_testing::secondsSince;
using store_testing::sendRaw;

TcpStoreOptions quick() {
  TcpStoreOptions o;
  o.connectTimeout = 5s;
  o.requestTimeout = 5s;
  return o;
}

std::vector<uint8_t> frameOf(proto::Op op, const std::string& key, uint64_t timeoutMs = 0) {
  proto::Request r;
  r.op = op;
  r.keys = {key};
  r.timeoutMs = timeoutMs;
  return proto::encodeRequest(r);
}

// The server still answers a fresh, well-behaved client.
void expectServing(int port) {
  TcpStore s("127.0.0.1", port, quick());
  s.set("still-alive", bytes("yes"));
  EXPECT_EQ(s.get("still-alive", 1s), bytes("yes"));
}

TEST(TcpStore, ClientRetriesUntilTheServerStarts) {
  int port = store_testing::pickFreePort();
  ASSERT_GT(port, 0);
  std::unique_ptr<TcpStoreServer> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(300ms);
    server = std::make_unique<TcpStoreServer>(port, "127.0.0.1");
  });
  auto start = Clock::now();
  TcpStore client("127.0.0.1", port, quick());
  starter.join();
  EXPECT_GE(secondsSince(start), 0.25);
  client.set("k", bytes("v"));
  EXPECT_EQ(client.get("k", 1s), bytes("v"));
}

TEST(TcpStore, ConnectTimeoutNamesTheAddressAndTheCause) {
  int port = store_testing::pickFreePort();
  TcpStoreOptions o;
  o.connectTimeout = 200ms;
  auto start = Clock::now();
  try {
    TcpStore client("127.0.0.1", port, o);
    FAIL() << "connected to a port nobody listens on";
  } catch (const TimeoutError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << what;
    EXPECT_NE(what.find("refused"), std::string::npos) << what;
  }
  EXPECT_LT(secondsSince(start), 5.0);
}

TEST(TcpStore, BadPortAndBusyPortAreReported) {
  EXPECT_THROW(TcpStore("127.0.0.1", 0), InvalidArgument);
  EXPECT_THROW(TcpStoreServer(70000, "127.0.0.1"), InvalidArgument);
  TcpStoreServer first(0, "127.0.0.1");
  try {
    TcpStoreServer second(first.port(), "127.0.0.1");
    FAIL() << "two servers listen on one port";
  } catch (const CommError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("127.0.0.1:" + std::to_string(first.port())), std::string::npos) << what;
    EXPECT_NE(what.find("bind"), std::string::npos) << what;
  }
}

TEST(TcpStore, LargeValuesRoundTripAndOversizeIsRefusedLocally) {
  TcpStoreServer server(0, "127.0.0.1");
  TcpStore client("127.0.0.1", server.port(), quick());
  std::vector<uint8_t> big(8 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = uint8_t(i * 7);
  client.set("big", big);
  EXPECT_EQ(client.get("big", 1s), big);
  std::vector<uint8_t> tooBig(proto::kMaxPayloadBytes);
  EXPECT_THROW(client.set("huge", tooBig), InvalidArgument);
  EXPECT_EQ(client.get("big", 1s).size(), big.size());  // the client still works
}

struct Malformed {
  std::string name;
  std::vector<uint8_t> bytes;
};

// gtest prints the case by name instead of dumping the struct's bytes.
void PrintTo(const Malformed& m, std::ostream* os) { *os << m.name; }

class TcpStoreMalformed : public ::testing::TestWithParam<Malformed> {};

TEST_P(TcpStoreMalformed, ClosesThatConnectionAndKeepsServing) {
  TcpStoreServer server(0, "127.0.0.1");
  TcpStore bystander("127.0.0.1", server.port(), quick());
  bystander.set("before", bytes("1"));
  int fd = connectRaw(server.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(sendRaw(fd, GetParam().bytes));
  EXPECT_TRUE(closedByPeer(fd, 2s));
  ::close(fd);
  EXPECT_EQ(server.stats().malformed, 1);
  EXPECT_EQ(bystander.get("before", 1s), bytes("1"));  // other connections unaffected
  expectServing(server.port());
}

std::vector<Malformed> malformedFrames() {
  auto set = frameOf(proto::Op::kSet, "key");
  std::vector<Malformed> out;
  out.push_back({"Http", bytes("GET / HTTP/1.1\r\nHost: x\r\n\r\n")});
  auto badMagic = set;
  badMagic[3] ^= 0x40;
  out.push_back({"BadMagic", badMagic});
  auto oversize = set;
  oversize[7] = 0x7f;  // length ~2 GiB
  out.push_back({"OversizeLength", oversize});
  auto unknownOp = set;
  unknownOp[proto::kHeaderBytes] = 77;
  out.push_back({"UnknownOp", unknownOp});
  auto keyPastFrame = set;
  keyPastFrame[proto::kHeaderBytes + 1] = 200;  // key length beyond the payload
  out.push_back({"KeyLengthPastFrame", keyPastFrame});
  auto trailing = set;
  trailing.push_back(0);
  trailing[4] += 1;  // frame length covers the extra byte
  out.push_back({"TrailingByte", trailing});
  out.push_back({"TimeoutTooLong", frameOf(proto::Op::kGet, "k", proto::kMaxWaitMs + 1)});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Frames, TcpStoreMalformed, ::testing::ValuesIn(malformedFrames()),
                         [](const auto& info) { return info.param.name; });

TEST(TcpStore, ClientVanishingMidFrameOrMidWaitCostsOnlyItsConnection) {
  TcpStoreServer server(0, "127.0.0.1");
  TcpStore client("127.0.0.1", server.port(), quick());
  // The server registers a connection once its accept handler ran.
  ASSERT_TRUE(eventually([&] { return server.stats().connections == 1; }, 2s));
  // Half a frame, then gone.
  int fd = connectRaw(server.port());
  ASSERT_GE(fd, 0);
  auto frame = frameOf(proto::Op::kSet, "half");
  frame.erase(frame.end() - 2, frame.end());
  ASSERT_TRUE(sendRaw(fd, frame));
  ::close(fd);
  // A parked get, then gone: its waiter goes at once, not at its timeout.
  fd = connectRaw(server.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(sendRaw(fd, frameOf(proto::Op::kGet, "never", 60000)));
  EXPECT_TRUE(eventually([&] { return server.stats().waiters == 1; }, 2s));
  ::close(fd);
  EXPECT_TRUE(eventually([&] { return server.stats().waiters == 0; }, 2s));
  EXPECT_TRUE(eventually([&] { return server.stats().connections == 1; }, 2s));
  EXPECT_THROW(client.get("half", 0ms), TimeoutError);  // the half frame was never applied
  expectServing(server.port());
}

TEST(TcpStore, SendingWhileAGetIsParkedClosesTheConnection) {
  TcpStoreServer server(0, "127.0.0.1");
  int fd = connectRaw(server.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(sendRaw(fd, frameOf(proto::Op::kGet, "never", 60000)));
  ASSERT_TRUE(eventually([&] { return server.stats().waiters == 1; }, 2s));
  ASSERT_TRUE(sendRaw(fd, frameOf(proto::Op::kSet, "sneaky")));
  EXPECT_TRUE(closedByPeer(fd, 2s));
  ::close(fd);
  EXPECT_TRUE(eventually([&] { return server.stats().waiters == 0; }, 2s));
  expectServing(server.port());
}

TEST(TcpStore, ServerGoingAwayGivesCommErrorNotAHang) {
  auto server = std::make_unique<TcpStoreServer>(0, "127.0.0.1");
  int port = server->port();
  TcpStore client("127.0.0.1", port, quick());
  TcpStore parked("127.0.0.1", port, quick());
  std::string parkedError;
  std::thread getter([&] {
    try {
      parked.get("never", 30s);
    } catch (const CommError& e) {
      parkedError = e.what();
    }
  });
  ASSERT_TRUE(eventually([&] { return server->stats().waiters == 1; }, 2s));
  auto start = Clock::now();
  server.reset();
  EXPECT_LT(secondsSince(start), 3.0);
  getter.join();
  EXPECT_LT(secondsSince(start), 4.0);
  EXPECT_NE(parkedError.find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << parkedError;
  try {
    client.set("k", bytes("v"));
    FAIL() << "set succeeded without a server";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("set('k')"), std::string::npos) << e.what();
  }
  EXPECT_LT(secondsSince(start), 6.0);
}

// A get whose timeout expires just as its key is set must be answered once:
// a second answer would be read as the reply to the next request.
TEST(TcpStore, TimeoutRacingASetIsAnsweredOnce) {
  TcpStoreServer server(0, "127.0.0.1");
  TcpStore getter("127.0.0.1", server.port(), quick());
  TcpStore setter("127.0.0.1", server.port(), quick());
  for (int i = 0; i < 200; ++i) {
    std::string key = "race/" + std::to_string(i);
    std::thread t([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(900 + 10 * (i % 20)));
      setter.set(key, bytes("x"));
    });
    try {
      EXPECT_EQ(getter.get(key, 1ms), bytes("x"));
    } catch (const TimeoutError&) {
    }
    t.join();
    getter.set("probe", bytes(std::to_string(i)));
    ASSERT_EQ(getter.get("probe", 1s), bytes(std::to_string(i))) << "iteration " << i;
  }
}

// A forked client killed while its get is parked: the server drops the
// waiter and the connection, and serves on.
TEST(TcpStoreProcess, ClientKilledMidRequestDoesNotDisturbTheServer) {
  TcpStoreServer server(0, "127.0.0.1");
  posix::ChildProcess child([&] {
    TcpStore s("127.0.0.1", server.port(), quick());
    s.get("never", 60s);
    return 1;
  });
  ASSERT_TRUE(eventually([&] { return server.stats().waiters == 1; }, 5s));
  child.kill(SIGKILL);
  EXPECT_EQ(child.wait(5s), 128 + SIGKILL);
  EXPECT_TRUE(eventually([&] { return server.stats().waiters == 0; }, 2s));
  EXPECT_TRUE(eventually([&] { return server.stats().connections == 0; }, 2s));
  expectServing(server.port());
}

}  // namespace
}  // namespace bagua
