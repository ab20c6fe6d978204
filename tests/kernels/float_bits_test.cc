// fp16 / bf16 <-> fp32 on the CPU (kernels/float_bits.h): exhaustive or
// boundary-dense checks against the compiler's _Float16 (or a rounding in
// double where the compiler has none) and an independent bf16 rounding, so
// the CPU reference rounds like __float2half_rn / __float2bfloat16_rn.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/float_bits.h"
#include "tests/kernels/bagua_reference.h"

namespace bagua::kernels {
namespace {

using testing::referenceFromFloat;
using testing::referenceToFloat;

bool isNanHalf(uint16_t h) { return (h & 0x7fffu) > 0x7c00u; }
bool isNanBf16(uint16_t h) { return (h & 0x7fffu) > 0x7f80u; }

TEST(FloatBits, HalfToFloatMatchesCompilerForAllHalves) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto b = static_cast<uint16_t>(h);
    const float ours = halfToFloat(b);
    const float theirs = referenceToFloat(DType::kFloat16, b);
    if (isNanHalf(b)) {
      EXPECT_TRUE(std::isnan(ours)) << std::hex << h;
    } else {
      EXPECT_EQ(floatBits(ours), floatBits(theirs)) << std::hex << h;
    }
  }
}

// Every half, the float midpoints between neighbouring halves and one float
// ulp either side of them: the places where rounding can go wrong.
TEST(FloatBits, FloatToHalfRoundsToNearestEvenAtEveryBoundary) {
  int checked = 0;
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const float lo = halfToFloat(static_cast<uint16_t>(h | sign));
      const float hi = halfToFloat(static_cast<uint16_t>((h + 1) | sign));
      const float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);
      for (float f : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 2 * hi)}) {
        EXPECT_EQ(floatToHalf(f), referenceFromFloat(DType::kFloat16, f)) << f;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 200000);
}

TEST(FloatBits, FloatToHalfMatchesCompilerOnSampledFloats) {
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
    const float f = bitsFloat(static_cast<uint32_t>(u));
    if (std::isnan(f)) continue;
    ASSERT_EQ(floatToHalf(f), referenceFromFloat(DType::kFloat16, f)) << std::hex << u;
  }
}

TEST(FloatBits, HalfSpecials) {
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bffu);
  EXPECT_EQ(floatToHalf(65519.99f), 0x7bffu);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00u);  // tie rounds to even: Inf
  EXPECT_EQ(floatToHalf(-1e10f), 0xfc00u);
  EXPECT_EQ(floatToHalf(INFINITY), 0x7c00u);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000u);  // tie to even: 0
  EXPECT_EQ(floatToHalf(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001u);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000u);
  EXPECT_EQ(floatToHalf(bitsFloat(0x7fc01234u)), 0x7fffu);  // canonical NaN, like CUDA
  EXPECT_EQ(floatToHalf(bitsFloat(0xffc00000u)), 0x7fffu);
}

TEST(FloatBits, Bf16IsTheHighHalfOfFloat) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto b = static_cast<uint16_t>(h);
    EXPECT_EQ(floatBits(bf16ToFloat(b)), h << 16);
  }
}

TEST(FloatBits, FloatToBf16RoundsToNearestEvenAtEveryBoundary) {
  for (uint32_t h = 0; h < 0x7f80; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const float lo = bf16ToFloat(static_cast<uint16_t>(h | sign));
      const uint32_t mid = ((h | sign) << 16) | 0x8000u;  // exact midpoint in float
      for (uint32_t u : {mid - 1, mid, mid + 1}) {
        const float f = bitsFloat(u);
        ASSERT_EQ(floatToBf16(f), referenceFromFloat(DType::kBFloat16, f)) << std::hex << u;
      }
      ASSERT_EQ(floatToBf16(lo), h | sign);
    }
  }
  EXPECT_EQ(floatToBf16(bitsFloat(0x7f7fffffu)), 0x7f80u);  // FLT_MAX rounds to Inf
  EXPECT_EQ(floatToBf16(bitsFloat(0x7fc01234u)), 0x7fffu);  // canonical NaN
  EXPECT_TRUE(isNanBf16(floatToBf16(NAN)));
}

}  // namespace
}  // namespace bagua::kernels
