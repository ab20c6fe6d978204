// Hierarchical communication and decentralized SGD through the Reducer over
// Gloo across forked ranks, with integer-valued data so every mean is exact:
// 4 ranks as 2 nodes of 2 (and 6 as 3 of 2) give the flat average; the
// weights of decentralized SGD are replaced only at wait(); shift_one pairs
// hold the pair's exact mean.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/algorithms/bytegrad.h"
#include "runtime/algorithms/decentralized.h"
#include "runtime/algorithms/gradient_allreduce.h"
#include "runtime/algorithms/hierarchical.h"
#include "runtime/comm/gloo_communicator.h"
#include "runtime/ops/cpu_ops.h"
#include "runtime/reducer/reducer.h"
#include "tests/runtime/gloo_loopback.h"
#include "tests/runtime/rank_harness.h"
#include "tests/runtime/residual_slices.h"

namespace bagua::testing {
namespace {

using namespace std::chrono_literals;

// Rank r's value of element i: small integers, so sums and means are exact.
float valueOf(int rank, size_t i) {
  return static_cast<float>((rank * 4 + static_cast<int>(i % 7)) * 8);
}

std::vector<TensorSpec> specsOf(std::vector<std::vector<float>>& data) {
  std::vector<TensorSpec> specs;
  for (size_t t = 0; t < data.size(); ++t) {
    specs.push_back(TensorSpec{"t" + std::to_string(t), data[t].data(), data[t].size(),
                               DType::kFloat32, Device::kCpu});
  }
  return specs;
}

class Hierarchy : public ::testing::TestWithParam<int> {};  // param: nodes of 2 ranks

TEST_P(Hierarchy, GradientAllreduceEqualsTheFlatMean) {
  const int nodes = GetParam(), perNode = 2, world = nodes * perNode;
  auto outcomes = runRanks(world, [&](int rank, int size, Store& store) {
    const int node = rank / perNode, local = rank % perNode;
    Gloo intra = connect(store, local, perNode, "intra" + std::to_string(node));
    Gloo inter;
    if (local == 0) inter = connect(store, node, nodes, "inter");
    auto algorithm = std::make_shared<Hierarchical>(
        std::make_shared<GradientAllreduce>(GradientAllreduce::Options{true}), inter.comm,
        inter.ops, nodes, ReduceOp::kAvg);
    std::vector<std::vector<float>> data = {std::vector<float>(1000), std::vector<float>(3),
                                            std::vector<float>(2500)};
    Reducer::Options o;
    o.bucketBytes = 2048;  // several buckets
    o.timeout = 20s;
    o.checkRank = rank;
    o.checkSize = size;
    Reducer reducer(intra.comm, intra.ops, algorithm, specsOf(data), store, o);
    for (int step = 0; step < 3; ++step) {
      for (auto& t : data) {
        for (size_t i = 0; i < t.size(); ++i) t[i] = valueOf(rank, i) + static_cast<float>(step);
      }
      for (size_t t = data.size(); t-- > 0;) reducer.markReady(t);
      reducer.wait();
      for (auto& t : data) {
        for (size_t i = 0; i < t.size(); ++i) {
          float sum = 0;
          for (int r = 0; r < size; ++r) sum += valueOf(r, i) + static_cast<float>(step);
          check(t[i] == sum / static_cast<float>(size),
                "element " + std::to_string(i) + ": " + std::to_string(t[i]));
        }
      }
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Nodes, Hierarchy, ::testing::Values(1, 2, 3));

// ByteGrad with error feedback inside the hierarchical form, 2 nodes of 2:
// the leaders hold residuals (of their node's average, compressed among the
// leaders), the others none; a Reducer with other buckets takes the
// leaders' over, tensor by tensor, bit for bit.
TEST(Hierarchy, LeadersCarryTheirResidualsIntoOtherBuckets) {
  const int nodes = 2, perNode = 2;
  auto outcomes = runRanks(nodes * perNode, [&](int rank, int size, Store& store) {
    const int node = rank / perNode, local = rank % perNode;
    Gloo intra = connect(store, local, perNode, "intra" + std::to_string(node));
    Gloo inter;
    if (local == 0) inter = connect(store, node, nodes, "inter");
    ByteGrad::Options ef;
    ef.errorFeedback = true;
    auto innerSmall = std::make_shared<ByteGrad>(ef);
    auto innerLarge = std::make_shared<ByteGrad>(ef);
    auto hier = [&](std::shared_ptr<ByteGrad> inner) {
      return std::make_shared<Hierarchical>(inner, inter.comm, inter.ops, nodes, ReduceOp::kAvg);
    };
    std::vector<std::vector<float>> data = {std::vector<float>(1000), std::vector<float>(3),
                                            std::vector<float>(2500)};
    for (auto& t : data) {
      for (size_t i = 0; i < t.size(); ++i) t[i] = std::sin(static_cast<float>(i * (rank + 1)));
    }
    Reducer::Options o;
    o.bucketBytes = 2048;
    o.timeout = 20s;
    o.checkRank = rank;
    o.checkSize = size;
    o.storePrefix = "hier-small";
    Reducer first(intra.comm, intra.ops, hier(innerSmall), specsOf(data), store, o);
    first.markAllReady();
    first.wait();
    std::unique_ptr<DeviceBuffer> packed = first.saveElementState();
    if (local != 0) {
      check(packed == nullptr, "a rank that does not lead saved a state");
      o.bucketBytes = 1 << 20;
      o.storePrefix = "hier-large";
      Reducer second(intra.comm, intra.ops, hier(innerLarge), specsOf(data), store, o);
      return 0;
    }
    check(packed != nullptr, "the leader saved no state");
    // The leader's residuals per tensor, from the 2 KiB buckets.
    std::vector<size_t> numel;
    for (const auto& t : data) numel.push_back(t.size());
    auto want = residualByTensor(first, *innerSmall, numel);
    bool nonzero = false;
    for (const auto& t : want)
      for (uint8_t byte : t) nonzero = nonzero || byte != 0;
    check(nonzero, "the leaders' step left no residual");
    o.bucketBytes = 1 << 20;
    o.storePrefix = "hier-large";
    Reducer second(intra.comm, intra.ops, hier(innerLarge), specsOf(data), store, o);
    second.loadElementState(*packed);
    auto got = residualByTensor(second, *innerLarge, numel);
    for (size_t t = 0; t < data.size(); ++t) {
      check(got[t] == want[t], "tensor " + std::to_string(t) + "'s residual did not follow it");
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(Decentralized, WeightsChangeOnlyAtWaitAndPairsHoldTheirMean) {
  const int world = 4;
  auto outcomes = runRanks(world, [&](int rank, int size, Store& store) {
    Gloo g = connect(store, rank, size, "dec");
    auto algorithm = std::make_shared<Decentralized>(
        Decentralized::Options{Decentralized::PeerSelection::kShiftOne});
    std::vector<std::vector<float>> weights = {std::vector<float>(300), std::vector<float>(7)};
    // Every rank simulates every rank's weights (they start as a function
    // of the rank) to know what its peer holds.
    std::vector<std::vector<std::vector<float>>> all(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
      for (const auto& t : weights) {
        std::vector<float> v(t.size());
        for (size_t i = 0; i < v.size(); ++i) v[i] = valueOf(r, i);
        all[static_cast<size_t>(r)].push_back(v);
      }
    }
    weights = all[static_cast<size_t>(rank)];
    Reducer::Options o;
    o.timeout = 20s;
    Reducer reducer(g.comm, g.ops, algorithm, specsOf(weights), store, o);
    for (size_t step = 0; step < 3; ++step) {
      std::vector<std::vector<float>> before = weights;
      reducer.markAllReady();
      // Launched and finished, but the weights are untouched until wait().
      g.ops->fence("test")->wait(20s);
      check(weights == before, "weights changed before wait()");
      reducer.wait();
      auto next = all;
      for (int r = 0; r < size; ++r) {
        int p = Decentralized::shiftOnePeer(r, size, step);
        for (size_t t = 0; t < weights.size(); ++t) {
          for (size_t i = 0; i < weights[t].size(); ++i) {
            next[static_cast<size_t>(r)][t][i] =
                (all[static_cast<size_t>(r)][t][i] + all[static_cast<size_t>(p)][t][i]) / 2;
          }
        }
      }
      all = next;
      check(weights == all[static_cast<size_t>(rank)],
            "step " + std::to_string(step) + ": not the mean with rank " +
                std::to_string(Decentralized::shiftOnePeer(rank, size, step)));
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

}  // namespace
}  // namespace bagua::testing
