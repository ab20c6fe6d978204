// Reducer + algorithms over Gloo across forked ranks: gradient allreduce
// exact against a reference; ByteGrad equal to the CPU reference of the same
// quantization and bit-identical on every rank; many buckets, sizes not
// divisible by the world size, tiny and empty tensors, out-of-order ready
// marks; bad input (mismatched registration, non-float tensors, double
// marks) and a dead rank give clear errors within a bound.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "runtime/algorithms/bytegrad.h"
#include "runtime/algorithms/gradient_allreduce.h"
#include "runtime/comm/gloo_communicator.h"
#include "runtime/common/error.h"
#include "runtime/ops/cpu_ops.h"
#include "runtime/reducer/reducer.h"
#include "tests/runtime/bytegrad_reference.h"
#include "tests/runtime/gloo_loopback.h"
#include "tests/runtime/rank_harness.h"
#include "tests/runtime/residual_slices.h"

namespace bagua::testing {
namespace {

using namespace std::chrono_literals;

// Sizes that exercise: empty, tiny, odd, several buckets at a 4 KiB cap.
const std::vector<size_t> kSizes = {0, 1, 3, 1000, 1023, 17, 4096, 5, 2000, 1};

// Rank r's gradient for tensor t: deterministic, different per rank.
std::vector<float> gradient(int rank, size_t tensor, size_t n) {
  std::mt19937 gen(static_cast<uint32_t>(1000 * rank + tensor));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> g(n);
  for (float& x : g) x = dist(gen);
  return g;
}

struct RankSetup {
  std::shared_ptr<GlooCommunicator> comm;
  std::shared_ptr<CpuOps> ops;
  std::vector<std::vector<float>> grads;
  std::vector<TensorSpec> specs;
};

RankSetup makeSetup(int rank, int size, Store& store, const std::string& prefix = "gloo") {
  RankSetup s;
  s.comm = std::make_shared<GlooCommunicator>(store, rank, size, loopbackGloo(prefix));
  s.ops = std::make_shared<CpuOps>(*s.comm);
  for (size_t t = 0; t < kSizes.size(); ++t) {
    s.grads.push_back(gradient(rank, t, kSizes[t]));
    s.specs.push_back(TensorSpec{"t" + std::to_string(t), s.grads.back().data(), kSizes[t],
                                 DType::kFloat32, Device::kCpu});
  }
  return s;
}

Reducer::Options smallBuckets() {
  Reducer::Options o;
  o.bucketBytes = 4096;
  o.timeout = 20s;
  return o;
}

// Marks tensors in a scrambled order; the Reducer must still launch buckets in order.
void markScrambled(Reducer& reducer, size_t count) {
  for (size_t i = 0; i < count; ++i) reducer.markReady((i * 7 + 3) % count);
}

class ReducerRanks : public ::testing::TestWithParam<int> {};

TEST_P(ReducerRanks, GradientAllreduceAveragesExactlyOverSteps) {
  auto outcomes = runRanks(GetParam(), [](int rank, int size, Store& store) {
    RankSetup s = makeSetup(rank, size, store);
    Reducer reducer(s.comm, s.ops, std::make_shared<GradientAllreduce>(), s.specs, store,
                    smallBuckets());
    check(reducer.buckets().size() > 2, "expected several buckets");
    for (int step = 0; step < 3; ++step) {
      // Write in place: the Reducer holds the registered data pointers.
      for (size_t t = 0; t < kSizes.size(); ++t) {
        std::vector<float> g = gradient(rank + step, t, kSizes[t]);
        std::copy(g.begin(), g.end(), s.grads[t].begin());
      }
      markScrambled(reducer, kSizes.size());
      reducer.wait();
      for (size_t t = 0; t < kSizes.size(); ++t) {
        std::vector<double> sums(kSizes[t], 0.0);
        for (int r = 0; r < size; ++r) {
          std::vector<float> g = gradient(r + step, t, kSizes[t]);
          for (size_t i = 0; i < g.size(); ++i) sums[i] += g[i];
        }
        for (size_t i = 0; i < kSizes[t]; ++i) {
          float want = static_cast<float>(sums[i] / size);
          check(std::fabs(s.grads[t][i] - want) <= 1e-6f * (1 + std::fabs(want)),
                "tensor " + std::to_string(t) + " element " + std::to_string(i));
        }
      }
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST_P(ReducerRanks, ByteGradMatchesTheReferenceBitForBitOnEveryRank) {
  auto outcomes = runRanks(GetParam(), [](int rank, int size, Store& store) {
    RankSetup s = makeSetup(rank, size, store);
    auto algorithm = std::make_shared<ByteGrad>();
    Reducer reducer(s.comm, s.ops, algorithm, s.specs, store, smallBuckets());
    markScrambled(reducer, kSizes.size());
    reducer.wait();
    for (const BucketLayout& b : reducer.buckets()) {
      check(b.paddedNumel % static_cast<size_t>(size) == 0, "bucket not aligned to world size");
      std::vector<std::vector<float>> inputs;
      for (int r = 0; r < size; ++r) {
        inputs.push_back(flattenBucket(b, [r](size_t t) { return gradient(r, t, kSizes[t]); }));
      }
      std::vector<float> want = bytegradReference(inputs, size);
      for (const BucketSlot& slot : b.slots) {
        const std::vector<float>& got = s.grads[slot.tensor];
        check(got.empty() || std::memcmp(got.data(), want.data() + slot.offset,
                                         got.size() * sizeof(float)) == 0,
              "tensor " + std::to_string(slot.tensor) + " differs from the reference");
      }
    }
    // Bit-identical across ranks: compare a digest through the store.
    uint64_t digest = 1469598103934665603ull;
    for (const auto& g : s.grads) {
      const auto* p = reinterpret_cast<const uint8_t*>(g.data());
      for (size_t i = 0; i < g.size() * sizeof(float); ++i)
        digest = (digest ^ p[i]) * 1099511628211ull;
    }
    std::vector<uint8_t> bytes(8);
    std::memcpy(bytes.data(), &digest, 8);
    store.set("digest/" + std::to_string(rank), bytes);
    for (int r = 0; r < size; ++r) {
      check(store.get("digest/" + std::to_string(r), 20s) == bytes, "rank results differ");
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST_P(ReducerRanks, ByteGradErrorFeedbackCarriesTheQuantizationError) {
  // With error feedback, the sum over steps of what was applied tracks the
  // sum of true averages much better than without it.
  auto outcomes = runRanks(GetParam(), [](int rank, int size, Store& store) {
    double driftPlain = 0;
    double driftFeedback = 0;
    for (bool feedback : {false, true}) {
      RankSetup s = makeSetup(rank, size, store, feedback ? "gloo-ef" : "gloo-plain");
      ByteGrad::Options o;
      o.errorFeedback = feedback;
      Reducer::Options ro = smallBuckets();
      ro.storePrefix = feedback ? "ef" : "plain";
      Reducer reducer(s.comm, s.ops, std::make_shared<ByteGrad>(o), s.specs, store, ro);
      size_t t = 6;  // the 4096-element tensor
      std::vector<double> applied(kSizes[t], 0), truth(kSizes[t], 0), mean(kSizes[t], 0);
      for (int r = 0; r < size; ++r) {
        std::vector<float> g = gradient(r, t, kSizes[t]);
        for (size_t i = 0; i < g.size(); ++i) mean[i] += static_cast<double>(g[i]) / size;
      }
      for (int step = 0; step < 20; ++step) {
        for (size_t k = 0; k < kSizes.size(); ++k) {
          std::vector<float> g = gradient(rank, k, kSizes[k]);
          std::copy(g.begin(), g.end(), s.grads[k].begin());
        }
        reducer.markAllReady();
        reducer.wait();
        for (size_t i = 0; i < kSizes[t]; ++i) {
          applied[i] += s.grads[t][i];
          truth[i] += mean[i];
        }
      }
      double drift = 0;
      for (size_t i = 0; i < kSizes[t]; ++i) drift += std::fabs(applied[i] - truth[i]);
      (feedback ? driftFeedback : driftPlain) = drift;
    }
    if (size == 1) {  // nothing is compressed: both exact
      check(driftFeedback == 0 && driftPlain == 0,
            "one rank drifted: " + std::to_string(driftFeedback) + " and " +
                std::to_string(driftPlain));
    } else {
      check(driftFeedback < 0.5 * driftPlain, "error feedback drift " +
                                                  std::to_string(driftFeedback) + " vs plain " +
                                                  std::to_string(driftPlain));
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST_P(ReducerRanks, ByteGradErrorFeedbackRecoversFromAnOverflowingStep) {
  // An Inf in one step's gradient (an overflowing loss-scaled step, which
  // the scaler skips) makes its chunk NaN in that step only: the residual
  // must not carry the NaN into every later step.
  auto outcomes = runRanks(GetParam(), [](int rank, int size, Store& store) {
    RankSetup s = makeSetup(rank, size, store, "gloo-ef-inf");
    ByteGrad::Options o;
    o.errorFeedback = true;
    Reducer::Options ro = smallBuckets();
    ro.storePrefix = "ef-inf";
    Reducer reducer(s.comm, s.ops, std::make_shared<ByteGrad>(o), s.specs, store, ro);
    const size_t t = 6;  // the 4096-element tensor
    for (int step = 0; step < 4; ++step) {
      for (size_t k = 0; k < kSizes.size(); ++k) {
        std::vector<float> g = gradient(rank, k, kSizes[k]);
        std::copy(g.begin(), g.end(), s.grads[k].begin());
      }
      if (step == 1 && rank == 0) s.grads[t][10] = INFINITY;
      reducer.markAllReady();
      reducer.wait();
      size_t nonFinite = 0;
      for (float v : s.grads[t]) nonFinite += std::isfinite(v) ? 0 : 1;
      if (step != 1) {
        check(nonFinite == 0, "step " + std::to_string(step) + ": " + std::to_string(nonFinite) +
                                  " non-finite elements");
      } else {
        check(nonFinite > 0, "the overflowing step came out finite");
      }
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, ReducerRanks, ::testing::Values(1, 2, 3, 4));

// An autotune rebuild replaces the Reducer with one of other buckets:
// ByteGrad's error-feedback residuals must follow their tensors, bit for
// bit (they restarted at zero before); a state of other tensors is refused.
TEST(ReducerState, ResidualsFollowTheirTensorsIntoOtherBuckets) {
  auto outcomes = runRanks(2, [](int rank, int size, Store& store) {
    RankSetup s = makeSetup(rank, size, store);
    ByteGrad::Options o;
    o.errorFeedback = true;
    auto small = std::make_shared<ByteGrad>(o);
    Reducer::Options ro = smallBuckets();
    ro.storePrefix = "state-small";
    Reducer first(s.comm, s.ops, small, s.specs, store, ro);
    first.markAllReady();
    first.wait();
    auto want = residualByTensor(first, *small, kSizes);
    bool nonzero = false;
    for (const auto& t : want)
      for (uint8_t byte : t) nonzero = nonzero || byte != 0;
    check(nonzero, "the first step left no residual to carry");
    std::unique_ptr<DeviceBuffer> packed = first.saveElementState();
    check(packed != nullptr, "ByteGrad with error feedback saved no state");

    auto large = std::make_shared<ByteGrad>(o);
    ro.bucketBytes = 1 << 20;
    ro.storePrefix = "state-large";
    Reducer second(s.comm, s.ops, large, s.specs, store, ro);
    check(second.buckets().size() == 1 && first.buckets().size() > 2, "expected other buckets");
    second.loadElementState(*packed);
    auto got = residualByTensor(second, *large, kSizes);
    for (size_t t = 0; t < kSizes.size(); ++t) {
      check(got[t] == want[t], "tensor " + std::to_string(t) + "'s residual did not follow it");
    }

    std::vector<TensorSpec> fewer(s.specs.begin(), s.specs.end() - 1);
    ro.storePrefix = "state-fewer";
    Reducer other(s.comm, s.ops, std::make_shared<ByteGrad>(o), fewer, store, ro);
    try {
      other.loadElementState(*packed);
      return 5;
    } catch (const InvalidArgument& e) {
      check(std::string(e.what()).find("saved algorithm state holds") != std::string::npos,
            e.what());
    }
    ro.storePrefix = "state-none";
    Reducer plain(s.comm, s.ops, std::make_shared<GradientAllreduce>(), s.specs, store, ro);
    check(plain.saveElementState() == nullptr, "gradient allreduce saved a state");
    plain.loadElementState(*packed);  // nothing to take: no error
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(ReducerErrors, MismatchedRegistrationIsNamed) {
  auto outcomes = runRanks(2, [](int rank, int size, Store& store) {
    RankSetup s = makeSetup(rank, size, store);
    if (rank == 1) s.specs[3].numel -= 1;  // rank 1 registers 999 elements
    try {
      Reducer reducer(s.comm, s.ops, std::make_shared<GradientAllreduce>(), s.specs, store,
                      smallBuckets());
    } catch (const InvalidArgument& e) {
      std::string m = e.what();
      check(m.find("tensor 3 (t3)") != std::string::npos && m.find("1000") != std::string::npos &&
                m.find("999") != std::string::npos,
            m);
      return 0;
    }
    return 5;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(ReducerErrors, NonFloatTensorsAreRejectedBeforeCommunicating) {
  auto outcomes = runRanks(2, [](int rank, int size, Store& store) {
    RankSetup s = makeSetup(rank, size, store);
    s.specs[4].dtype = DType::kInt32;  // on every rank: no registration mismatch
    try {
      Reducer reducer(s.comm, s.ops, std::make_shared<GradientAllreduce>(), s.specs, store,
                      smallBuckets());
    } catch (const InvalidArgument& e) {
      std::string m = e.what();
      check(m.find("tensor 4 (t4)") != std::string::npos &&
                m.find("dtype int32 is not supported") != std::string::npos,
            m);
      return 0;
    }
    return 5;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(ReducerErrors, DoubleMarkAndUnknownTensorAreRejected) {
  auto outcomes = runRanks(1, [](int rank, int size, Store& store) {
    RankSetup s = makeSetup(rank, size, store);
    Reducer reducer(s.comm, s.ops, std::make_shared<GradientAllreduce>(), s.specs, store,
                    smallBuckets());
    reducer.markReady(2);
    int caught = 0;
    try {
      reducer.markReady(2);
    } catch (const InvalidArgument&) {
      ++caught;
    }
    try {
      reducer.markReady(99);
    } catch (const InvalidArgument&) {
      ++caught;
    }
    reducer.wait();
    return caught == 2 ? 0 : 5;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(ReducerErrors, ARankThatDiesFailsTheStepWithinTheTimeout) {
  auto outcomes = runRanks(
      3,
      [](int rank, int size, Store& store) {
        RankSetup s = makeSetup(rank, size, store);
        Reducer::Options o = smallBuckets();
        o.timeout = 5s;
        Reducer reducer(s.comm, s.ops, std::make_shared<ByteGrad>(), s.specs, store, o);
        reducer.markAllReady();
        reducer.wait();
        if (rank == 1) _exit(0);  // dies between steps
        auto start = std::chrono::steady_clock::now();
        try {
          reducer.markAllReady();
          reducer.wait();
        } catch (const Error&) {
          check(std::chrono::steady_clock::now() - start < 15s, "the error came too late");
          return 0;
        }
        return 5;
      },
      60s);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// A reducer closed while its bucket waits for a peer later than the
// reducer's timeout (but within the communicator's): the bucket's buffers
// outlive it until the collective ends (ASan saw Gloo write a freed bucket),
// and the closing rank says so on stderr.
// With and without a wait() that timed out first (it forgets its buckets:
// only the reducer's teardown fence knows they still run).
class ClosedWithALatePeer : public ::testing::TestWithParam<bool> {};

TEST_P(ClosedWithALatePeer, KeepsTheBucketBuffers) {
  const bool waitFirst = GetParam();
  auto outcomes = runRanks(2, [waitFirst](int rank, int size, Store& store) {
    GlooCommunicator::Options go = loopbackGloo("late");
    go.timeout = 10s;
    auto comm = std::make_shared<GlooCommunicator>(store, rank, size, go);
    auto ops = std::make_shared<CpuOps>(*comm);
    // The caller's gradient: the late collective's copy-back still writes it
    // after the reducer is gone (the caller's memory is not the reducer's to
    // keep), so here it lives as long as the process.
    auto* g = new std::vector<float>(1 << 18, 1.0f);
    Reducer::Options o;
    o.timeout = 500ms;
    {
      Reducer reducer(comm, ops, std::make_shared<GradientAllreduce>(),
                      {TensorSpec{"g", g->data(), g->size(), DType::kFloat32, Device::kCpu}},
                      store, o);
      if (rank == 1) std::this_thread::sleep_for(2500ms);  // late, not dead
      reducer.markAllReady();
      if (rank == 1) reducer.wait();
      if (rank == 0 && waitFirst) {
        try {
          reducer.wait();  // times out (and forgets the bucket's Work)
          check(false, "the step finished without the late peer");
        } catch (const TimeoutError&) {
        }
      }
    }  // rank 0: closed with the bucket in flight, as an exception unwinding would
    std::this_thread::sleep_for(rank == 0 ? 3s : 500ms);  // rank 1's allreduce runs meanwhile
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(ReducerErrors, ClosedWithALatePeer, ::testing::Bool());

}  // namespace
}  // namespace bagua::testing
