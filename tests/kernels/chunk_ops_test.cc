// reduceChunks, scale and addScaled on the CPU: sums and means against a
// double-precision reference within fp32 rounding, in-place safety,
// overflow and NaN behaviour.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/float_bits.h"
#include "kernels/minmax_uint8.h"
#include "tests/kernels/kernel_cases.h"

namespace bagua::kernels {
namespace {

using testing::elementAt;
using testing::KernelCase;
using testing::makeCase;
using testing::Pattern;

const DType kAllDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

double outputUlp(DType dtype) {
  return dtype == DType::kFloat32 ? 0x1p-23 : dtype == DType::kFloat16 ? 0x1p-10 : 0x1p-7;
}

// Each of the n - 1 fp32 additions (and the division) rounds once: the error
// is at most n ulps of the largest partial sum, then one rounding to dtype.
TEST(ReduceChunks, SumAndMeanWithinFp32RoundingOfExact) {
  for (DType dtype : kAllDTypes) {
    for (int n : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 40}) {
      const KernelCase kc = makeCase(dtype, 513, n, Pattern::kUniform, 100 + n);
      for (bool average : {false, true}) {
        const int target = n - 1;
        std::vector<uint8_t> data = kc.bytes;
        reduceChunksCpu(dtype, data.data(), kc.chunkElems, n, target, average);
        for (size_t i = 0; i < kc.chunkElems; ++i) {
          double exact = 0;
          double magnitude = 0;
          for (int c = 0; c < n; ++c) {
            const double x = elementAt(dtype, kc.data(), c * kc.chunkElems + i);
            exact += x;
            magnitude += std::fabs(x);
          }
          if (average) {
            exact /= n;
            magnitude /= n;
          }
          const double got = elementAt(dtype, data.data(), target * kc.chunkElems + i);
          const double tolerance =
              (n + 1) * 0x1p-24 * magnitude + outputUlp(dtype) * std::fabs(exact);
          ASSERT_LE(std::fabs(got - exact), tolerance)
              << dtypeName(dtype) << " n " << n << " avg " << average << " i " << i;
        }
      }
    }
  }
}

TEST(ReduceChunks, ExactOnSmallIntegers) {
  for (DType dtype : kAllDTypes) {
    const KernelCase kc = makeCase(dtype, 100, 6, Pattern::kIntegers, 4);
    std::vector<uint8_t> data = kc.bytes;
    reduceChunksCpu(dtype, data.data(), 100, 6, 2, false);
    for (size_t i = 0; i < 100; ++i) {
      float sum = 0;
      for (int c = 0; c < 6; ++c) sum += elementAt(dtype, kc.data(), c * 100 + i);
      if (dtype == DType::kBFloat16 && std::fabs(sum) > 256) continue;  // not representable
      EXPECT_EQ(elementAt(dtype, data.data(), 200 + i), sum) << dtypeName(dtype) << i;
    }
  }
}

TEST(ReduceChunks, Fp16OverflowGivesInfAndNanPropagates) {
  std::vector<uint16_t> h = {floatToHalf(60000.0f), floatToHalf(1.0f), floatToHalf(60000.0f),
                             floatToHalf(NAN)};
  reduceChunksCpu(DType::kFloat16, h.data(), 2, 2, 0, false);
  EXPECT_EQ(h[0], 0x7c00u);  // 120000 > 65504: Inf, as on the GPU
  EXPECT_EQ(h[1], 0x7fffu);  // canonical NaN
}

TEST(Scale, MultipliesInFp32AndRounds) {
  for (DType dtype : kAllDTypes) {
    const KernelCase kc = makeCase(dtype, 1000, 1, Pattern::kWideMagnitude, 21);
    std::vector<uint8_t> data = kc.bytes;
    scaleCpu(dtype, data.data(), 1000, 0.125f);
    for (size_t i = 0; i < 1000; ++i) {
      const float want = elementAt(dtype, kc.data(), i) * 0.125f;
      if (dtype == DType::kFloat32 || std::fabs(want) > 1e-4f) {  // no fp16 subnormal loss
        EXPECT_EQ(elementAt(dtype, data.data(), i), want) << dtypeName(dtype) << i;
      }
    }
  }
}

// Error feedback's residual: a - b as addScaled(a, b, -1) computes it, and 0
// where that is not finite: a NaN b (a chunk that held an Inf decodes to
// NaN), an Inf a, or a difference that overflows the dtype.
TEST(Residual, DifferenceOrZeroWhereNotFiniteAndMayAlias) {
  for (DType dtype : kAllDTypes) {
    const KernelCase a = makeCase(dtype, 777, 1, Pattern::kUniform, 41);
    KernelCase b = makeCase(dtype, 777, 1, Pattern::kUniform, 42);
    // Specials in b at 3 places and in a at one.
    std::vector<uint8_t> aBytes = a.bytes;
    testing::setElement(dtype, b.bytes.data(), 5, std::nanf(""));
    testing::setElement(dtype, b.bytes.data(), 6, INFINITY);
    testing::setElement(dtype, aBytes.data(), 7, -INFINITY);
    const float big = dtype == DType::kFloat16 ? 65504.0f : 3.0e38f;
    testing::setElement(dtype, aBytes.data(), 8, big);
    testing::setElement(dtype, b.bytes.data(), 8, -big);  // a - b overflows
    std::vector<uint8_t> want(a.bytes.size());
    addScaledCpu(dtype, want.data(), aBytes.data(), b.bytes.data(), 777, -1.0f);
    std::vector<uint8_t> out(a.bytes.size());
    residualCpu(dtype, out.data(), aBytes.data(), b.bytes.data(), 777);
    std::vector<uint8_t> inPlace = aBytes;
    residualCpu(dtype, inPlace.data(), inPlace.data(), b.bytes.data(), 777);
    EXPECT_EQ(out, inPlace);
    for (size_t i = 0; i < 777; ++i) {
      const float got = elementAt(dtype, out.data(), i);
      if (i >= 5 && i <= 8) {
        EXPECT_EQ(got, 0.0f) << dtypeName(dtype) << " element " << i;
      } else {
        EXPECT_EQ(got, elementAt(dtype, want.data(), i)) << dtypeName(dtype) << " element " << i;
      }
    }
  }
}

TEST(AddScaled, RoundsTheProductThenTheSumAndMayAlias) {
  for (DType dtype : kAllDTypes) {
    const KernelCase a = makeCase(dtype, 777, 1, Pattern::kUniform, 31);
    const KernelCase b = makeCase(dtype, 777, 1, Pattern::kUniform, 32);
    std::vector<uint8_t> out(a.bytes.size());
    addScaledCpu(dtype, out.data(), a.data(), b.data(), 777, -0.3f);
    std::vector<uint8_t> inPlace = a.bytes;
    addScaledCpu(dtype, inPlace.data(), inPlace.data(), b.data(), 777, -0.3f);
    EXPECT_EQ(out, inPlace);
    for (size_t i = 0; i < 777; ++i) {
      volatile float product = -0.3f * elementAt(dtype, b.data(), i);  // rounded to fp32
      const float sum = elementAt(dtype, a.data(), i) + product;
      const float got = elementAt(dtype, out.data(), i);
      if (dtype == DType::kFloat32) {
        EXPECT_EQ(got, sum) << i;
      } else {
        EXPECT_NEAR(got, sum, outputUlp(dtype) * std::fabs(sum)) << i;
      }
    }
  }
}

}  // namespace
}  // namespace bagua::kernels
