// The engines below the streams: what attach() refuses, an io_uring worker
// whose rings are far smaller than the operations it is given, and the
// caller-driven engine's deferred receives.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "net_plugin/engine/engine.h"

namespace bagua::net {
namespace {

using namespace std::chrono_literals;

class NoHandler : public IoHandler {
 public:
  void onSendDone(int) override {}
  void onRecvDone(int) override {}
};

// Runs `task` on the worker's own thread, as the streams call the worker,
// and returns what it returned.
template <typename Task>
auto onWorker(Worker& worker, Task task) {
  std::promise<decltype(task())> result;
  worker.post([&] { result.set_value(task()); });
  return result.get_future().get();
}

// io_uring, or a skip where this kernel or build has none.
std::unique_ptr<Engine> uringOrSkip(const EngineConfig& config, std::string* why) {
  try {
    return createUringEngine(config);
  } catch (const std::exception& e) {
    *why = e.what();
    return nullptr;
  }
}

TEST(Attach, TheEpollEngineRefusesWhatItCannotWatch) {
  std::shared_ptr<Engine> engine = createEpollEngine(EngineConfig{EngineKind::kEpoll, 1, 0, {}});
  Worker& worker = engine->worker(0);
  NoHandler handler;
  FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(onWorker(worker, [&] { return worker.attach(fileno(file), &handler); }), -EPERM)
      << "epoll cannot watch a regular file";
  std::fclose(file);
}

TEST(Attach, TheIoUringEngineRefusesAClosedFd) {
  std::string why;
  std::unique_ptr<Engine> engine = uringOrSkip(EngineConfig{EngineKind::kIoUring, 1, 0, {}}, &why);
  if (engine == nullptr) GTEST_SKIP() << "no io_uring here: " << why;
  Worker& worker = engine->worker(0);
  NoHandler handler;
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(onWorker(worker, [&] { return worker.attach(fds[0], &handler); }), -EBADF);
}

// Counts one fd's completions (bytes, or -errno).
class Counter : public IoHandler {
 public:
  explicit Counter(std::atomic<int>* finished) : finished_(finished) {}
  void onSendDone(int result) override { done(result); }
  void onRecvDone(int result) override { done(result); }
  int bytes = 0;
  int errors = 0;

