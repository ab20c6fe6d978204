// The CUDA bitwise slice reduction against reduceSlicesCpu, byte for byte
// (suite 'gpu'): every integer dtype and bitwise op, 1 to 5 slices, odd and
// even lengths through both the word and the byte path, in place into slice
// 0, and the argument errors. Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kernels/cpu_reduce.h"
#include "kernels/reduce_slices_cuda.h"

namespace bagua::kernels {
namespace {

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << cudaGetErrorString(cudaGetLastError())

std::vector<uint8_t> randomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    b = static_cast<uint8_t>(seed >> 56);
  }
  return v;
}

class ReduceSlicesCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU: " << cudaGetErrorString(err);
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  // One case: `offset` bytes into the allocations (0: the word path when the
  // length allows; 1: the byte path).
  void check(DType dtype, ReduceOp op, size_t n, int nSlices, size_t offset, bool inPlace) {
    const size_t bytes = n * dtypeSize(dtype) * nSlices;
    const std::vector<uint8_t> host = randomBytes(bytes, n * 31 + nSlices);
    std::vector<uint8_t> want(n * dtypeSize(dtype));
    reduceSlicesCpu(dtype, op, host.data(), n, nSlices, want.data());
    void* slicesBase = nullptr;
    void* outBase = nullptr;
    ASSERT_CUDA(cudaMalloc(&slicesBase, bytes + 16));
    ASSERT_CUDA(cudaMalloc(&outBase, want.size() + 16));
    auto* slices = static_cast<uint8_t*>(slicesBase);
    auto* out = static_cast<uint8_t*>(outBase);
    ASSERT_CUDA(cudaMemcpy(slices + offset, host.data(), bytes, cudaMemcpyHostToDevice));
    uint8_t* target = inPlace ? slices + offset : out + offset;
    ASSERT_CUDA(reduceSlices(dtype, op, slices + offset, n, nSlices, target, stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    std::vector<uint8_t> got(want.size());
    ASSERT_CUDA(cudaMemcpy(got.data(), target, got.size(), cudaMemcpyDeviceToHost));
    cudaFree(slices);
    cudaFree(out);
    EXPECT_EQ(got, want) << dtypeName(dtype) << " " << reduceOpName(op) << " n " << n << " slices "
                         << nSlices << " offset " << offset << " in place " << inPlace;
  }

  cudaStream_t stream_ = nullptr;
};

TEST_F(ReduceSlicesCuda, EqualsTheCpuReferenceForEveryIntegerDtypeAndBitwiseOp) {
  for (DType dtype : {DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64}) {
    for (ReduceOp op : {ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor}) {
      for (size_t n : {size_t{1}, size_t{7}, size_t{1024}, size_t{100003}}) {
        for (int nSlices : {1, 2, 3, 5}) {
          for (size_t offset : {size_t{0}, size_t{1}}) {
            check(dtype, op, n, nSlices, offset, false);
          }
          check(dtype, op, n, nSlices, 0, true);
        }
      }
    }
  }
}

TEST_F(ReduceSlicesCuda, RejectsBadArgumentsBeforeLaunching) {
  EXPECT_THROW(reduceSlices(DType::kFloat32, ReduceOp::kBand, nullptr, 4, 2, nullptr, stream_),
               std::invalid_argument);
  EXPECT_THROW(reduceSlices(DType::kInt32, ReduceOp::kSum, nullptr, 4, 2, nullptr, stream_),
               std::invalid_argument);
  EXPECT_THROW(reduceSlices(DType::kInt32, ReduceOp::kBor, nullptr, 4, 0, nullptr, stream_),
               std::invalid_argument);
  EXPECT_EQ(reduceSlices(DType::kInt64, ReduceOp::kBxor, nullptr, 0, 3, nullptr, stream_),
            cudaSuccess);
}

}  // namespace
}  // namespace bagua::kernels
