// MinMaxUInt4's CUDA kernels against the CPU reference, bit for bit (suite
// 'gpu'): the standard sweep (every dtype, odd sizes, specials), every
// target, multi-block chunks and misaligned element buffers. Skips without
// a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/minmax_uint4.h"
#include "kernels/minmax_uint4_cuda.h"
#include "tests/kernels/cuda_test_buffer.h"
#include "tests/kernels/kernel_cases.h"

namespace bagua::kernels {
namespace {

using testing::DeviceBuffer;
using testing::difference;
using testing::KernelCase;
using testing::makeCase;
using testing::Pattern;

class CudaUInt4 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::haveGpu()) GTEST_SKIP() << "no GPU";
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  void checkCase(const KernelCase& kc, size_t offset) {
    const size_t stride = compressedChunkBytes4(kc.chunkElems);
    const size_t packedBytes = stride * kc.nChunks;
    DeviceBuffer src(kc.bytes.size(), offset);
    src.upload(kc.bytes);
    std::vector<uint8_t> cpuPacked(packedBytes, 0xcd);
    compress4Cpu(kc.dtype, kc.data(), kc.chunkElems, kc.nChunks, -1, cpuPacked.data());
    DeviceBuffer packed(packedBytes, 0);
    packed.upload(std::vector<uint8_t>(packedBytes, 0xcd));
    ASSERT_CUDA(
        compress4(kc.dtype, src.get(), kc.chunkElems, kc.nChunks, -1, packed.get(), stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    ASSERT_EQ(difference(packed.download(), cpuPacked), "") << kc.name << " compress4";

    for (int target = 0; target < kc.nChunks; ++target) {
      std::vector<uint8_t> cpuOne(stride, 0xcd);
      compress4Cpu(kc.dtype, kc.data(), kc.chunkElems, kc.nChunks, target, cpuOne.data());
      DeviceBuffer one(stride, 0);
      one.upload(std::vector<uint8_t>(stride, 0xcd));
      ASSERT_CUDA(
          compress4(kc.dtype, src.get(), kc.chunkElems, kc.nChunks, target, one.get(), stream_));
      ASSERT_CUDA(cudaStreamSynchronize(stream_));
      ASSERT_EQ(difference(one.download(), cpuOne), "") << kc.name << " target " << target;
    }

    std::vector<uint8_t> cpuOut(kc.bytes.size(), 0xcd);
    decompress4Cpu(kc.dtype, cpuPacked.data(), kc.chunkElems, kc.nChunks, cpuOut.data());
    DeviceBuffer out(kc.bytes.size(), offset);
    out.upload(std::vector<uint8_t>(kc.bytes.size(), 0xcd));
    ASSERT_CUDA(decompress4(kc.dtype, packed.get(), kc.chunkElems, kc.nChunks, out.get(), stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    ASSERT_EQ(difference(out.download(), cpuOut), "") << kc.name << " decompress4";
  }

  cudaStream_t stream_ = nullptr;
};

TEST_F(CudaUInt4, StandardSweepMatchesCpu) {
  for (const KernelCase& kc : testing::standardCases()) checkCase(kc, 0);
}

TEST_F(CudaUInt4, MisalignedElementsMatchCpu) {
  for (const KernelCase& kc : testing::standardCases()) checkCase(kc, dtypeSize(kc.dtype));
}

TEST_F(CudaUInt4, MultiBlockChunksMatchCpu) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (Pattern p : {Pattern::kUniform, Pattern::kWideMagnitude, Pattern::kSpecials}) {
      checkCase(makeCase(dtype, 5 * kUInt4Block + 77, 3, p, 11), 0);
      checkCase(makeCase(dtype, 1 << 18, 2, p, 12), 0);
    }
  }
}

TEST(CudaUInt4Arguments, BadArgumentsThrowBeforeLaunching) {
  std::vector<uint8_t> host(64);
  EXPECT_THROW(compress4(DType::kInt32, host.data(), 4, 1, -1, host.data(), nullptr),
               std::invalid_argument);
  EXPECT_THROW(decompress4(DType::kFloat32, host.data() + 1, 4, 1, host.data(), nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace bagua::kernels
