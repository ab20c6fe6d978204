// GlooCommunicator's reductions for every dtype x op (allreduce, reduce at
// every root, reduceScatter), the data movement added with them (gather,
// scatter, alltoallv), zero-size operations and argument errors, across
// forked ranks (1 to 4). Inputs are small integers: results are exact.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "runtime/comm/gloo_communicator.h"
#include "runtime/common/error.h"
#include "tests/runtime/collective_values.h"
#include "tests/runtime/gloo_loopback.h"
#include "tests/runtime/rank_harness.h"

namespace bagua::testing {
namespace {

using namespace std::chrono_literals;

void expectNoMismatch(const std::string& mismatch, const std::string& where) {
  check(mismatch.empty(), where + ": " + mismatch);
}

class GlooCollectives : public ::testing::TestWithParam<int> {};

TEST_P(GlooCollectives, AllreduceEveryDtypeAndOp) {
  auto outcomes = runRanks(GetParam(), [](int rank, int size, Store& store) {
    GlooCommunicator comm(store, rank, size, loopbackGloo());
    const size_t n = 1001;
    for (DType dtype : allDTypes()) {
      for (ReduceOp op : opsFor(dtype)) {
        std::vector<uint8_t> data = inputBuffer(dtype, op, rank, n);
        comm.allreduce(data.data(), n, dtype, op)->wait(20s);
        expectNoMismatch(checkReduction(dtype, op, size, data.data(), n), "allreduce");
      }
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST_P(GlooCollectives, ReduceAtEveryRootLeavesOtherRanksAlone) {
  auto outcomes = runRanks(GetParam(), [](int rank, int size, Store& store) {
    GlooCommunicator comm(store, rank, size, loopbackGloo());
    const size_t n = 257;
    for (DType dtype : allDTypes()) {
      for (ReduceOp op : opsFor(dtype)) {
        for (int root = 0; root < size; ++root) {
          const std::vector<uint8_t> in = inputBuffer(dtype, op, rank, n);
          std::vector<uint8_t> out(in.size(), 0xab);
          comm.reduce(in.data(), out.data(), n, dtype, op, root)->wait(20s);
          check(in == inputBuffer(dtype, op, rank, n), "reduce wrote its input");
          if (rank == root) {
            expectNoMismatch(checkReduction(dtype, op, size, out.data(), n), "reduce");
          } else {
            check(out == std::vector<uint8_t>(in.size(), 0xab), "reduce wrote a non-root's out");
          }
          // In place at the root; null out elsewhere.
          std::vector<uint8_t> data = inputBuffer(dtype, op, rank, n);
          void* target = rank == root ? data.data() : nullptr;
          comm.reduce(data.data(), target, n, dtype, op, root)->wait(20s);
          if (rank == root) {
            expectNoMismatch(checkReduction(dtype, op, size, data.data(), n), "reduce in place");
          } else {
            check(data == inputBuffer(dtype, op, rank, n), "reduce wrote a non-root's data");
          }
        }
      }
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST_P(GlooCollectives, ReduceScatterEveryDtypeAndOp) {
  auto outcomes = runRanks(GetParam(), [](int rank, int size, Store& store) {
    GlooCommunicator comm(store, rank, size, loopbackGloo());
    const size_t per = 13;
    for (DType dtype : allDTypes()) {
      for (ReduceOp op : opsFor(dtype)) {
        const std::vector<uint8_t> in = inputBuffer(dtype, op, rank, per * size);
        std::vector<uint8_t> out(per * dtypeSize(dtype));
        comm.reduceScatter(in.data(), out.data(), per, dtype, op)->wait(20s);
        expectNoMismatch(checkReduction(dtype, op, size, out.data(), per, per * rank),
                         "reduceScatter");
      }
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST_P(GlooCollectives, IntegerAverageTruncatesTowardZero) {
  auto outcomes = runRanks(GetParam(), [](int rank, int size, Store& store) {
    GlooCommunicator comm(store, rank, size, loopbackGloo());
    // Rank 0 holds -7 and 7, the others 0: the mean is +-7 / size, truncated.
    std::vector<int32_t> v = {rank == 0 ? -7 : 0, rank == 0 ? 7 : 0};
    comm.allreduce(v.data(), 2, DType::kInt32, ReduceOp::kAvg)->wait(20s);
    check(v[0] == -7 / size && v[1] == 7 / size,
          "int32 mean " + std::to_string(v[0]) + ", " + std::to_string(v[1]));
    // int8 sums wrap before the division: 100 * size as int8, then / size.
    std::vector<int8_t> w = {100};
    comm.allreduce(w.data(), 1, DType::kInt8, ReduceOp::kAvg)->wait(20s);
    check(w[0] == static_cast<int8_t>(100 * size) / size, "int8 mean " + std::to_string(w[0]));
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

// Each rank's value is near the dtype's largest: their sum overflows, their
// mean does not (float16 averages were summed in float16: inf).
TEST_P(GlooCollectives, HalfPrecisionAveragesDoNotOverflow) {
  auto outcomes = runRanks(GetParam(), [](int rank, int size, Store& store) {
    GlooCommunicator comm(store, rank, size, loopbackGloo());
    for (auto [dtype, value] : {std::pair{DType::kFloat16, 60000.0}, {DType::kBFloat16, 3e38}}) {
      const std::string name = dtypeName(dtype);
      auto filled = [&, dtype = dtype, value = value](size_t n) {
        std::vector<uint8_t> bytes(n * dtypeSize(dtype));
        for (size_t i = 0; i < n; ++i) storeValue(dtype, bytes.data(), i, value);
        return bytes;
      };
      // What the dtype makes of `value` (bf16 rounds 3e38).
      const double want = loadValue(dtype, filled(1).data(), 0);
      auto expectMean = [&, dtype = dtype](const std::vector<uint8_t>& got, size_t n,
                                           const std::string& what) {
        for (size_t i = 0; i < n; ++i) {
          check(loadValue(dtype, got.data(), i) == want,
                name + " " + what + " element " + std::to_string(i) + ": " +
                    std::to_string(loadValue(dtype, got.data(), i)));
        }
      };
      std::vector<uint8_t> data = filled(5);
      comm.allreduce(data.data(), 5, dtype, ReduceOp::kAvg)->wait(20s);
      expectMean(data, 5, "allreduce");
      std::vector<uint8_t> in = filled(5), out = filled(5);
      comm.reduce(in.data(), out.data(), 5, dtype, ReduceOp::kAvg, 0)->wait(20s);
      if (rank == 0) expectMean(out, 5, "reduce");
      // A value per chunk (each near the largest), so a chunk from the wrong
      // place shows: every rank holds the same, so chunk r's mean is its value.
      std::vector<uint8_t> all(3 * static_cast<size_t>(size) * dtypeSize(dtype));
      for (size_t i = 0; i < 3 * static_cast<size_t>(size); ++i) {
        storeValue(dtype, all.data(), i, value * (1.0 - 0.05 * static_cast<double>(i / 3)));
      }
      std::vector<uint8_t> mine = filled(3);
      comm.reduceScatter(all.data(), mine.data(), 3, dtype, ReduceOp::kAvg)->wait(20s);
      const double chunk = loadValue(dtype, all.data(), 3 * static_cast<size_t>(rank));
      for (size_t i = 0; i < 3; ++i) {
        check(loadValue(dtype, mine.data(), i) == chunk,
              name + " reduceScatter element " + std::to_string(i) + ": " +
                  std::to_string(loadValue(dtype, mine.data(), i)));
      }
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

// Byte k of the block rank `from` sends rank `to`.
uint8_t pattern(int from, int to, size_t k) { return static_cast<uint8_t>(from * 16 + to + k); }

TEST_P(GlooCollectives, GatherAndScatterAtEveryRoot) {
  auto outcomes = runRanks(GetParam(), [](int rank, int size, Store& store) {
    GlooCommunicator comm(store, rank, size, loopbackGloo());
    const size_t per = 333;
    for (int root = 0; root < size; ++root) {
      std::vector<uint8_t> mine(per);
      for (size_t k = 0; k < per; ++k) mine[k] = pattern(rank, root, k);
      std::vector<uint8_t> all(rank == root ? per * size : 0);
      comm.gather(mine.data(), rank == root ? all.data() : nullptr, per, root)->wait(20s);
      for (int r = 0; r < size && rank == root; ++r) {
        for (size_t k = 0; k < per; ++k) check(all[per * r + k] == pattern(r, root, k), "gather");
      }
      std::vector<uint8_t> blocks(rank == root ? per * size : 0);
      for (int r = 0; r < size && rank == root; ++r) {
        for (size_t k = 0; k < per; ++k) blocks[per * r + k] = pattern(root, r, k);
      }
      std::vector<uint8_t> got(per);
      comm.scatter(rank == root ? blocks.data() : nullptr, got.data(), per, root)->wait(20s);
      for (size_t k = 0; k < per; ++k) check(got[k] == pattern(root, rank, k), "scatter");
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

// Bytes rank `from` sends rank `to` in the alltoallv test (some empty).
size_t blockBytes(int from, int to) { return static_cast<size_t>((from * 3 + to * 5) % 4) * 7; }

// Offsets of the blocks in rank order (packed) or in reverse order with a
// 3-byte gap before each (not packed).
std::vector<size_t> offsetsOf(const std::vector<size_t>& bytes, bool packed) {
  std::vector<size_t> offsets(bytes.size());
  size_t at = 0;
  for (size_t j = 0; j < bytes.size(); ++j) {
    const size_t r = packed ? j : bytes.size() - 1 - j;
    at += packed ? 0 : 3;
    offsets[r] = at;
    at += bytes[r];
  }
  return offsets;
}

TEST_P(GlooCollectives, AlltoallvWithUnevenAndEmptyBlocks) {
  auto outcomes = runRanks(GetParam(), [](int rank, int size, Store& store) {
    GlooCommunicator comm(store, rank, size, loopbackGloo());
    std::vector<size_t> sendBytes(size), recvBytes(size);
    for (int j = 0; j < size; ++j) {
      sendBytes[j] = blockBytes(rank, j);
      recvBytes[j] = blockBytes(j, rank);
    }
    for (bool packed : {true, false}) {
      const std::vector<size_t> sendOffsets = offsetsOf(sendBytes, packed);
      const std::vector<size_t> recvOffsets = offsetsOf(recvBytes, packed);
      std::vector<uint8_t> in(std::accumulate(sendBytes.begin(), sendBytes.end(), size_t{0}) +
                              3 * size);
      for (int j = 0; j < size; ++j) {
        for (size_t k = 0; k < sendBytes[j]; ++k) in[sendOffsets[j] + k] = pattern(rank, j, k);
      }
      std::vector<uint8_t> out(std::accumulate(recvBytes.begin(), recvBytes.end(), size_t{0}) +
                               3 * size);
      comm.alltoallv(in.data(), sendBytes, sendOffsets, out.data(), recvBytes, recvOffsets)
          ->wait(20s);
      for (int j = 0; j < size; ++j) {
        for (size_t k = 0; k < recvBytes[j]; ++k) {
          check(out[recvOffsets[j] + k] == pattern(j, rank, k), std::string("alltoallv ") +
                                                                    (packed ? "packed" : "gapped") +
                                                                    " block " + std::to_string(j));
        }
      }
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST_P(GlooCollectives, ZeroSizeOperationsComplete) {
  auto outcomes = runRanks(GetParam(), [](int rank, int size, Store& store) {
    GlooCommunicator comm(store, rank, size, loopbackGloo());
    const std::vector<size_t> zeros(size, 0);
    std::vector<std::shared_ptr<Work>> work = {
        comm.allreduce(nullptr, 0, DType::kInt64, ReduceOp::kBxor),
        comm.reduce(nullptr, nullptr, 0, DType::kFloat64, ReduceOp::kAvg, size - 1),
        comm.reduceScatter(nullptr, nullptr, 0, DType::kUInt8, ReduceOp::kMax),
        comm.allgather(nullptr, nullptr, 0),
        comm.gather(nullptr, nullptr, 0, 0),
        comm.scatter(nullptr, nullptr, 0, size - 1),
        comm.alltoall(nullptr, nullptr, 0),
        comm.alltoallv(nullptr, zeros, zeros, nullptr, zeros, zeros),
        comm.broadcast(nullptr, 0, 0),
        comm.barrier(),
    };
    for (auto& w : work) w->wait(20s);
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, GlooCollectives, ::testing::Values(1, 2, 3, 4));

// Runs `call`; "" when it throws InvalidArgument whose message holds `text`.
template <typename Call>
std::string rejects(Call&& call, const std::string& text) {
  try {
    call();
  } catch (const InvalidArgument& e) {
    return std::string(e.what()).find(text) == std::string::npos
               ? std::string("message lacks '") + text + "': " + e.what()
               : "";
  }
  return "not rejected: expected '" + text + "'";
}

TEST(GlooCollectiveErrors, BadArgumentsAreRejectedBeforeAnythingRuns) {
  auto outcomes = runRanks(2, [](int rank, int size, Store& store) {
    GlooCommunicator comm(store, rank, size, loopbackGloo());
    float f[4] = {};
    int32_t i[4] = {};
    const std::vector<size_t> two(2, 0), three(3, 0);
    const std::vector<std::string> failures = {
        rejects([&] { comm.allreduce(f, 4, DType::kFloat32, ReduceOp::kBand); },
                "bitwise reductions need an integer dtype, got float32"),
        rejects([&] { comm.reduceScatter(f, f, 2, DType::kBFloat16, ReduceOp::kBxor); },
                "got bfloat16"),
        rejects([&] { comm.reduce(i, i, 4, DType::kInt32, ReduceOp::kSum, 2); },
                "reduce: root 2 is not a rank of 2"),
        rejects([&] { comm.reduce(f, f, 4, DType::kFloat64, ReduceOp::kBor, 0); }, "got float64"),
        rejects([&] { comm.gather(i, i, 4, -1); }, "gather: root -1"),
        rejects([&] { comm.scatter(i, i, 4, 5); }, "scatter: root 5"),
        rejects([&] { comm.gather(i, nullptr, 4, rank); }, "gather: the root's out is null"),
        rejects([&] { comm.broadcast(i, 4, 2); }, "broadcast: root 2"),
        rejects([&] { comm.send(i, 4, rank); }, "is not another rank"),
        rejects([&] { comm.recv(i, 4, 7); }, "recv: peer 7"),
        rejects([&] { comm.alltoallv(i, three, two, i, two, two); },
                "sendBytes has 3 entries, expected one per rank (2)"),
        rejects(
            [&] {
              comm.alltoallv(i, {1, 1}, two, i, {2, 2}, two);
            },
            "sends itself 1 bytes but receives 2"),
    };
    for (const std::string& f : failures) check(f.empty(), f);
    // Nothing was enqueued: the communicator still works.
    comm.allreduce(i, 4, DType::kInt32, ReduceOp::kBor)->wait(20s);
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

}  // namespace
}  // namespace bagua::testing
