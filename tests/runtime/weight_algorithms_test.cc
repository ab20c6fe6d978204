// The algorithms on the weights, over Gloo across forked ranks:
// low-precision decentralized SGD's replica invariant (rank r's own replica
// equals its left neighbour's right replica and its right neighbour's left
// replica, bit for bit, after every step) for 2-4 ranks; the asynchronous
// model average's rounds, abort (identical weights on every rank), resume,
// and destruction with a round in flight (run under TSan in CI).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>
#include <unistd.h>
#include <vector>

#include "runtime/algorithms/async_model_average.h"
#include "runtime/algorithms/low_precision_decentralized.h"
#include "runtime/comm/gloo_communicator.h"
#include "runtime/common/error.h"
#include "runtime/ops/cpu_ops.h"
#include "runtime/reducer/reducer.h"
#include "tests/runtime/gloo_loopback.h"
#include "tests/runtime/rank_harness.h"

namespace bagua::testing {
namespace {

using namespace std::chrono_literals;

void check(bool cond, const std::string& what) {
  if (!cond) throw std::runtime_error(what);
}

std::vector<float> randomVector(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Every rank's copy of `n` floats at `data` (Gloo allgather).
std::vector<std::vector<float>> gather(Gloo& g, const void* data, size_t n) {
  std::vector<float> all(n * static_cast<size_t>(g.comm->size()));
  g.comm->allgather(data, all.data(), n * sizeof(float))->wait(20s);
  std::vector<std::vector<float>> out;
  for (int r = 0; r < g.comm->size(); ++r) {
    out.emplace_back(all.begin() + static_cast<long>(n) * r,
                     all.begin() + static_cast<long>(n) * (r + 1));
  }
  return out;
}

class LowPrecision : public ::testing::TestWithParam<int> {};

TEST_P(LowPrecision, ReplicasTrackTheNeighboursBitForBit) {
  auto outcomes = runRanks(GetParam(), [](int rank, int size, Store& store) {
    Gloo g = connect(store, rank, size, "lpd");
    auto algorithm = std::make_shared<LowPrecisionDecentralized>();
    std::vector<float> weights = randomVector(1000, 7);  // identical start
    Reducer::Options o;
    o.timeout = 20s;
    Reducer reducer(g.comm, g.ops, algorithm,
                    {TensorSpec{"w", weights.data(), weights.size(), DType::kFloat32, Device::kCpu}},
                    store, o);
    reducer.markAllReady();  // round 0: the replicas record the start
    reducer.wait();
    using R = LowPrecisionDecentralized::Replica;
    for (uint32_t step = 1; step <= 4; ++step) {
      std::vector<float> grad = randomVector(weights.size(), 100 * step + static_cast<uint32_t>(rank));
      for (size_t i = 0; i < weights.size(); ++i) weights[i] -= 0.1f * grad[i];
      reducer.markAllReady();
      reducer.wait();
      check(std::memcmp(weights.data(), algorithm->replica(0, R::kSelf), 4000) == 0,
            "the weights are not the own replica");
      auto self = gather(g, algorithm->replica(0, R::kSelf), weights.size());
      auto left = gather(g, algorithm->replica(0, R::kLeft), weights.size());
      auto right = gather(g, algorithm->replica(0, R::kRight), weights.size());
      int l = (rank + size - 1) % size, r = (rank + 1) % size;
      check(left[static_cast<size_t>(rank)] == self[static_cast<size_t>(l)],
            "step " + std::to_string(step) + ": my left replica is not my left neighbour");
      check(right[static_cast<size_t>(rank)] == self[static_cast<size_t>(r)],
            "step " + std::to_string(step) + ": my right replica is not my right neighbour");
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, LowPrecision, ::testing::Values(2, 3, 4));

AsyncModelAverage::Options fast() {
  AsyncModelAverage::Options o;
  o.interval = 2ms;
  o.timeout = 20s;
  return o;
}

TEST(Async, AbortLeavesEveryRankWithTheSameWeightsAndResumes) {
  auto outcomes = runRanks(3, [](int rank, int size, Store& store) {
    Gloo g = connect(store, rank, size, "async");
    std::vector<float> a = randomVector(333, 1), b = randomVector(7, 2);
    AsyncModelAverage averager(
        g.comm, g.ops,
        {TensorSpec{"a", a.data(), a.size(), DType::kFloat32, Device::kCpu},
         TensorSpec{"b", b.data(), b.size(), DType::kFloat32, Device::kCpu}},
        [](uintptr_t) { return cpuStepOps(); }, fast());
    for (int cycle = 0; cycle < 20; ++cycle) {
      averager.resume();
      for (int step = 0; step < 30 + 10 * rank; ++step) {  // ranks step at different paces
        for (float& x : a) x += 0.01f * static_cast<float>(rank + 1);
        averager.stepBoundary(0);
        std::this_thread::sleep_for(200us);
      }
      averager.abort(0);
      auto all = gather(g, a.data(), a.size());
      for (const auto& other : all) check(other == all[0], "weights differ after abort");
      auto allB = gather(g, b.data(), b.size());
      for (const auto& other : allB) check(other == allB[0], "weights differ after abort");
    }
    check(averager.averages() >= 20, "fewer rounds than cycles");
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(Async, DestroyedWithARoundInFlight) {
  auto outcomes = runRanks(2, [](int rank, int size, Store& store) {
    Gloo g = connect(store, rank, size, "async-teardown");
    std::vector<float> w = randomVector(1 << 16, 3);
    {
      AsyncModelAverage averager(
          g.comm, g.ops, {TensorSpec{"w", w.data(), w.size(), DType::kFloat32, Device::kCpu}},
          [](uintptr_t) { return cpuStepOps(); }, fast());
      averager.resume();
      for (int step = 0; step < 50; ++step) averager.stepBoundary(0);
    }  // destroyed mid-round: the thread stops, no error, no leak
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(Async, ADeadPeerIsAnErrorAtTheNextStepBoundary) {
  auto outcomes = runRanks(2, [](int rank, int size, Store& store) {
    Gloo g = connect(store, rank, size, "async-dead");
    std::vector<float> w = randomVector(1000, 4);
    AsyncModelAverage averager(
        g.comm, g.ops, {TensorSpec{"w", w.data(), w.size(), DType::kFloat32, Device::kCpu}},
        [](uintptr_t) { return cpuStepOps(); }, fast());
    averager.resume();
    if (rank == 1) {
      for (int step = 0; step < 20; ++step) {
        averager.stepBoundary(0);
        std::this_thread::sleep_for(1ms);
      }
      _exit(0);  // dies with rounds in flight
    }
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      try {
        averager.stepBoundary(0);
      } catch (const Error&) {
        return 0;  // the failed round surfaced
      }
      std::this_thread::sleep_for(1ms);
    }
    throw std::runtime_error("the dead peer was never reported");
  });
  EXPECT_EQ(outcomes[0].exitCode, 0) << outcomes[0].message;
}

// A peer late by more than the round's timeout (but within the
// communicator's): the round fails as a TimeoutError at the next step
// boundary, and when the late peer's collectives finally run, the copies the
// failed round left queued touch nothing of the round that is gone (its flag
// was on the round's stack: ASan saw the worker read and write it).
TEST(Async, APeerLaterThanTheRoundTimeoutFailsTheRoundCleanly) {
  auto outcomes = runRanks(2, [](int rank, int size, Store& store) {
    GlooCommunicator::Options o = loopbackGloo("async-late");
    o.timeout = 10s;
    auto comm = std::make_shared<GlooCommunicator>(store, rank, size, o);
    auto ops = std::make_shared<CpuOps>(*comm);
    std::vector<float> w = randomVector(1 << 16, 5);
    AsyncModelAverage::Options options = fast();
    options.timeout = 1s;
    AsyncModelAverage averager(
        comm, ops, {TensorSpec{"w", w.data(), w.size(), DType::kFloat32, Device::kCpu}},
        [](uintptr_t) { return cpuStepOps(); }, options);
    averager.resume();
    if (rank == 1) std::this_thread::sleep_for(2500ms);  // slow, not dead
    bool failed = false;
    auto deadline = std::chrono::steady_clock::now() + (rank == 0 ? 8s : 3s);
    while (!failed && std::chrono::steady_clock::now() < deadline) {
      try {
        averager.stepBoundary(0);
      } catch (const TimeoutError&) {
        failed = true;
      } catch (const Error& e) {
        check(false, std::string("not a TimeoutError: ") + e.what());
      }
      std::this_thread::sleep_for(5ms);
    }
    check(rank == 1 || failed, "rank 0's round did not time out");
    // Rank 0 lives on while rank 1's collectives (and the queued copies)
    // run; new threads reuse the dead round's stack meanwhile.
    std::this_thread::sleep_for(rank == 0 ? 4s : 1s);
    return 0;
  });
  EXPECT_EQ(outcomes[0].exitCode, 0) << outcomes[0].message;
}

}  // namespace
}  // namespace bagua::testing
