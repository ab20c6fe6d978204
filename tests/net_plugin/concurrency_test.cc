// Several communicators in one process driven from several threads at once,
// as NCCL does with one communicator per GPU (nccl-tests -g 2) or several
// process groups: each thread owns its connections; all share the engine.
// Also NCCL's split of duties: setup on one thread, data on another.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "net_plugin/api/api.h"
#include "tests/net_plugin/support/harness.h"

namespace bagua::net::testing {
namespace {

// One thread's work: its own link, `messages` round trips of mixed sizes.
int exchange(int id, int messages) {
  Link link = connectLink();
  int wrong = 0;
  for (int m = 0; m < messages; ++m) {
    size_t size = (static_cast<size_t>(id + 1) * 7919u * static_cast<size_t>(m + 1)) % (3u << 20);
    std::vector<uint8_t> out(size), in(size + 16);
    uint64_t seed = static_cast<uint64_t>(id) * 1000 + static_cast<uint64_t>(m);
    fillPattern(out.data(), size, seed);
    void* r = postRecv(link.recvComm, in.data(), in.size());
    void* s = postSend(link.sendComm, out.data(), size);
    int got = -1;
    if (waitRequest(s) != ncclSuccess || waitRequest(r, &got) != ncclSuccess) return -1;
    if (static_cast<size_t>(got) != size || verifyPattern(in.data(), size, seed) != -1) ++wrong;
  }
  closeLink(link);
  return wrong;
}

TEST(Concurrency, ManyCommsFromManyThreads) {
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::vector<int> wrong(kThreads, -2);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &wrong] { wrong[static_cast<size_t>(t)] = exchange(t, 40); });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[static_cast<size_t>(t)], 0) << "thread " << t;
}

TEST(Concurrency, SetupDataAndTestOnDifferentThreads) {
  Link link = connectLink();  // the "service" thread (this one) connects
  constexpr int kMessages = 64;
  std::vector<std::vector<uint8_t>> in(kMessages, std::vector<uint8_t>(100000));
  std::atomic<int> failures{0};
  std::thread receiver([&] {  // one "progress" thread receives
    for (int m = 0; m < kMessages; ++m) {
      void* r = postRecv(link.recvComm, in[m].data(), in[m].size());
      if (waitRequest(r) != ncclSuccess) ++failures;
    }
  });
  std::thread sender([&] {  // another sends
    std::vector<uint8_t> out(100000);
    for (int m = 0; m < kMessages; ++m) {
      fillPattern(out.data(), out.size(), static_cast<uint64_t>(m));
      if (waitRequest(postSend(link.sendComm, out.data(), out.size())) != ncclSuccess) ++failures;
    }
  });
  sender.join();
  receiver.join();
  EXPECT_EQ(failures.load(), 0);
  for (int m = 0; m < kMessages; ++m) {
    EXPECT_EQ(verifyPattern(in[m].data(), in[m].size(), static_cast<uint64_t>(m)), -1) << m;
  }
  closeLink(link);
}

TEST(Lifecycle, WorkerThreadsStopWhenTheLastCommCloses) {
  int before = pluginThreadCount();
  Link link = connectLink();
  EXPECT_GT(pluginThreadCount(), before) << "the engine's workers run while comms exist";
  closeLink(link);
  EXPECT_EQ(pluginThreadCountSettled(before), before)
      << "no plugin thread may outlive the last comm";
}

TEST(Lifecycle, ContextKeepsWorkersUntilFinalize) {
  int before = pluginThreadCount();
  void* ctx = nullptr;
  ASSERT_EQ(api::initContext(&ctx, 1, -1, captureLogger), ncclSuccess);
  EXPECT_GT(pluginThreadCount(), before);
  Link link = connectLink();
  closeLink(link);
  EXPECT_GT(pluginThreadCount(), before) << "a v11 context holds the engine";
  ASSERT_EQ(api::finalizeContext(ctx), ncclSuccess);
  EXPECT_EQ(pluginThreadCountSettled(before), before);
}

TEST(Lifecycle, NoFileDescriptorLeaksAcrossManyLinks) {
  int before = openFdCount();
  for (int i = 0; i < 20; ++i) {
    Link link = connectLink();
    uint8_t b = 1;
    ASSERT_EQ(waitRequest(postSend(link.sendComm, &b, 1)), ncclSuccess);
    ASSERT_EQ(waitRequest(postRecv(link.recvComm, &b, 1)), ncclSuccess);
    closeLink(link);
  }
  EXPECT_EQ(openFdCount(), before);
}

}  // namespace
}  // namespace bagua::net::testing