 private:
  void done(int result) {
    if (result > 0) bytes += result; else ++errors;
    finished_->fetch_add(1);
  }
  std::atomic<int>* finished_;
};

// 64 socket pairs, a send and a receive on each, started in one task on a
// worker whose rings hold 4 submissions and 8 completions: the worker
// submits whenever its queue fills, while the sends complete at once and
// overflow the completion queue. Every operation finishes, once.
TEST(UringRings, FarMoreOperationsThanRingEntriesAllFinish) {
  std::string why;
  EngineConfig config{EngineKind::kIoUring, 1, 0, {}};
  config.ringEntries = 4;
  std::unique_ptr<Engine> engine = uringOrSkip(config, &why);
  if (engine == nullptr) GTEST_SKIP() << "no io_uring here: " << why;
  Worker& worker = engine->worker(0);
  constexpr int kPairs = 64;
  std::atomic<int> finished{0};
  std::vector<int> fds;
  std::vector<std::unique_ptr<Counter>> counters;
  for (int i = 0; i < 2 * kPairs; ++i) counters.push_back(std::make_unique<Counter>(&finished));
  for (int i = 0; i < kPairs; ++i) {
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
    fds.push_back(pair[0]);
    fds.push_back(pair[1]);
  }
  char out[8] = "payload";
  std::vector<char> in(8 * kPairs);
  std::vector<iovec> sendIov(kPairs), recvIov(kPairs);
  bool attached = onWorker(worker, [&] {
    for (int i = 0; i < 2 * kPairs; ++i) {
      if (worker.attach(fds[i], counters[i].get()) != 0) return false;
    }
    for (int i = 0; i < kPairs; ++i) {
      recvIov[i] = {&in[8 * i], 8};
      sendIov[i] = {out, 8};
      worker.recv(fds[2 * i + 1], &recvIov[i], 1);
      worker.send(fds[2 * i], &sendIov[i], 1);
    }
    return true;
  });
  ASSERT_TRUE(attached);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (finished.load() < 2 * kPairs && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(finished.load(), 2 * kPairs) << "operations that finished within 10 s";
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(finished.load(), 2 * kPairs) << "none finishes twice";
  onWorker(worker, [&] {
    for (int i = 0; i < 2 * kPairs; ++i) worker.detach(fds[i]);
    return true;
  });
  for (int i = 0; i < 2 * kPairs; ++i) {
    EXPECT_EQ(counters[i]->errors, 0) << "fd " << i;
    EXPECT_EQ(counters[i]->bytes, 8) << "fd " << i;
    ::close(fds[i]);
  }
  for (int i = 0; i < kPairs; ++i) EXPECT_STREQ(&in[8 * i], "payload");
}

// Inline (caller-driven) engine: its worker's methods are called from
// tasks, which progress() runs on the calling thread.
class Reader : public IoHandler {
 public:
  void onSendDone(int) override {}
  void onRecvDone(int result) override {
    results.push_back(result);
    if (next) std::exchange(next, nullptr)();
  }
  std::vector<int> results;
  std::function<void()> next;  // run once, from the next completion
};

struct InlineEngine : testing::Test {
  void SetUp() override { ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0); }
  void TearDown() override {
    worker.post([this] { worker.detach(pair[1]); });
    engine->progress();
    ::close(pair[0]);
    ::close(pair[1]);
  }

  std::shared_ptr<Engine> engine = createEpollEngine(EngineConfig{EngineKind::kInline, 0, 0, {}});
  Worker& worker = engine->worker(0);
  int pair[2]{};  // written at [0], read at [1]
  Reader reader;
  char in[8]{};
  iovec iov{in, sizeof in};
};

// A receive after a drain (the previous one came back short) is not tried
// until the socket's next edge: no syscall that meets EAGAIN on the caller's
// thread after every message. Here the previous receive was full, so bytes
// wait unannounced: they stay until new bytes bring an edge, and then all
// come (an engine that tried at once would read "xx" in the second turn).
TEST_F(InlineEngine, AReceiveAfterADrainWaitsForTheNextEdge) {
  worker.post([this] {
    ASSERT_EQ(worker.attach(pair[1], &reader), 0);
    worker.recv(pair[1], &iov, 1);
  });
  engine->progress();  // attached; the receive met EAGAIN
  ASSERT_TRUE(reader.results.empty());
  reader.next = [this] { worker.recvAfterDrain(pair[1], &iov, 1); };
  ASSERT_EQ(::write(pair[0], "message1xx", 10), 10);
  engine->progress();
  ASSERT_EQ(reader.results, std::vector<int>{8});
  EXPECT_EQ(std::string(in, 8), "message1");
  engine->progress();
  ASSERT_EQ(reader.results, std::vector<int>{8}) << "tried without an edge";
  ASSERT_EQ(::write(pair[0], "yyyyyy", 6), 6);
  engine->progress();
  ASSERT_EQ(reader.results, (std::vector<int>{8, 8}));
  EXPECT_EQ(std::string(in, 8), "xxyyyyyy");
}

// A peer that closes right after its last message: the end of stream came
// with the edge of those bytes, so no later edge announces it; the receive
// after the drain must still meet it (0) instead of waiting for ever.
TEST_F(InlineEngine, AReceiveAfterADrainSeesAPeerCloseThatCameWithTheLastBytes) {
  worker.post([this] {
    ASSERT_EQ(worker.attach(pair[1], &reader), 0);
    worker.recv(pair[1], &iov, 1);
  });
  engine->progress();
  reader.next = [this] { worker.recvAfterDrain(pair[1], &iov, 1); };
  ASSERT_EQ(::write(pair[0], "msg1", 4), 4);
  ::shutdown(pair[0], SHUT_WR);
  engine->progress();
  engine->progress();
  EXPECT_EQ(reader.results, (std::vector<int>{4, 0}));
}

}  // namespace
}  // namespace bagua::net
