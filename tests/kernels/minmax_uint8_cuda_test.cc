// The CUDA kernels against the CPU reference, bit for bit (suite 'gpu'):
// the standard sweep through the vector path (aligned buffers) and the
// element path (buffers offset by one element), every target, large buffers
// for the multi-block min/max, both paths of the quantizer, and bad
// arguments. Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/float_bits.h"
#include "kernels/minmax_uint8.h"
#include "kernels/minmax_uint8_cuda.h"
#include "tests/kernels/cuda_test_buffer.h"
#include "tests/kernels/kernel_cases.h"

namespace bagua::kernels {
namespace {

using testing::DeviceBuffer;
using testing::difference;
using testing::KernelCase;
using testing::makeCase;
using testing::Pattern;

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0) {
      GTEST_SKIP() << "no GPU: " << cudaGetErrorString(err);
    }
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  // compress (target -1 and the last chunk), decompress of the CPU's bytes
  // and reduceChunks of one case, each against the CPU.
  void checkCase(const KernelCase& kc, bool aligned) {
    const size_t width = dtypeSize(kc.dtype);
    const size_t stride = compressedChunkBytes(kc.chunkElems);
    const size_t packedBytes = stride * kc.nChunks;
    DeviceBuffer src(kc.bytes.size(), aligned ? 0 : width);
    DeviceBuffer packed(packedBytes, aligned ? 0 : 4);
    src.upload(kc.bytes);

    std::vector<uint8_t> cpuPacked(packedBytes, 0xcd);
    compressCpu(kc.dtype, kc.data(), kc.chunkElems, kc.nChunks, -1, cpuPacked.data());
    packed.upload(std::vector<uint8_t>(packedBytes, 0xcd));
    ASSERT_CUDA(
        compress(kc.dtype, src.get(), kc.chunkElems, kc.nChunks, -1, packed.get(), stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    ASSERT_EQ(difference(packed.download(), cpuPacked), "") << kc.name << " compress";

    const int last = kc.nChunks - 1;
    DeviceBuffer one(stride, aligned ? 0 : 4);
    std::vector<uint8_t> cpuOne(stride, 0xcd);
    compressCpu(kc.dtype, kc.data(), kc.chunkElems, kc.nChunks, last, cpuOne.data());
    one.upload(std::vector<uint8_t>(stride, 0xcd));
    ASSERT_CUDA(compress(kc.dtype, src.get(), kc.chunkElems, kc.nChunks, last, one.get(), stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    ASSERT_EQ(difference(one.download(), cpuOne), "") << kc.name << " compress target";

    std::vector<uint8_t> cpuOut(kc.bytes.size(), 0xcd);
    decompressCpu(kc.dtype, cpuPacked.data(), kc.chunkElems, kc.nChunks, cpuOut.data());
    DeviceBuffer out(kc.bytes.size(), aligned ? 0 : width);
    ASSERT_CUDA(decompress(kc.dtype, packed.get(), kc.chunkElems, kc.nChunks, out.get(), stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    ASSERT_EQ(difference(out.download(), cpuOut), "") << kc.name << " decompress";

    for (bool average : {false, true}) {
      std::vector<uint8_t> cpuReduced = kc.bytes;
      reduceChunksCpu(kc.dtype, cpuReduced.data(), kc.chunkElems, kc.nChunks, last, average);
      src.upload(kc.bytes);
      ASSERT_CUDA(
          reduceChunks(kc.dtype, src.get(), kc.chunkElems, kc.nChunks, last, average, stream_));
      ASSERT_CUDA(cudaStreamSynchronize(stream_));
      ASSERT_EQ(difference(src.download(), cpuReduced), "") << kc.name << " reduce " << average;
    }
  }

  cudaStream_t stream_ = nullptr;
};

TEST_F(CudaKernels, StandardSweepMatchesCpuOnVectorPath) {
  for (const KernelCase& kc : testing::standardCases()) {
    checkCase(kc, true);
    if (HasFatalFailure()) return;
  }
}

TEST_F(CudaKernels, StandardSweepMatchesCpuOnElementPath) {
  for (const KernelCase& kc : testing::standardCases()) {
    checkCase(kc, false);
    if (HasFatalFailure()) return;
  }
}

// Many blocks per chunk: the atomics of the segmented min/max meet.
TEST_F(CudaKernels, LargeBuffersMatchCpu) {
  checkCase(makeCase(DType::kFloat32, (1u << 22) + 8, 2, Pattern::kWideMagnitude, 41), true);
  checkCase(makeCase(DType::kFloat16, (1u << 20) + 8, 8, Pattern::kUniform, 42), true);
  checkCase(makeCase(DType::kBFloat16, (1u << 20) + 3, 3, Pattern::kOffset, 43), false);
  checkCase(makeCase(DType::kFloat32, 1u << 16, 40, Pattern::kUniform, 44), true);
}

// Chunks of base + k/2, k in [0, 510], with base and base + 255 present: the
// scale is exactly 1, so half-integers are rounding ties, and bases near
// +-2^22 put chunks on either side of the quantizer's fast-path limit
// (minmax::fastEncodable). Vector and element paths, several blocks per chunk.
TEST_F(CudaKernels, FastAndGeneralQuantizerPathsMatchCpu) {
  const float limit = 4194304.0f;  // 2^22
  const float fp32Bases[] = {0.0f,  -128.0f,       limit - 256.0f, limit - 255.0f,
                             limit, -limit - 1.0f, -limit,         -limit + 1.0f};
  const float halfBases[] = {0.0f, -128.0f, 1000.0f, -0.5f, 37.0f, -255.0f, 64.0f, -3.0f};
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const float* bases = dtype == DType::kFloat32 ? fp32Bases : halfBases;
    KernelCase kc = makeCase(dtype, 70000, 8, Pattern::kUniform, 45);
    testing::Rng rng(46);
    for (int c = 0; c < kc.nChunks; ++c) {
      for (size_t i = 0; i < kc.chunkElems; ++i) {
        const float k = i == 0 ? 0.0f : i == 1 ? 510.0f : static_cast<float>(rng.below(511));
        const float v = bases[c] + 0.5f * k;
        const size_t at = c * kc.chunkElems + i;
        if (dtype == DType::kFloat32) {
          std::memcpy(kc.bytes.data() + 4 * at, &v, 4);
        } else {
          const uint16_t h = dtype == DType::kFloat16 ? floatToHalf(v) : floatToBf16(v);
          std::memcpy(kc.bytes.data() + 2 * at, &h, 2);
        }
      }
    }
    checkCase(kc, true);
    checkCase(kc, false);
    if (HasFatalFailure()) return;
  }
}

TEST_F(CudaKernels, ScaleAndAddScaledMatchCpu) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (size_t n : {1u, 7u, 8u, 1000u, 4099u, 1u << 20}) {
      for (bool aligned : {true, false}) {
        const KernelCase a = makeCase(dtype, n, 1, Pattern::kWideMagnitude, n);
        const KernelCase b = makeCase(dtype, n, 1, Pattern::kSpecials, n + 1);
        const size_t offset = aligned ? 0 : dtypeSize(dtype);
        DeviceBuffer x(a.bytes.size(), offset);
        DeviceBuffer y(b.bytes.size(), offset);
        x.upload(a.bytes);
        y.upload(b.bytes);
        std::vector<uint8_t> cpu = a.bytes;
        scaleCpu(dtype, cpu.data(), n, -0.37f);
        ASSERT_CUDA(scale(dtype, x.get(), n, -0.37f, stream_));
        ASSERT_CUDA(cudaStreamSynchronize(stream_));
        ASSERT_EQ(difference(x.download(), cpu), "") << a.name << " scale";

        addScaledCpu(dtype, cpu.data(), cpu.data(), b.data(), n, 1.7f);
        ASSERT_CUDA(addScaled(dtype, x.get(), x.get(), y.get(), n, 1.7f, stream_));
        ASSERT_CUDA(cudaStreamSynchronize(stream_));
        ASSERT_EQ(difference(x.download(), cpu), "") << a.name << " addScaled";

        // b holds NaN and Inf (kSpecials): residual's zeros land where the CPU's do.
        residualCpu(dtype, cpu.data(), cpu.data(), b.data(), n);
        ASSERT_CUDA(residual(dtype, x.get(), x.get(), y.get(), n, stream_));
        ASSERT_CUDA(cudaStreamSynchronize(stream_));
        ASSERT_EQ(difference(x.download(), cpu), "") << a.name << " residual";
      }
    }
  }
}

// Checked before anything touches the device, so this runs without a GPU.
TEST(CudaKernelArguments, BadArgumentsThrowBeforeLaunching) {
  alignas(16) uint8_t buf[256] = {};
  EXPECT_THROW(compress(DType::kFloat32, buf, 4, 0, -1, buf, nullptr), std::invalid_argument);
  EXPECT_THROW(compress(DType::kFloat32, buf, 4, 2, 5, buf, nullptr), std::invalid_argument);
  EXPECT_THROW(compress(DType::kFloat32, buf, 4, 1, -1, buf + 1, nullptr), std::invalid_argument);
  EXPECT_THROW(decompress(DType::kFloat16, buf + 2, 4, 1, buf, nullptr), std::invalid_argument);
  EXPECT_THROW(reduceChunks(DType::kFloat32, buf, 4, 2, -1, true, nullptr), std::invalid_argument);
  EXPECT_THROW(scale(DType::kFloat32, buf + 2, 4, 1.0f, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace bagua::kernels
