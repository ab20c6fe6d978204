// Rendezvous and barrier: N forked ranks meeting over TCP (rank 0 serving on
// a free loopback port) or through a FileStore, timeouts naming the ranks
// that never came, and torchrun's variables read with errors naming the
// variable.
#include "runtime/store/rendezvous.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "posix/local_ranks.h"
#include "runtime/common/error.h"
#include "runtime/store/barrier.h"
#include "runtime/store/file_store.h"
#include "runtime/store/tcp_store.h"
#include "runtime/store/tcp_store_server.h"
#include "tests/runtime/store/store_test_support.h"

namespace bagua {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using posix::describeFailures;
using posix::runLocalRanks;
using store_testing::secondsSince;

RendezvousOptions testOptions(std::chrono::milliseconds timeout, const std::string& storeDir) {
  RendezvousOptions o;
  o.timeout = timeout;
  o.storeDir = storeDir;
  o.bindHost = "127.0.0.1";
  o.prefix = "test";
  return o;
}

RendezvousInfo infoFor(int rank, int worldSize, int port) {
  return RendezvousInfo{rank, worldSize, rank, "127.0.0.1", port};
}

// Throws unless `what` contains `needle` (children report by exception).
void require(const std::string& what, const std::string& needle) {
  if (what.find(needle) == std::string::npos) {
    throw std::runtime_error("expected '" + needle + "' in: " + what);
  }
}

// ---- N forked ranks -------------------------------------------------------

class RendezvousProcess
    : public ::testing::TestWithParam<std::tuple<std::string /*store*/, int /*world*/>> {};

TEST_P(RendezvousProcess, AllRanksMeetShareAStoreAndFinish) {
  auto [kind, world] = GetParam();
  store_testing::TempDir dir;
  std::string storeDir = kind == "file" ? dir.path() + "/store" : "";
  int port = store_testing::pickFreePort();
  auto start = Clock::now();
  auto results = runLocalRanks(
      world,
      [&](int rank, const std::string&) {
        Rendezvous rdv(infoFor(rank, world, port), testOptions(10s, storeDir));
        Store& store = rdv.store();
        store.add("sum", rank + 1);
        barrier(store, rank, world, "after-add", 10s);
        auto sum = store.add("sum", 0);
        if (sum != world * (world + 1) / 2) throw std::runtime_error("sum " + std::to_string(sum));
        barrier(store, rank, world, "after-add", 10s);  // a second generation of one name
        rdv.finish(10s);
        return 0;
      },
      30s);
  EXPECT_EQ(describeFailures(results), "");
  EXPECT_LT(secondsSince(start), 10.0);
}

INSTANTIATE_TEST_SUITE_P(Worlds, RendezvousProcess,
                         ::testing::Combine(::testing::Values("tcp", "file"),
                                            ::testing::Values(1, 2, 3, 4)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks";
                         });

TEST(RendezvousProcessTimeout, MissingRanksAreNamedWithinTheTimeout) {
  int port = store_testing::pickFreePort();
  auto start = Clock::now();
  // Ranks 0 and 1 of 4 start; 2 and 3 never do.
  auto results = runLocalRanks(
      2,
      [&](int rank, const std::string&) {
        try {
          Rendezvous rdv(infoFor(rank, 4, port), testOptions(1000ms, ""));
        } catch (const TimeoutError& e) {
          require(e.what(), "ranks 2, 3 of 4 did not join within 1 s");
          return 0;
        }
        return 1;
      },
      10s);
  EXPECT_EQ(describeFailures(results), "");
  EXPECT_LT(secondsSince(start), 8.0);
}

TEST(RendezvousProcessTimeout, MissingRankZeroIsNamedWithItsAddress) {
  int port = store_testing::pickFreePort();
  auto start = Clock::now();
  auto results = runLocalRanks(
      1,
      [&](int, const std::string&) {
        try {
          Rendezvous rdv(infoFor(1, 2, port), testOptions(300ms, ""));
        } catch (const TimeoutError& e) {
          require(e.what(), "rank 0 of 2 did not join within 300 ms");
          require(e.what(), "127.0.0.1:" + std::to_string(port));
          return 0;
        }
        return 1;
      },
      10s);
  EXPECT_EQ(describeFailures(results), "");
  EXPECT_LT(secondsSince(start), 5.0);
}

// ---- in one process (threads, FileStore) --------------------------------

TEST(Rendezvous, FileStoreRanksInThreadsAndAMissingOne) {
  store_testing::TempDir dir;
  std::vector<std::string> errors(3);
  std::vector<std::thread> ranks;
  auto start = Clock::now();
  for (int r = 0; r < 3; ++r) {  // rank 3 of 4 never comes
    ranks.emplace_back([&, r] {
      try {
        Rendezvous rdv(infoFor(r, 4, 0), testOptions(1000ms, dir.path()));
      } catch (const TimeoutError& e) {
        errors[size_t(r)] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (const auto& e : errors)
    EXPECT_NE(e.find("rank 3 of 4 did not join within 1 s"), std::string::npos) << e;
  EXPECT_LT(secondsSince(start), 6.0);
}

TEST(Rendezvous, SameRankTwiceIsInvalidArgument) {
  store_testing::TempDir dir;
  { Rendezvous first(infoFor(0, 1, 0), testOptions(1s, dir.path())); }
  try {
    Rendezvous second(infoFor(0, 1, 0), testOptions(1s, dir.path()));
    FAIL() << "a rank joined twice";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 joined twice"), std::string::npos) << e.what();
  }
}

TEST(Rendezvous, BadInfoIsInvalidArgument) {
  EXPECT_THROW(Rendezvous(infoFor(2, 2, 29500), testOptions(1s, "")), InvalidArgument);
  EXPECT_THROW(Rendezvous(infoFor(0, 0, 29500), testOptions(1s, "")), InvalidArgument);
  EXPECT_THROW(Rendezvous(infoFor(0, 1, 0), testOptions(1s, "")), InvalidArgument);
  EXPECT_THROW(Rendezvous(RendezvousInfo{0, 1, 0, "", 29500}, testOptions(1s, "")),
               InvalidArgument);
}

TEST(Rendezvous, RankZeroOnABusyPortIsCommError) {
  TcpStoreServer squatter(0, "127.0.0.1");
  try {
    Rendezvous rdv(infoFor(0, 1, squatter.port()), testOptions(1s, ""));
    FAIL() << "rank 0 started a server on a busy port";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_PORT"), std::string::npos) << e.what();
  }
}

// ---- barrier ---------------------------------------------------------------

class BarrierTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BarrierTest, GenerationsHoldEveryoneAndAMissingRankIsNamed) {
  store_testing::TempDir dir;
  std::unique_ptr<TcpStoreServer> server;
  if (GetParam() == "tcp") server = std::make_unique<TcpStoreServer>(0, "127.0.0.1");
  auto client = [&]() -> std::unique_ptr<Store> {
    if (!server) return std::make_unique<FileStore>(dir.path());
    return std::make_unique<TcpStore>("127.0.0.1", server->port());
  };
  constexpr int kWorld = 4;
  constexpr int kRounds = 5;
  std::atomic<int> arrived{0};
  std::atomic<bool> early{false};
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorld; ++r) {
    ranks.emplace_back([&, r] {
      auto store = client();
      for (int g = 0; g < kRounds; ++g) {
        ++arrived;
        barrier(*store, r, kWorld, "rounds", 10s);
        if (arrived.load() < kWorld * (g + 1)) early = true;
      }
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_FALSE(early.load()) << "a rank left a barrier before all had arrived";

  std::vector<std::string> errors(kWorld - 1);
  ranks.clear();
  for (int r = 0; r < kWorld - 1; ++r) {
    ranks.emplace_back([&, r] {
      try {
        barrier(*client(), r, kWorld, "short", 1000ms);
      } catch (const TimeoutError& e) {
        errors[size_t(r)] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (const auto& e : errors) {
    EXPECT_NE(e.find("barrier 'short': rank 3 of 4 did not arrive within 1 s"), std::string::npos)
        << e;
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, BarrierTest, ::testing::Values("file", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace bagua
