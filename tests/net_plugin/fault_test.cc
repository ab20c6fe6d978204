// Faults and bad input that need no second process: stray and garbage
// connections, truncation, closing with requests in flight, a listener that
// has gone away, and invalid arguments at every entry point. Runs with short
// timeouts (tests/meson.build sets BAGUA_NET_HANDSHAKE_TIMEOUT_MS and
// BAGUA_NET_CONNECT_TIMEOUT_MS) so each bound is exercised quickly.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "net_plugin/api/api.h"
#include "net_plugin/base/params.h"
#include "net_plugin/transport/wire.h"
#include "tests/net_plugin/support/harness.h"

namespace bagua::net::testing {
namespace {

// Calls accept() until `until` passes; returns any comm it produced.
void* acceptFor(void* listenComm, std::chrono::milliseconds until) {
  auto deadline = std::chrono::steady_clock::now() + until;
  void* recv = nullptr;
  while (recv == nullptr && std::chrono::steady_clock::now() < deadline) {
    EXPECT_EQ(api::accept(listenComm, &recv), ncclSuccess);
  }
  return recv;
}

// Connects a real sender to `handle` and accepts it on `listenComm`.
Link completeLink(void* listenComm, char* handle) {
  Link link;
  link.listenComm = listenComm;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while ((link.sendComm == nullptr || link.recvComm == nullptr) &&
         std::chrono::steady_clock::now() < deadline) {
    if (link.sendComm == nullptr) {
      EXPECT_EQ(api::connect(nullptr, 0, handle, &link.sendComm), ncclSuccess);
    }
    if (link.recvComm == nullptr) {
      EXPECT_EQ(api::accept(listenComm, &link.recvComm), ncclSuccess);
    }
  }
  return link;
}

TEST(Stray, GarbageAndWrongTokenAreClosedAndListenerKeepsWorking) {
  clearCapturedLog();
  void* listenComm = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ASSERT_EQ(api::listen(0, handle, &listenComm), ncclSuccess);

  int garbage = rawConnect(handle);
  const char http[] = "GET / HTTP/1.1\r\nHost: example\r\n\r\n";
  ASSERT_EQ(::write(garbage, http, sizeof(http) - 1), static_cast<ssize_t>(sizeof(http) - 1));
  int wrongToken = rawConnect(handle);
  Hello hello = makeHello(0, 1, /*token=*/12345, /*connId=*/1);
  ASSERT_EQ(::write(wrongToken, &hello, sizeof(hello)), static_cast<ssize_t>(sizeof(hello)));

  EXPECT_EQ(acceptFor(listenComm, 300ms), nullptr) << "strays must not become comms";
  EXPECT_TRUE(logContains("bad magic")) << "garbage is logged";
  EXPECT_TRUE(logContains("did not present this listener's token")) << "wrong token is logged";
  char byte;
  // Closed: EOF, or a reset where the plugin left the garbage unread.
  EXPECT_LE(::read(garbage, &byte, 1), 0) << "the plugin closed the garbage connection";
  EXPECT_LE(::read(wrongToken, &byte, 1), 0) << "the plugin closed the wrong-token connection";
  ::close(garbage);
  ::close(wrongToken);

  Link link = completeLink(listenComm, handle);
  ASSERT_NE(link.recvComm, nullptr) << "the listener still accepts real peers";
  uint8_t out = 42, in = 0;
  ASSERT_EQ(waitRequest(postSend(link.sendComm, &out, 1)), ncclSuccess);
  ASSERT_EQ(waitRequest(postRecv(link.recvComm, &in, 1)), ncclSuccess);
  EXPECT_EQ(in, 42);
  closeLink(link);
}

TEST(Stray, SilentConnectionIsDroppedAfterHandshakeTimeout) {
  clearCapturedLog();
  void* listenComm = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ASSERT_EQ(api::listen(0, handle, &listenComm), ncclSuccess);
  int silent = rawConnect(handle);
  EXPECT_EQ(acceptFor(listenComm, 800ms), nullptr);  // timeout is 300 ms in this suite
  EXPECT_TRUE(logContains("no complete hello"));
  char byte;
  EXPECT_EQ(::read(silent, &byte, 1), 0);
  ::close(silent);
  EXPECT_EQ(api::closeListen(listenComm), ncclSuccess);
}

// A hand-written sender's stream `index` of `count`, hello sent.
int rawStream(const char* handle, uint16_t index, uint16_t count, uint64_t connId) {
  ListenHandle h;
  std::memcpy(&h, handle, sizeof(h));
  int fd = rawConnect(handle);
  Hello hello = makeHello(index, count, h.token, connId);
  EXPECT_EQ(::write(fd, &hello, sizeof(hello)), static_cast<ssize_t>(sizeof(hello)));
  return fd;
}

// A sender's second stream arriving after the handshake timeout (300 ms in
// this suite), within its connect timeout (1 s): the connection forms. The
// first accept() admits the first stream, so the second comes at least
// `handshake + 50 ms` after its connection's wait began, whatever the load;
// the margin left to the connect timeout (650 ms) is what a loaded machine
// may eat (it was 100 ms when a CI run under ASan failed this suite once,
// the likeliest cause; that run's log did not say which case).
TEST(Stray, AStreamLaterThanTheHandshakeTimeoutStillJoinsItsConnection) {
  void* listenComm = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ASSERT_EQ(api::listen(0, handle, &listenComm), ncclSuccess);
  ASSERT_LT(params().handshakeTimeoutMs + 50, params().connectTimeoutMs) << "the suite's timeouts";
  int first = rawStream(handle, 0, 2, /*connId=*/5);
  EXPECT_EQ(acceptFor(listenComm, std::chrono::milliseconds(params().handshakeTimeoutMs + 50)),
            nullptr);
  int second = rawStream(handle, 1, 2, /*connId=*/5);
  void* recvComm = acceptFor(listenComm, 2s);
  EXPECT_NE(recvComm, nullptr) << "the late stream completes its connection";
  if (recvComm != nullptr) {
    EXPECT_EQ(api::closeRecv(recvComm), ncclSuccess);
  }
  ::close(first);
  ::close(second);
  EXPECT_EQ(api::closeListen(listenComm), ncclSuccess);
}

// A sender whose other stream never comes: accept() fails naming what
// arrived, once the sender's connect timeout has passed; it does not wait
// for ever.
TEST(Stray, AConnectionMissingAStreamFailsAccept) {
  clearCapturedLog();
  void* listenComm = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ASSERT_EQ(api::listen(0, handle, &listenComm), ncclSuccess);
  int only = rawStream(handle, 0, 2, /*connId=*/6);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  void* recvComm = nullptr;
  ncclResult_t rc = ncclSuccess;
  while (rc == ncclSuccess && recvComm == nullptr && std::chrono::steady_clock::now() < deadline) {
    rc = api::accept(listenComm, &recvComm);
  }
  EXPECT_EQ(recvComm, nullptr);
  EXPECT_EQ(rc, ncclRemoteError);
  EXPECT_TRUE(logContains("only 1 of 2 streams of the connection from"));
  ::close(only);
  EXPECT_EQ(api::closeListen(listenComm), ncclSuccess);
}

TEST(Truncation, SendLargerThanReceiveFailsNamingBothSizes) {
  clearCapturedLog();
  Link link = connectLink();
  std::vector<uint8_t> out(2000, 1), in(1000);
  void* rreq = postRecv(link.recvComm, in.data(), in.size());
  void* sreq = postSend(link.sendComm, out.data(), out.size());
  EXPECT_EQ(waitForError(rreq, 10s), ncclInvalidUsage);
  EXPECT_TRUE(logContains("sent 2000 bytes but the posted receive holds only 1000 bytes"));
  (void)sreq;  // may or may not finish: the receiver stops reading
  closeLink(link);
}

// A message far larger than the socket buffers, into a small receive: the
// receiver fails, and its sender must fail too (the receiver shuts the
// stream down) instead of waiting until the receiver's comm is closed.
TEST(Truncation, TheSenderOfATruncatedMessageFailsToo) {
  Link link = connectLink();
  std::vector<uint8_t> out(64 << 20, 1), in(1000);
  void* rreq = postRecv(link.recvComm, in.data(), in.size());
  void* sreq = postSend(link.sendComm, out.data(), out.size());
  EXPECT_EQ(waitForError(rreq, 10s), ncclInvalidUsage);
  EXPECT_EQ(waitForError(sreq, 10s), ncclRemoteError) << "the sender is told";
  closeLink(link);
}

TEST(Close, SendCloseWithRequestsInFlightIsPromptAndPeerSeesError) {
  Link link = connectLink();
  std::vector<uint8_t> big(64 << 20, 7);
  // No receive is posted: the data stalls in socket buffers.
  for (int i = 0; i < 4; ++i) postSend(link.sendComm, big.data(), big.size());
  auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(api::closeSend(link.sendComm), ncclSuccess);
  link.sendComm = nullptr;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  std::vector<uint8_t> in(big.size());
  void* rreq = postRecv(link.recvComm, in.data(), in.size());
  ncclResult_t rc = waitForError(rreq, 10s);
  EXPECT_EQ(rc, ncclRemoteError) << "a message cut short by the peer's close must fail";
  closeLink(link);
}

TEST(Close, ReceiveCloseWithRequestsInFlightIsPromptAndSenderSeesError) {
  clearCapturedLog();
  Link link = connectLink();
  std::vector<uint8_t> big(64 << 20, 7), in(big.size());
  for (int i = 0; i < 4; ++i) postRecv(link.recvComm, in.data(), in.size());
  void* sreq = postSend(link.sendComm, big.data(), 1 << 20);
  ASSERT_EQ(waitRequest(sreq), ncclSuccess);
  ASSERT_EQ(api::closeRecv(link.recvComm), ncclSuccess);
  link.recvComm = nullptr;
  // Sends after the receiver is gone fail (EPIPE/ECONNRESET), never hang.
  ncclResult_t rc = ncclSuccess;
  int sends = 0;
  for (; sends < 20 && rc == ncclSuccess; ++sends) {
    rc = waitForError(postSend(link.sendComm, big.data(), big.size()), 10s);
  }
  EXPECT_EQ(rc, ncclRemoteError) << "after " << sends << " send(s)";
  if (rc != ncclRemoteError) {
    // Rare under load in CI's ASan phase: everything the plugin logged, for the next look.
    for (const std::string& line : capturedLog()) fprintf(stderr, "[captured] %s\n", line.c_str());
  }
  closeLink(link);
}

// A child forked now (a PyTorch DataLoader worker) holds a copy of every
// socket the process has; it does nothing until killed (at most 60 s).
pid_t forkSocketHolder() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(60);
    for (;;) ::pause();
  }
  return pid;
}

