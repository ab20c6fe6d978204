// Local SGD and DiLoCo over Gloo across forked ranks: the start points (and,
// without overlap, the weights) are bit-identical on every rank after every
// sync, for every compression; fragments sync at their scheduled steps
// only; an outer step with lr 1 and no momentum is the average of the
// weights; the bytes counted per sync are the ring allreduce's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "runtime/algorithms/diloco.h"
#include "runtime/algorithms/local_sgd.h"
#include "runtime/common/error.h"
#include "runtime/comm/counting_communicator.h"
#include "runtime/ops/cpu_ops.h"
#include "tests/runtime/gloo_loopback.h"
#include "tests/runtime/rank_harness.h"

namespace bagua::testing {
namespace {

using namespace std::chrono_literals;

struct Ranks {
  std::shared_ptr<GlooCommunicator> gloo;
  std::shared_ptr<CountingCommunicator> comm;
  std::shared_ptr<CpuOps> ops;
};

Ranks connect(Store& store, int rank, int size, const std::string& prefix) {
  Ranks r;
  r.gloo = std::make_shared<GlooCommunicator>(store, rank, size, loopbackGloo(prefix));
  r.comm = std::make_shared<CountingCommunicator>(r.gloo);
  r.ops = std::make_shared<CpuOps>(*r.gloo);
  return r;
}

// Every rank's copy of `n` floats (through the raw communicator: not counted).
std::vector<std::vector<float>> gather(Ranks& r, const void* data, size_t n) {
  std::vector<float> all(n * static_cast<size_t>(r.gloo->size()));
  r.gloo->allgather(data, all.data(), n * sizeof(float))->wait(20s);
  std::vector<std::vector<float>> out;
  for (int i = 0; i < r.gloo->size(); ++i) {
    out.emplace_back(all.begin() + static_cast<long>(n * i),
                     all.begin() + static_cast<long>(n * (i + 1)));
  }
  return out;
}

// A model of 4 tensors; a local step moves each weight by a rank-dependent amount.
struct Model {
  std::vector<std::vector<float>> tensors{std::vector<float>(700), std::vector<float>(3),
                                          std::vector<float>(500), std::vector<float>(11)};
  explicit Model(uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (auto& t : tensors) {
      for (float& x : t) x = dist(gen);
    }
  }
  std::vector<TensorSpec> specs() {
    std::vector<TensorSpec> out;
    for (size_t i = 0; i < tensors.size(); ++i) {
      out.push_back({"t" + std::to_string(i), tensors[i].data(), tensors[i].size(), DType::kFloat32,
                     Device::kCpu});
    }
    return out;
  }
  void localStep(int rank, int step) {
    std::mt19937 gen(static_cast<uint32_t>(1000 * step + rank));
    std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
    for (auto& t : tensors) {
      for (float& x : t) x += dist(gen);
    }
  }
};

StepOpsFactory cpuSteps() {
  return [](uintptr_t) { return cpuStepOps(); };
}

using DiLoCoCase = std::tuple<DiLoCo::Compression, int64_t /*fragments*/, int64_t /*tau*/>;
class DiLoCoRanks : public ::testing::TestWithParam<DiLoCoCase> {};

TEST_P(DiLoCoRanks, StartPointsAreIdenticalAndFragmentsFollowTheSchedule) {
  const auto [compression, fragments, tau] = GetParam();
  auto outcomes = runRanks(3, [&](int rank, int size, Store& store) {
    Ranks r = connect(store, rank, size, "diloco");
    Model model(7);  // identical start on every rank
    DiLoCo::Options o;
    o.syncEvery = 4;
    o.fragments = fragments;
    o.overlapSteps = tau;
    o.compression = compression;
    o.timeout = 20s;
    DiLoCo d(r.comm, r.ops, model.specs(), cpuSteps(), o);
    const SyncSchedule schedule{o.syncEvery, o.fragments, 0};
    for (int step = 1; step <= 13; ++step) {
      model.localStep(rank, step);
      d.afterStep(0);
      d.flush();
      for (size_t f = 0; f < d.fragments(); ++f) {
        int64_t expected = 0;
        for (int t = 1; t <= step; ++t) expected = schedule.syncs(f, t) ? t : expected;
        check(d.lastSendStep(f) == expected, "fragment " + std::to_string(f) + " at step " +
                                                 std::to_string(step) + ": last sync " +
                                                 std::to_string(d.lastSendStep(f)));
        const int64_t applied = expected == 0 || expected + tau > step ? 0 : expected + tau;
        check(applied == 0 || d.lastApplyStep(f) == applied, "fragment " + std::to_string(f) +
                                                                 "'s update did not land at step " +
                                                                 std::to_string(applied));
      }
      for (const DiLoCo::StateBuffer& b : d.stateBuffers()) {
        if (b.name.rfind("x0.", 0) != 0) continue;
        auto all = gather(r, d.startPoint(std::stoul(b.name.substr(3))), b.numel);
        for (const auto& other : all) {
          check(other == all[0], b.name + " differs across ranks at step " + std::to_string(step));
        }
      }
      if (tau == 0 && d.fragments() == 1 && d.lastSendStep(0) == step) {
        for (const auto& t : model.tensors) {
          auto all = gather(r, t.data(), t.size());
          for (const auto& other : all) check(other == all[0], "weights differ after a sync");
        }
      }
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Gloo, DiLoCoRanks,
                         ::testing::Values(DiLoCoCase{DiLoCo::Compression::kNone, 1, 0},
                                           DiLoCoCase{DiLoCo::Compression::kNone, 2, 2},
                                           DiLoCoCase{DiLoCo::Compression::kMinMaxUInt8, 2, 1},
                                           DiLoCoCase{DiLoCo::Compression::kMinMaxUInt4, 3, 0},
                                           DiLoCoCase{DiLoCo::Compression::kMinMaxUInt4, 2, 3}));

// lr 1, no momentum, no overlap: x0 - mean(x0 - x) = mean(x), on every rank
// the same bits; the bytes counted are a ring allreduce of the weights.
TEST(DiLoCo, PlainOuterStepIsTheAverageOfTheWeights) {
  auto outcomes = runRanks(3, [](int rank, int size, Store& store) {
    Ranks r = connect(store, rank, size, "diloco-avg");
    Model model(9);
    DiLoCo::Options o;
    o.syncEvery = 2;
    o.outerLr = 1.0;
    o.outerMomentum = 0.0;
    o.timeout = 20s;
    DiLoCo d(r.comm, r.ops, model.specs(), cpuSteps(), o);
    size_t elements = 0;
    for (const auto& t : model.tensors) elements += t.size();
    for (int step = 1; step <= 4; ++step) {
      model.localStep(rank, step);
      std::vector<std::vector<std::vector<float>>> before;
      for (const auto& t : model.tensors) before.push_back(gather(r, t.data(), t.size()));
      const uint64_t sent = r.comm->bytesSent();
      d.afterStep(0);
      if (step % 2 != 0) {
        check(r.comm->bytesSent() == sent, "bytes sent on a step without sync");
        continue;
      }
      const double ring = 2.0 * (size - 1) / size * 4.0 * static_cast<double>(elements);
      check(std::fabs(static_cast<double>(r.comm->bytesSent() - sent) - ring) < 2,
            "bytes counted per sync: " + std::to_string(r.comm->bytesSent() - sent) +
                ", expected " + std::to_string(ring));
      for (size_t t = 0; t < model.tensors.size(); ++t) {
        auto all = gather(r, model.tensors[t].data(), model.tensors[t].size());
        for (const auto& other : all) check(other == all[0], "weights differ after the sync");
        for (size_t i = 0; i < model.tensors[t].size(); ++i) {
          float mean = 0;
          for (int k = 0; k < size; ++k) mean += before[t][static_cast<size_t>(k)][i];
          mean /= static_cast<float>(size);
          check(std::fabs(model.tensors[t][i] - mean) < 1e-6f, "not the average");
        }
      }
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(LocalSgd, EverySyncIsTheExactAverage) {
  auto outcomes = runRanks(2, [](int rank, int size, Store& store) {
    Ranks r = connect(store, rank, size, "local-sgd");
    Model model(3);
    LocalSgd::Options o;
    o.syncEvery = 3;
    o.timeout = 20s;
    LocalSgd averager(r.comm, r.ops, model.specs(), cpuSteps(), o);
    for (int step = 1; step <= 7; ++step) {
      model.localStep(rank, step);
      std::vector<float> theirs = gather(r, model.tensors[0].data(), 700)[1 - rank];
      std::vector<float> mine = model.tensors[0];
      averager.afterStep(0);
      const bool synced = step % 3 == 0;
      check(averager.lastSyncStep() == (step / 3) * 3, "sync at the wrong step");
      for (size_t i = 0; i < mine.size(); ++i) {
        // Two ranks: (a + b) / 2 is exact in fp32 up to one rounding.
        const float want = synced ? (mine[i] + theirs[i]) * 0.5f : mine[i];
        check(model.tensors[0][i] == want,
              "step " + std::to_string(step) + " element " + std::to_string(i));
      }
    }
    check(averager.syncs() == 2, "two syncs in 7 steps");
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

// sync_every changed mid-run (autotune): updates in flight land at the
// change, the schedule restarts there, start points stay identical.
TEST(DiLoCo, ChangingSyncEveryRestartsTheScheduleThere) {
  auto outcomes = runRanks(2, [](int rank, int size, Store& store) {
    Ranks r = connect(store, rank, size, "diloco-change");
    Model model(5);
    DiLoCo::Options o;
    o.syncEvery = 4;
    o.fragments = 2;
    o.overlapSteps = 2;
    o.autoOverlap = true;
    o.timeout = 20s;
    DiLoCo d(r.comm, r.ops, model.specs(), cpuSteps(), o);
    for (int step = 1; step <= 5; ++step) {
      model.localStep(rank, step);
      d.afterStep(0);
    }
    // Fragment 1 synced at step 4 (due at 6), fragment 0 at step 2 (applied at 4).
    check(d.dueSteps() == std::vector<int64_t>({0, 6}), "due steps before the change");
    d.changeSyncEvery(8, 0);
    check(d.dueSteps() == std::vector<int64_t>({0, 0}), "an update still due after the change");
    check(d.lastApplyStep(1) == 5, "fragment 1's update did not land at the change");
    check(d.syncEvery() == 8 && d.scheduleBase() == 5 && d.overlapSteps() == 4,
          "H, base, tau after the change: " + std::to_string(d.syncEvery()) + ", " +
              std::to_string(d.scheduleBase()) + ", " + std::to_string(d.overlapSteps()));
    for (int step = 6; step <= 22; ++step) {
      model.localStep(rank, step);
      d.afterStep(0);
    }
    // From base 5 with H 8, F 2: fragment 0 at 9, 17; fragment 1 at 13, 21.
    check(d.lastSendStep(0) == 17 && d.lastSendStep(1) == 21, "sends not on the new schedule");
    check(d.lastApplyStep(0) == 21, "fragment 0's update did not land tau = 4 steps later");
    d.flush();
    for (const DiLoCo::StateBuffer& b : d.stateBuffers()) {
      if (b.name.rfind("x0.", 0) != 0) continue;
      auto all = gather(r, d.startPoint(std::stoul(b.name.substr(3))), b.numel);
      check(all[0] == all[1], b.name + " differs across ranks after the change");
    }
    bool refused = false;
    try {
      d.changeSyncEvery(1, 0);  // below F (and overlap needs 2)
    } catch (const InvalidArgument& e) {
      refused = std::string(e.what()).find("sync_every") != std::string::npos;
    }
    check(refused, "sync_every below the fragments was accepted");
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(LocalSgd, ChangingSyncEveryCountsFromThatStep) {
  auto outcomes = runRanks(2, [](int rank, int size, Store& store) {
    Ranks r = connect(store, rank, size, "local-sgd-change");
    Model model(4);
    LocalSgd::Options o;
    o.syncEvery = 3;
    o.timeout = 20s;
    LocalSgd averager(r.comm, r.ops, model.specs(), cpuSteps(), o);
    std::vector<int64_t> syncs;
    for (int step = 1; step <= 16; ++step) {
      if (step == 5) averager.changeSyncEvery(5);  // after local step 4
      model.localStep(rank, step);
      const int64_t before = averager.syncs();
      averager.afterStep(0);
      if (averager.syncs() != before) syncs.push_back(step);
    }
    check(syncs == std::vector<int64_t>({3, 9, 14}), "syncs not at 3, 9, 14");
    auto all = gather(r, model.tensors[2].data(), model.tensors[2].size());
    check(all[0] != all[1], "weights equal two steps after a sync");
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

}  // namespace
}  // namespace bagua::testing
