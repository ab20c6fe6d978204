// What every Store must do, run against FileStore and TcpStore alike:
// set/get/add/wait, blocking get, timeouts that name the keys within their
// bound, counters stored as text, and exact totals from concurrent adds by
// threads and by forked processes.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "posix/local_ranks.h"
#include "runtime/common/error.h"
#include "runtime/store/file_store.h"
#include "runtime/store/tcp_store.h"
#include "runtime/store/tcp_store_server.h"
#include "tests/runtime/store/store_test_support.h"

namespace bagua {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using store_testing::bytes;
using store_testing::secondsSince;

// One backend (a directory, or a server) and any number of clients of it.
class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "tcp") server_ = std::make_unique<TcpStoreServer>(0, "127.0.0.1");
    store_ = client();
  }

  // A new client of the same backend (each forked child makes its own).
  std::unique_ptr<Store> client() {
    if (GetParam() == "file") return std::make_unique<FileStore>(dir_.path() + "/store");
    TcpStoreOptions o;
    o.connectTimeout = 5s;
    o.requestTimeout = 5s;
    return std::make_unique<TcpStore>("127.0.0.1", server_->port(), o);
  }

  store_testing::TempDir dir_;
  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreTest, SetThenGetReturnsTheLatestValue) {
  store_->set("a", bytes("one"));
  EXPECT_EQ(store_->get("a", 1s), bytes("one"));
  store_->set("a", bytes("two!"));
  EXPECT_EQ(store_->get("a", 1s), bytes("two!"));
  std::vector<uint8_t> binary = {0, 255, 0, 10, 13};
  store_->set("bin", binary);
  EXPECT_EQ(client()->get("bin", 1s), binary);
  store_->set("empty", {});
  EXPECT_TRUE(store_->get("empty", 1s).empty());
}

TEST_P(StoreTest, KeysMayHoldAnyBytes) {
  const std::vector<std::string> keys = {"",           "a/b/../c",  "%41",
                                         "with space", "k\xc3\xa9", std::string("nul\0inside", 10),
                                         ".lock",      "tmp_x"};
  for (size_t i = 0; i < keys.size(); ++i) store_->set(keys[i], bytes(std::to_string(i)));
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(store_->get(keys[i], 1s), bytes(std::to_string(i))) << "key #" << i;
  }
  // "%41" must not alias "A".
  EXPECT_THROW(store_->get("A", 0ms), TimeoutError);
}

TEST_P(StoreTest, GetWaitsForALaterSet) {
  auto start = Clock::now();
  std::thread setter([&] {
    std::this_thread::sleep_for(50ms);
    client()->set("late", bytes("here"));
  });
  EXPECT_EQ(store_->get("late", 5s), bytes("here"));
  setter.join();
  EXPECT_LT(secondsSince(start), 5.0);
}

TEST_P(StoreTest, GetTimeoutNamesTheKeyWithinTheBound) {
  auto start = Clock::now();
  try {
    store_->get("never/set", 150ms);
    FAIL() << "get of a missing key returned";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("'never/set'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("150 ms"), std::string::npos) << e.what();
  }
  EXPECT_GE(secondsSince(start), 0.14);
  EXPECT_LT(secondsSince(start), 5.0);
}

TEST_P(StoreTest, WaitTimeoutListsOnlyTheMissingKeys) {
  store_->set("present", bytes("x"));
  try {
    store_->wait({"present", "gone1", "gone2"}, 100ms);
    FAIL() << "wait for missing keys returned";
  } catch (const TimeoutError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("2 of 3 keys"), std::string::npos) << what;
    EXPECT_NE(what.find("'gone1', 'gone2'"), std::string::npos) << what;
    EXPECT_EQ(what.find("'present'"), std::string::npos) << what;
  }
  store_->wait({"present"}, 0ms);
  store_->wait({}, 0ms);
}

TEST_P(StoreTest, WaitReturnsOnceEveryKeyIsSet) {
  std::thread setter([&] {
    auto other = client();
    for (const char* k : {"w1", "w2", "w3"}) {
      std::this_thread::sleep_for(20ms);
      other->set(k, bytes(k));
    }
  });
  auto start = Clock::now();
  store_->wait({"w1", "w2", "w3"}, 5s);
  EXPECT_LT(secondsSince(start), 5.0);
  setter.join();
}

TEST_P(StoreTest, AddCountsAndReadsBackAsDecimalText) {
  EXPECT_EQ(store_->add("n", 5), 5);
  EXPECT_EQ(store_->add("n", -2), 3);
  EXPECT_EQ(store_->add("n", 0), 3);
  EXPECT_EQ(store_->get("n", 1s), bytes("3"));
  store_->set("m", bytes("-10"));
  EXPECT_EQ(store_->add("m", 11), 1);
}

TEST_P(StoreTest, AddOnATextValueOrPastInt64IsInvalidArgument) {
  store_->set("text", bytes("abc"));
  EXPECT_THROW(store_->add("text", 1), InvalidArgument);
  store_->add("big", INT64_MAX);
  EXPECT_THROW(store_->add("big", 1), InvalidArgument);
  EXPECT_EQ(store_->add("big", -1), INT64_MAX - 1);  // the failed add changed nothing
}

TEST_P(StoreTest, BlockingGetOnASharedClientDoesNotStallOtherThreads) {
  std::thread getter([&] { EXPECT_EQ(store_->get("shared", 5s), bytes("v")); });
  std::this_thread::sleep_for(30ms);
  auto start = Clock::now();
  store_->set("shared", bytes("v"));
  EXPECT_LT(secondsSince(start), 3.0);  // not the getter's 5 s
  getter.join();
}

TEST_P(StoreTest, ConcurrentAddsFromThreadsGiveTheExactTotal) {
  constexpr int kThreads = 8;
  constexpr int kAdds = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Half the threads share the fixture's client, half have their own.
      std::unique_ptr<Store> own = t % 2 ? client() : nullptr;
      Store& s = own ? *own : *store_;
      for (int i = 0; i < kAdds; ++i) s.add("total", 1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(store_->add("total", 0), kThreads * kAdds);
}

TEST_P(StoreTest, ConcurrentAddsFromProcessesGiveTheExactTotal) {
  constexpr int kProcs = 4;
  constexpr int kAdds = 100;
  auto results = posix::runLocalRanks(
      kProcs,
      [&](int, const std::string&) {
        auto s = client();
        for (int i = 0; i < kAdds; ++i) s->add("procs", 1);
        s->add("procs/done", 1);
        return 0;
      },
      30s);
  ASSERT_EQ(posix::describeFailures(results), "");
  EXPECT_EQ(store_->add("procs", 0), kProcs * kAdds);
  EXPECT_EQ(store_->get("procs/done", 0ms), bytes(std::to_string(kProcs)));
}

INSTANTIATE_TEST_SUITE_P(Kinds, StoreTest, ::testing::Values("file", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace bagua