// Kills and reaps the child when the test ends, whichever assertion failed.
struct ChildGuard {
  pid_t pid;
  ~ChildGuard() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

TEST(Close, SendCloseIsSeenByThePeerWhileAForkedChildHoldsTheSockets) {
  Link link = connectLink();
  std::vector<uint8_t> msg(1 << 20, 7), in(msg.size());
  void* rreq = postRecv(link.recvComm, in.data(), in.size());
  ASSERT_EQ(waitRequest(postSend(link.sendComm, msg.data(), msg.size())), ncclSuccess);
  ASSERT_EQ(waitRequest(rreq), ncclSuccess);
  ChildGuard child{forkSocketHolder()};
  ASSERT_GT(child.pid, 0);
  ASSERT_EQ(api::closeSend(link.sendComm), ncclSuccess);
  link.sendComm = nullptr;
  // The sender is gone: the receive fails (EOF) instead of waiting for data
  // that the child's copies of the sockets will never send.
  EXPECT_EQ(waitForError(postRecv(link.recvComm, in.data(), in.size()), 10s), ncclRemoteError);
  closeLink(link);
}

TEST(Close, ReceiveCloseIsSeenByThePeerWhileAForkedChildHoldsTheSockets) {
  Link link = connectLink();
  std::vector<uint8_t> big(64 << 20, 7);
  ChildGuard child{forkSocketHolder()};
  ASSERT_GT(child.pid, 0);
  ASSERT_EQ(api::closeRecv(link.recvComm), ncclSuccess);
  link.recvComm = nullptr;
  ncclResult_t rc = ncclSuccess;
  for (int i = 0; i < 20 && rc == ncclSuccess; ++i) {
    rc = waitForError(postSend(link.sendComm, big.data(), big.size()), 10s);
  }
  EXPECT_EQ(rc, ncclRemoteError);
  closeLink(link);
}

TEST(Close, ReceiveCloseWithAFullQueueIsSeenWhileAForkedChildHoldsTheSockets) {
  Link link = connectLink();
  std::vector<uint8_t> big(64 << 20, 7);
  // No receive posted: the receiver's socket queues fill and its window
  // closes, so a FIN alone leaves the sender probing a window that never opens.
  void* sreq = postSend(link.sendComm, big.data(), big.size());
  std::this_thread::sleep_for(300ms);
  ChildGuard child{forkSocketHolder()};
  ASSERT_GT(child.pid, 0);
  ASSERT_EQ(api::closeRecv(link.recvComm), ncclSuccess);
  link.recvComm = nullptr;
  EXPECT_EQ(waitForError(sreq, 10s), ncclRemoteError) << "the unread data must reset the sender";
  closeLink(link);
}

TEST(Close, ListenCloseWithConnectionsHalfDoneIsClean) {
  void* listenComm = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ASSERT_EQ(api::listen(0, handle, &listenComm), ncclSuccess);
  void* sendComm = nullptr;
  ASSERT_EQ(api::connect(nullptr, 0, handle, &sendComm), ncclSuccess);  // starts, does not finish
  int stray = rawConnect(handle);                                       // accepted, no hello yet
  void* recvComm = nullptr;
  ASSERT_EQ(api::accept(listenComm, &recvComm), ncclSuccess);
  EXPECT_EQ(api::closeListen(listenComm), ncclSuccess);
  ::close(stray);
  if (recvComm != nullptr) {
    EXPECT_EQ(api::closeRecv(recvComm), ncclSuccess);
  }
  // The sender either completed before the close or gives up with an error.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  ncclResult_t rc = ncclSuccess;
  while (sendComm == nullptr && rc == ncclSuccess && std::chrono::steady_clock::now() < deadline) {
    rc = api::connect(nullptr, 0, handle, &sendComm);
  }
  if (sendComm != nullptr) {
    EXPECT_EQ(api::closeSend(sendComm), ncclSuccess);
  } else {
    EXPECT_EQ(rc, ncclRemoteError);
  }
}

TEST(Connect, VanishedListenerFailsWithinConnectTimeout) {
  clearCapturedLog();
  void* listenComm = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ASSERT_EQ(api::listen(0, handle, &listenComm), ncclSuccess);
  ASSERT_EQ(api::closeListen(listenComm), ncclSuccess);
  void* sendComm = nullptr;
  ncclResult_t rc = ncclSuccess;
  auto start = std::chrono::steady_clock::now();
  while (rc == ncclSuccess && sendComm == nullptr &&
         std::chrono::steady_clock::now() - start < 10s) {
    rc = api::connect(nullptr, 0, handle, &sendComm);
  }
  EXPECT_EQ(rc, ncclRemoteError);
  EXPECT_EQ(sendComm, nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // the suite's timeout is 1 s
  EXPECT_TRUE(logContains("could not connect"));
}

// A handle whose listener has gone: each connect() call meets a refused
// connection and schedules a retry, so one call leaves the connect pending.
void makeDeadHandle(char* handle) {
  void* listenComm = nullptr;
  ASSERT_EQ(api::listen(0, handle, &listenComm), ncclSuccess);
  ASSERT_EQ(api::closeListen(listenComm), ncclSuccess);
}

TEST(Connect, AConnectLeftPendingEndsWithItsContext) {
  clearCapturedLog();
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  makeDeadHandle(handle);
  void* ctx = nullptr;
  ASSERT_EQ(api::initContext(&ctx, 7, NCCL_NET_TRAFFIC_CLASS_UNDEF, nullptr), ncclSuccess);
  size_t before = api::pendingConnects();
  void* sendComm = nullptr;
  ASSERT_EQ(api::connect(ctx, 0, handle, &sendComm), ncclSuccess);
  ASSERT_EQ(sendComm, nullptr) << "the listener is gone: the connect must still be pending";
  EXPECT_EQ(api::pendingConnects(), before + 1);
  // NCCL aborts the communicator here and never polls the connect again.
  EXPECT_EQ(api::finalizeContext(ctx), ncclSuccess);
  EXPECT_EQ(api::pendingConnects(), before);
  EXPECT_TRUE(logContains("closed 1 connect(s) of the finalized context"));
}

TEST(Connect, AConnectAbandonedPastItsDeadlineIsClosedByTheNextConnect) {
  clearCapturedLog();
  char first[NCCL_NET_HANDLE_MAXSIZE] = {};
  char second[NCCL_NET_HANDLE_MAXSIZE] = {};
  makeDeadHandle(first);
  makeDeadHandle(second);
  void* sendComm = nullptr;
  ASSERT_EQ(api::connect(nullptr, 0, first, &sendComm), ncclSuccess);  // no context: v8-v10
  ASSERT_EQ(sendComm, nullptr);
  // Past the first connect's deadline (the suite sets 1 s) and unpolled for
  // as long again (at least 1 s).
  auto timeout = std::chrono::milliseconds(params().connectTimeoutMs);
  std::this_thread::sleep_for(timeout + std::max<std::chrono::milliseconds>(timeout, 1s) + 500ms);
  ASSERT_EQ(api::connect(nullptr, 0, second, &sendComm), ncclSuccess);
  ASSERT_EQ(sendComm, nullptr);
  EXPECT_EQ(api::pendingConnects(), 1u) << "only the second is left (and nothing older)";
  EXPECT_TRUE(logContains("closed an abandoned connect"));
  // A late poll of the first gets the timeout error it would have got.
  EXPECT_EQ(api::connect(nullptr, 0, first, &sendComm), ncclRemoteError);
  EXPECT_TRUE(logContains("closed as abandoned"));
  // The second still ends as a connect should: with the timeout error.
  ncclResult_t rc = ncclSuccess;
  auto start = std::chrono::steady_clock::now();
  while (rc == ncclSuccess && std::chrono::steady_clock::now() - start < 10s) {
    rc = api::connect(nullptr, 0, second, &sendComm);
  }
  EXPECT_EQ(rc, ncclRemoteError);
  EXPECT_EQ(api::pendingConnects(), 0u);
}

TEST(InvalidArgument, NullPointersAndBadDevices) {
  int n = 0;
  void* comm = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  api::DeviceProps props{};
  EXPECT_EQ(api::devices(nullptr), ncclInvalidArgument);
  EXPECT_EQ(api::devices(&n), ncclSuccess);
  EXPECT_EQ(api::getProperties(-1, &props), ncclInvalidArgument);
  EXPECT_EQ(api::getProperties(n, &props), ncclInvalidArgument);
  EXPECT_EQ(api::getProperties(0, nullptr), ncclInvalidArgument);
  EXPECT_EQ(api::listen(n, handle, &comm), ncclInvalidArgument);
  EXPECT_EQ(api::listen(0, nullptr, &comm), ncclInvalidArgument);
  EXPECT_EQ(api::listen(0, handle, nullptr), ncclInvalidArgument);
  EXPECT_EQ(api::connect(nullptr, 0, nullptr, &comm), ncclInvalidArgument);
  EXPECT_EQ(api::accept(nullptr, &comm), ncclInvalidArgument);
  EXPECT_EQ(api::test(nullptr, &n, nullptr), ncclInvalidArgument);
  EXPECT_EQ(api::closeSend(nullptr), ncclInvalidArgument);
  EXPECT_EQ(api::closeRecv(nullptr), ncclInvalidArgument);
  EXPECT_EQ(api::closeListen(nullptr), ncclInvalidArgument);
  EXPECT_EQ(api::finalizeContext(nullptr), ncclSuccess) << "NCCL 2.28 finalizes failed inits";
}

TEST(InvalidArgument, ForeignAndStalePointersAreRejected) {
  uint64_t junk[64] = {};
  void* req = nullptr;
  int done = 0;
  uint8_t buf[8];
  void* data = buf;
  size_t size = sizeof(buf);
  EXPECT_EQ(api::isend(junk, buf, 8, nullptr, &req), ncclInvalidArgument);
  EXPECT_EQ(api::irecv(junk, 1, &data, &size, nullptr, &req), ncclInvalidArgument);
  EXPECT_EQ(api::test(junk, &done, nullptr), ncclInvalidArgument);
  EXPECT_EQ(api::closeSend(junk), ncclInvalidArgument);
  Link link = connectLink();
  void* staleSend = link.sendComm;
  void* staleRecv = link.recvComm;
  closeLink(link);
  EXPECT_EQ(api::isend(staleSend, buf, 8, nullptr, &req), ncclInvalidArgument);
  EXPECT_EQ(api::irecv(staleRecv, 1, &data, &size, nullptr, &req), ncclInvalidArgument);
  EXPECT_EQ(api::closeSend(staleSend), ncclInvalidArgument) << "double close";
}

TEST(InvalidArgument, UnsupportedRequestsAreRefused) {
  Link link = connectLink();
  uint8_t buf[16];
  void* bufs[2] = {buf, buf + 8};
  size_t sizes[2] = {8, 8};
  void* req = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(api::irecv(link.recvComm, 2, bufs, sizes, nullptr, &req), ncclInvalidArgument);
  EXPECT_EQ(req, nullptr) << "*request is always written";
  void* mr = nullptr;
  EXPECT_EQ(api::regMr(link.sendComm, buf, 16, NCCL_PTR_CUDA, &mr), ncclInvalidArgument);
  EXPECT_EQ(api::isend(link.sendComm, nullptr, 16, nullptr, &req), ncclInvalidArgument);
  closeLink(link);
}

TEST(InvalidArgument, CorruptedHandleIsRejected) {
  void* listenComm = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ASSERT_EQ(api::listen(0, handle, &listenComm), ncclSuccess);
  void* sendComm = nullptr;
  for (size_t byte : {0ul, 5ul, 17ul, 40ul}) {
    char bad[NCCL_NET_HANDLE_MAXSIZE];
    std::memcpy(bad, handle, sizeof(bad));
    bad[byte] ^= 0x5a;
    EXPECT_EQ(api::connect(nullptr, 0, bad, &sendComm), ncclInvalidArgument) << "byte " << byte;
    EXPECT_EQ(sendComm, nullptr);
  }
  char random[NCCL_NET_HANDLE_MAXSIZE];
  for (size_t i = 0; i < sizeof(random); ++i) random[i] = static_cast<char>(i * 37 + 11);
  EXPECT_EQ(api::connect(nullptr, 0, random, &sendComm), ncclInvalidArgument);
  // A handle whose connect-state id was corrupted mid-connect.
  char copy[NCCL_NET_HANDLE_MAXSIZE];
  std::memcpy(copy, handle, sizeof(copy));
  ASSERT_EQ(api::connect(nullptr, 0, copy, &sendComm), ncclSuccess);
  if (sendComm == nullptr) {
    reinterpret_cast<ListenHandle*>(copy)->connectId ^= 0xffff;
    EXPECT_EQ(api::connect(nullptr, 0, copy, &sendComm), ncclInvalidArgument);
  }
  if (sendComm != nullptr) {
    EXPECT_EQ(api::closeSend(sendComm), ncclSuccess);
  }
  EXPECT_EQ(api::closeListen(listenComm), ncclSuccess);
}

}  // namespace
}  // namespace bagua::net::testing
