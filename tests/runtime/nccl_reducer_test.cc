// GPU suite: the Reducer and its algorithms over NCCL with the CUDA kernels,
// one forked rank per GPU (the parent never touches CUDA). ByteGrad results
// must equal the CPU reference of the same quantization bit for bit and be
// identical on every rank; gradient allreduce must average exactly (inputs
// are small integers). Skips without two GPUs.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "runtime/algorithms/bytegrad.h"
#include "runtime/algorithms/gradient_allreduce.h"
#include "runtime/comm/nccl_communicator.h"
#include "runtime/common/error.h"
#include "runtime/ops/cuda_ops.h"
#include "runtime/reducer/reducer.h"
#include "tests/runtime/bytegrad_reference.h"
#include "tests/runtime/rank_harness.h"

namespace bagua::testing {
namespace {

using namespace std::chrono_literals;

// GPUs visible, counted in a child so the parent never initialises CUDA
// (a CUDA context does not survive fork).
int gpuCount() {
  auto out = runRanks(1, [](int, int, Store&) {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
  });
  return out[0].exitCode;
}

const std::vector<size_t> kSizes = {0, 1, 3, 1000, 1023, 17, 1 << 20, 5, 2000, 1};

std::vector<float> gradient(int rank, size_t tensor, size_t n, bool integers) {
  std::mt19937 gen(static_cast<uint32_t>(1000 * rank + tensor));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] = integers ? static_cast<float>((rank + 1) * static_cast<int>(i % 7)) : dist(gen);
  }
  return g;
}

// Runs one step of `algorithm` on every rank's GPU; returns the host copies.
std::vector<std::vector<float>> runStep(int rank, int size, Store& store,
                                        std::shared_ptr<Algorithm> algorithm, bool integers) {
  int ndev = 0;
  check(cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0, "no GPU");
  NcclCommunicator::Options co;
  co.timeout = 60s;
  auto comm = std::make_shared<NcclCommunicator>(store, rank, size, rank % ndev, co);
  auto ops = std::make_shared<CudaOps>(*comm);
  std::vector<void*> device(kSizes.size(), nullptr);
  std::vector<TensorSpec> specs;
  for (size_t t = 0; t < kSizes.size(); ++t) {
    std::vector<float> g = gradient(rank, t, kSizes[t], integers);
    if (!g.empty()) {
      check(cudaMalloc(&device[t], g.size() * sizeof(float)) == cudaSuccess, "cudaMalloc");
      check(cudaMemcpy(device[t], g.data(), g.size() * sizeof(float), cudaMemcpyHostToDevice) ==
                cudaSuccess,
            "cudaMemcpy");
    }
    specs.push_back(
        TensorSpec{"t" + std::to_string(t), device[t], kSizes[t], DType::kFloat32, Device::kCuda});
  }
  std::vector<std::vector<float>> out;
  {
    Reducer::Options ro;
    ro.bucketBytes = 256 << 10;
    ro.timeout = 60s;
    Reducer reducer(comm, ops, algorithm, specs, store, ro);
    reducer.markAllReady();
    reducer.wait();
    for (size_t t = 0; t < kSizes.size(); ++t) {
      std::vector<float> h(kSizes[t]);
      if (!h.empty()) {
        check(cudaMemcpy(h.data(), device[t], h.size() * sizeof(float), cudaMemcpyDeviceToHost) ==
                  cudaSuccess,
              "copy back");
      }
      out.push_back(h);
    }
  }
  for (void* p : device) cudaFree(p);
  return out;
}

TEST(NcclReducer, GradientAllreduceAveragesExactly) {
  if (gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs";
  auto outcomes = runRanks(
      2,
      [](int rank, int size, Store& store) {
        auto got = runStep(rank, size, store, std::make_shared<GradientAllreduce>(), true);
        for (size_t t = 0; t < kSizes.size(); ++t) {
          for (size_t i = 0; i < kSizes[t]; ++i) {
            float want = static_cast<float>(3 * static_cast<int>(i % 7)) / 2.0f;  // (1+2)/2 * k
            check(got[t][i] == want,
                  "tensor " + std::to_string(t) + " element " + std::to_string(i));
          }
        }
        return 0;
      },
      120s);
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(NcclReducer, ByteGradEqualsTheCpuReferenceBitForBit) {
  if (gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs";
  auto outcomes = runRanks(
      2,
      [](int rank, int size, Store& store) {
        auto got = runStep(rank, size, store, std::make_shared<ByteGrad>(), false);
        // Rebuild every bucket's inputs and run ByteGrad's steps on the CPU.
        std::vector<TensorSpec> specs;
        for (size_t t = 0; t < kSizes.size(); ++t) {
          specs.push_back(TensorSpec{"", nullptr, kSizes[t], DType::kFloat32, Device::kCuda});
        }
        for (const BucketLayout& b : planBuckets(specs, 256 << 10, static_cast<size_t>(size))) {
          std::vector<std::vector<float>> inputs;
          for (int r = 0; r < size; ++r) {
            inputs.push_back(
                flattenBucket(b, [r](size_t t) { return gradient(r, t, kSizes[t], false); }));
          }
          std::vector<float> want = bytegradReference(inputs, size);
          for (const BucketSlot& s : b.slots) {
            check(std::memcmp(got[s.tensor].data(), want.data() + s.offset,
                              kSizes[s.tensor] * sizeof(float)) == 0,
                  "tensor " + std::to_string(s.tensor) + " differs from the CPU reference");
          }
        }
        return 0;
      },
      120s);
  EXPECT_EQ(describeFailures(outcomes), "");
}

}  // namespace
}  // namespace bagua::testing
