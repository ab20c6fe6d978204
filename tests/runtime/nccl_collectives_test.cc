// GPU suite: NcclCommunicator's reductions for every dtype x op (allreduce,
// reduce at every root, reduceScatter; the bitwise ops through the slice
// kernel), gather, scatter, alltoallv, a background communicator's
// collectives, zero-size operations and argument errors, on 1 and 2 ranks,
// one forked rank per GPU (the parent never touches CUDA); setup with a rank
// that never joins. Inputs are small integers: results are exact. Skips when
// there are fewer GPUs than ranks.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "runtime/comm/nccl_communicator.h"
#include "runtime/common/error.h"
#include "tests/runtime/collective_values.h"
#include "tests/runtime/rank_harness.h"

namespace bagua::testing {
namespace {

using namespace std::chrono_literals;

void cudaCheck(cudaError_t err, const char* what) {
  check(err == cudaSuccess, std::string(what) + ": " + cudaGetErrorString(err));
}

// GPUs visible, counted in a child (a CUDA context does not survive fork).
int gpuCount() {
  auto out = runRanks(1, [](int, int, Store&) {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
  });
  return out[0].exitCode;
}

// Device memory holding a copy of `host` (at least one byte).
class DeviceBytes {
 public:
  explicit DeviceBytes(const std::vector<uint8_t>& host) : bytes_(host.size()) {
    cudaCheck(cudaMalloc(&data_, bytes_ + 1), "cudaMalloc");
    if (bytes_ > 0) cudaCheck(cudaMemcpy(data_, host.data(), bytes_, cudaMemcpyHostToDevice), "up");
  }
  explicit DeviceBytes(size_t bytes, uint8_t fill = 0)
      : DeviceBytes(std::vector<uint8_t>(bytes, fill)) {}
  ~DeviceBytes() { cudaFree(data_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;

  void* get() { return data_; }
  std::vector<uint8_t> download() const {
    std::vector<uint8_t> host(bytes_);
    if (bytes_ > 0)
      cudaCheck(cudaMemcpy(host.data(), data_, bytes_, cudaMemcpyDeviceToHost), "down");
    return host;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

std::unique_ptr<NcclCommunicator> join(int rank, int size, Store& store,
                                       bool background = false) {
  int ndev = 0;
  cudaCheck(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
  cudaCheck(cudaSetDevice(rank % ndev), "cudaSetDevice");
  NcclCommunicator::Options o;
  o.timeout = 60s;
  o.background = background;
  return std::make_unique<NcclCommunicator>(store, rank, size, rank % ndev, o);
}

class NcclCollectives : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (gpuCount() < GetParam()) GTEST_SKIP() << "needs " << GetParam() << " GPUs";
  }
};

TEST_P(NcclCollectives, ReductionsEveryDtypeAndOp) {
  auto outcomes = runRanks(
      GetParam(),
      [](int rank, int size, Store& store) {
        auto comm = join(rank, size, store);
        const size_t n = 1001;
        for (DType dtype : allDTypes()) {
          for (ReduceOp op : opsFor(dtype)) {
            const std::string what = std::string(dtypeName(dtype)) + " " + reduceOpName(op);
            DeviceBytes data(inputBuffer(dtype, op, rank, n));
            comm->allreduce(data.get(), n, dtype, op)->wait(60s);
            const std::string a = checkReduction(dtype, op, size, data.download().data(), n);
            check(a.empty(), "allreduce: " + a);
            for (int root = 0; root < size; ++root) {
              DeviceBytes in(inputBuffer(dtype, op, rank, n));
              DeviceBytes out(n * dtypeSize(dtype), 0xab);
              comm->reduce(in.get(), rank == root ? out.get() : nullptr, n, dtype, op, root)
                  ->wait(60s);
              if (rank != root) continue;
              const std::string r = checkReduction(dtype, op, size, out.download().data(), n);
              check(r.empty(), "reduce: " + r);
            }
            const size_t per = 13;
            DeviceBytes rsIn(inputBuffer(dtype, op, rank, per * size));
            DeviceBytes rsOut(per * dtypeSize(dtype));
            comm->reduceScatter(rsIn.get(), rsOut.get(), per, dtype, op)->wait(60s);
            const std::string s =
                checkReduction(dtype, op, size, rsOut.download().data(), per, per * rank);
            check(s.empty(), "reduceScatter: " + s);
          }
        }
        return 0;
      },
      300s);
  EXPECT_EQ(describeFailures(outcomes), "");
}

uint8_t pattern(int from, int to, size_t k) { return static_cast<uint8_t>(from * 16 + to + k); }

TEST_P(NcclCollectives, GatherScatterAndAlltoallv) {
  auto outcomes = runRanks(
      GetParam(),
      [](int rank, int size, Store& store) {
        auto comm = join(rank, size, store);
        const size_t per = 333;
        for (int root = 0; root < size; ++root) {
          std::vector<uint8_t> mine(per);
          for (size_t k = 0; k < per; ++k) mine[k] = pattern(rank, root, k);
          DeviceBytes in(mine);
          DeviceBytes all(per * size);
          comm->gather(in.get(), rank == root ? all.get() : nullptr, per, root)->wait(60s);
          const std::vector<uint8_t> got = all.download();
          for (int r = 0; r < size && rank == root; ++r) {
            for (size_t k = 0; k < per; ++k)
              check(got[per * r + k] == pattern(r, root, k), "gather");
          }
          std::vector<uint8_t> blocks(per * size);
          for (int r = 0; r < size; ++r) {
            for (size_t k = 0; k < per; ++k) blocks[per * r + k] = pattern(root, r, k);
          }
          DeviceBytes src(blocks);
          DeviceBytes dst(per);
          comm->scatter(rank == root ? src.get() : nullptr, dst.get(), per, root)->wait(60s);
          const std::vector<uint8_t> mineBack = dst.download();
          for (size_t k = 0; k < per; ++k) check(mineBack[k] == pattern(root, rank, k), "scatter");
        }
        // alltoallv: rank i sends rank j (i + 2j) % 3 * 5 bytes (some empty),
        // blocks in reverse rank order.
        std::vector<size_t> sendBytes(size), recvBytes(size), sendOffsets(size), recvOffsets(size);
        for (int j = 0; j < size; ++j) {
          sendBytes[j] = static_cast<size_t>((rank + 2 * j) % 3) * 5;
          recvBytes[j] = static_cast<size_t>((j + 2 * rank) % 3) * 5;
        }
        size_t sendAt = 0, recvAt = 0;
        for (int j = size - 1; j >= 0; --j) {
          sendOffsets[j] = sendAt;
          recvOffsets[j] = recvAt;
          sendAt += sendBytes[j];
          recvAt += recvBytes[j];
        }
        std::vector<uint8_t> host(sendAt);
        for (int j = 0; j < size; ++j) {
          for (size_t k = 0; k < sendBytes[j]; ++k) host[sendOffsets[j] + k] = pattern(rank, j, k);
        }
        DeviceBytes in(host);
        DeviceBytes out(recvAt);
        comm->alltoallv(in.get(), sendBytes, sendOffsets, out.get(), recvBytes, recvOffsets)
            ->wait(60s);
        const std::vector<uint8_t> got = out.download();
        for (int j = 0; j < size; ++j) {
          for (size_t k = 0; k < recvBytes[j]; ++k) {
            check(got[recvOffsets[j] + k] == pattern(j, rank, k), "alltoallv");
          }
        }
        return 0;
      },
      300s);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// A background communicator (few channels, allgather point to point) gives
// the same bytes as the default one: allgather out of place and in place
// (the rank's block already in the output), alltoall, and a sum.
TEST_P(NcclCollectives, BackgroundCommunicatorGivesTheSameResults) {
  auto outcomes = runRanks(
      GetParam(),
      [](int rank, int size, Store& store) {
        auto comm = join(rank, size, store, /*background=*/true);
        check(comm->background(), "background option kept");
        const size_t per = 4097;
        std::vector<uint8_t> mine(per);
        for (size_t k = 0; k < per; ++k) mine[k] = pattern(rank, 7, k);
        DeviceBytes in(mine);
        DeviceBytes all(per * size);
        comm->allgather(in.get(), all.get(), per)->wait(60s);
        std::vector<uint8_t> got = all.download();
        for (int r = 0; r < size; ++r) {
          for (size_t k = 0; k < per; ++k) check(got[per * r + k] == pattern(r, 7, k), "allgather");
        }
        std::vector<uint8_t> placed(per * size, 0);
        for (size_t k = 0; k < per; ++k) placed[per * rank + k] = pattern(rank, 9, k);
        DeviceBytes inPlace(placed);
        void* own = static_cast<uint8_t*>(inPlace.get()) + per * rank;
        comm->allgather(own, inPlace.get(), per)->wait(60s);
        got = inPlace.download();
        for (int r = 0; r < size; ++r) {
          for (size_t k = 0; k < per; ++k)
            check(got[per * r + k] == pattern(r, 9, k), "allgather in place");
        }
        std::vector<uint8_t> blocks(per * size);
        for (int j = 0; j < size; ++j) {
          for (size_t k = 0; k < per; ++k) blocks[per * j + k] = pattern(rank, j, k);
        }
        DeviceBytes src(blocks);
        DeviceBytes dst(per * size);
        comm->alltoall(src.get(), dst.get(), per)->wait(60s);
        got = dst.download();
        for (int j = 0; j < size; ++j) {
          for (size_t k = 0; k < per; ++k) check(got[per * j + k] == pattern(j, rank, k), "alltoall");
        }
        std::vector<float> ones(1000, static_cast<float>(rank + 1));
        std::vector<uint8_t> raw(ones.size() * sizeof(float));
        std::memcpy(raw.data(), ones.data(), raw.size());
        DeviceBytes sum(raw);
        comm->allreduce(sum.get(), ones.size(), DType::kFloat32, ReduceOp::kSum)->wait(60s);
        raw = sum.download();
        std::memcpy(ones.data(), raw.data(), raw.size());
        const float expected = static_cast<float>(size * (size + 1) / 2);
        for (float v : ones) check(v == expected, "allreduce sum");
        return 0;
      },
      300s);
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST_P(NcclCollectives, ZeroSizeOperationsCompleteAndBadArgumentsAreRejected) {
  auto outcomes = runRanks(
      GetParam(),
      [](int rank, int size, Store& store) {
        auto comm = join(rank, size, store);
        const std::vector<size_t> zeros(size, 0);
        std::vector<std::shared_ptr<Work>> work = {
            comm->allreduce(nullptr, 0, DType::kInt64, ReduceOp::kBxor),
            comm->reduce(nullptr, nullptr, 0, DType::kInt8, ReduceOp::kBand, size - 1),
            comm->reduceScatter(nullptr, nullptr, 0, DType::kUInt8, ReduceOp::kBor),
            comm->gather(nullptr, nullptr, 0, 0),
            comm->scatter(nullptr, nullptr, 0, size - 1),
            comm->alltoallv(nullptr, zeros, zeros, nullptr, zeros, zeros),
            comm->barrier(),
        };
        for (auto& w : work) w->wait(60s);
        int rejected = 0;
        DeviceBytes buffer(64);
        auto expectInvalid = [&](auto&& call) {
          try {
            call();
          } catch (const InvalidArgument&) {
            ++rejected;
          }
        };
        expectInvalid([&] { comm->allreduce(buffer.get(), 4, DType::kFloat32, ReduceOp::kBand); });
        expectInvalid([&] {
          comm->reduce(buffer.get(), buffer.get(), 4, DType::kInt32, ReduceOp::kSum, size);
        });
        expectInvalid([&] { comm->gather(buffer.get(), buffer.get(), 4, -1); });
        expectInvalid([&] { comm->scatter(buffer.get(), buffer.get(), 4, size); });
        expectInvalid([&] { comm->send(buffer.get(), 4, rank); });
        expectInvalid([&] {
          comm->alltoallv(buffer.get(), std::vector<size_t>(size + 1, 0), zeros, buffer.get(),
                          zeros, zeros);
        });
        check(rejected == 6, std::to_string(rejected) + " of 6 bad calls rejected");
        comm->allreduce(buffer.get(), 4, DType::kInt32, ReduceOp::kMax)->wait(60s);
        return 0;
      },
      120s);
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, NcclCollectives, ::testing::Values(1, 2));

// A rank that never joins (crashed, or the world size is wrong): the others'
// setup fails within the timeout, naming it, instead of waiting in NCCL's
// init, which has no deadline. Rank 1 exits at once; rank 0 alone needs one GPU.
TEST(NcclSetup, ARankThatNeverJoinsFailsTheOthersWithinTheTimeoutNamingIt) {
  if (gpuCount() < 1) GTEST_SKIP() << "needs a GPU";
  auto outcomes = runRanks(
      2,
      [](int rank, int size, Store& store) {
        if (rank == 1) return 0;
        cudaCheck(cudaSetDevice(0), "cudaSetDevice");
        NcclCommunicator::Options o;
        o.timeout = 2s;
        auto start = std::chrono::steady_clock::now();
        try {
          NcclCommunicator comm(store, rank, size, 0, o);
        } catch (const TimeoutError& e) {
          std::string what = e.what();
          check(what.find("rank 1 of 2 did not arrive") != std::string::npos,
                "the error does not name rank 1: " + what);
          check(std::chrono::steady_clock::now() - start < 30s, "setup took over 30 s to fail");
          return 0;
        }
        check(false, "setup succeeded without rank 1");
        return 1;
      },
      90s);
  EXPECT_EQ(describeFailures(outcomes), "");
}

}  // namespace
}  // namespace bagua::testing
