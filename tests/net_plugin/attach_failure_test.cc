// A stream whose socket its engine worker cannot watch (epoll_ctl: ENOSPC
// past fs.epoll.max_user_watches; fcntl: EBADF) fails its comm with an error
// that says so. It used to be logged and then waited on for ever (epoll), or
// to throw on the worker thread, which ends the process (io_uring's fcntl).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <vector>

#include "net_plugin/base/params.h"
#include "net_plugin/engine/engine.h"
#include "net_plugin/transport/recv_comm.h"
#include "net_plugin/transport/send_comm.h"
#include "tests/net_plugin/support/harness.h"

namespace bagua::net {
namespace {

using namespace std::chrono_literals;
using testing::clearCapturedLog;
using testing::logContains;

// A real epoll worker that refuses to watch one fd, as epoll_ctl does once
// the user's fs.epoll.max_user_watches is used up.
class RefusingWorker final : public Worker {
 public:
  RefusingWorker(Worker& real, int refusedFd) : real_(real), refusedFd_(refusedFd) {}
  void post(std::function<void()> task) override { real_.post(std::move(task)); }
  int attach(int fd, IoHandler* handler) override {
    return fd == refusedFd_ ? -ENOSPC : real_.attach(fd, handler);
  }
  void detach(int fd) override { real_.detach(fd); }
  void send(int fd, const iovec* iov, int iovcnt) override { real_.send(fd, iov, iovcnt); }
  void recv(int fd, const iovec* iov, int iovcnt) override { real_.recv(fd, iov, iovcnt); }
  void cancel(int fd) override { real_.cancel(fd); }
  void wakeAfter(int fd, std::chrono::nanoseconds delay) override { real_.wakeAfter(fd, delay); }

 private:
  Worker& real_;
  int refusedFd_;
};

class RefusingEngine final : public Engine {
 public:
  explicit RefusingEngine(int refusedFd)
      : real_(createEpollEngine(EngineConfig{EngineKind::kEpoll, 1, 0, {}})),
        worker_(real_->worker(0), refusedFd) {}
  const char* name() const override { return "epoll, refusing one fd"; }
  int workerCount() const override { return 1; }
  Worker& worker(int) override { return worker_; }

 private:
  std::unique_ptr<Engine> real_;
  RefusingWorker worker_;
};

// Two connected socket pairs: near ends in *near (stream order), far ends
// in *far.
void socketPairs(std::vector<Fd>* near, std::vector<int>* far) {
  for (int i = 0; i < 2; ++i) {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    near->emplace_back(fds[0]);
    far->push_back(fds[1]);
  }
}

// Polls test() until the request is no longer pending; returns its status.
template <typename CommT>
Status settle(CommT& comm, Request* req) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  int done = 0;
  Status status = Status::kOk;
  while (status == Status::kOk && done == 0 && std::chrono::steady_clock::now() < deadline) {
    status = comm.test(req, &done, nullptr);
  }
  EXPECT_TRUE(status != Status::kOk || done != 0) << "still pending after 10 s";
  return status;
}

TEST(AttachFailure, AReceiveFailsNamingTheStreamThatCouldNotJoinItsWorker) {
  clearCapturedLog();
  std::vector<Fd> near;
  std::vector<int> far;
  socketPairs(&near, &far);
  auto engine = std::make_shared<RefusingEngine>(near[1].get());
  RecvComm comm(std::move(near), "peer", engine, /*callerStream=*/false);
  std::vector<uint8_t> buffer(4096);
  Request* req = nullptr;
  ASSERT_EQ(comm.irecv(buffer.data(), buffer.size(), &req), Status::kOk);
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(settle(comm, req), Status::kSystemError);
  EXPECT_TRUE(logContains("stream 1 could not join its engine worker"));
  EXPECT_TRUE(logContains("No space left on device"));
  EXPECT_TRUE(comm.close());
  for (int fd : far) ::close(fd);
}

TEST(AttachFailure, ASendOverAStreamThatCouldNotJoinItsWorkerFails) {
  clearCapturedLog();
  std::vector<Fd> near;
  std::vector<int> far;
  socketPairs(&near, &far);
  auto engine = std::make_shared<RefusingEngine>(near[1].get());
  Params params;
  params.chunkBytes = 256 * 1024;
  params.minSplitBytes = 64 * 1024;
  params.zeroCopy = ZeroCopyMode::kOff;
  SendComm comm(std::move(near), "peer", engine, nullptr, params, 2, CallerStreamUse{});
  // Four chunks over two streams: the send fails instead of waiting for
  // the chunks of the stream that never started.
  std::vector<uint8_t> message(1 << 20, 3);
  Request* req = nullptr;
  ASSERT_EQ(comm.isend(message.data(), message.size(), &req), Status::kOk);
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(settle(comm, req), Status::kSystemError);
  EXPECT_TRUE(logContains("stream 1 could not join its engine worker"));
  EXPECT_TRUE(comm.close());
  for (int fd : far) ::close(fd);
}

}  // namespace
}  // namespace bagua::net
