// The GPU quantizer's fast encoding (minmax::encodeFast, used when
// minmax::fastEncodable holds) against Bagua's encode, on the CPU: every
// finite fp16 and bf16 value of many chunk ranges, and fp32 chunks around
// the 2^22 limit, ties included. Same IEEE fp32 operations as on the GPU,
// so equal codes here mean equal codes there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/float_bits.h"
#include "kernels/minmax_uint8_math.h"
#include "tests/kernels/kernel_cases.h"

namespace bagua::kernels {
namespace {

using minmax::encode;
using minmax::encodeFast;
using minmax::fastEncodable;
using minmax::Grid;
using minmax::makeFastGrid;
using minmax::makeGrid;

struct Tally {
  int fast = 0;     // ranges that took the fast path
  int general = 0;  // ranges that did not
};

// Checks every x of xs inside [mn, mx] when the range is fast-encodable.
void checkRange(float mn, float mx, const std::vector<float>& xs, Tally& tally) {
  const Grid g = makeGrid(mn, mx);
  if (!fastEncodable(mn, mx, g)) {
    ++tally.general;
    return;
  }
  ++tally.fast;
  const minmax::FastGrid f = makeFastGrid(g);
  for (float x : xs) {
    if (x < mn || x > mx) continue;
    ASSERT_EQ(encodeFast(x, f), encode(x, g)) << "x " << x << " in [" << mn << ", " << mx << "]";
  }
}

// All finite values of a 16-bit dtype, ascending (-0.0 next to +0.0).
std::vector<float> finiteValues(DType dtype) {
  std::vector<float> v;
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto h = static_cast<uint16_t>(b);
    const float x = dtype == DType::kFloat16 ? halfToFloat(h) : bf16ToFloat(h);
    if (std::isfinite(x)) v.push_back(x);
  }
  std::stable_sort(v.begin(), v.end());
  return v;
}

TEST(MinMaxMath, FastEncodingMatchesForEverySixteenBitValue) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const std::vector<float> v = finiteValues(dtype);
    testing::Rng rng(dtype == DType::kFloat16 ? 17 : 18);
    Tally tally;
    for (int r = 0; r < 400 && !::testing::Test::HasFatalFailure(); ++r) {
      size_t i = rng.below(v.size());
      size_t j = rng.below(v.size());
      if (r % 4 == 1) j = i;                                  // constant chunk
      if (r % 4 == 2) j = std::min(v.size() - 1, i + r % 7);  // a few ulps wide
      if (r % 4 == 3) j = v.size() - 1 - i;                   // symmetric around 0
      if (i > j) std::swap(i, j);
      const std::vector<float> xs(v.begin() + static_cast<long>(i),
                                  v.begin() + static_cast<long>(j) + 1);
      checkRange(v[i], v[j], xs, tally);
    }
    // Constant fp16/bf16 chunks of nonzero values are the only general ones.
    EXPECT_GT(tally.fast, 250) << dtypeName(dtype);
    EXPECT_GT(tally.general, 0) << dtypeName(dtype);
  }
}

// mx - mn = 255 gives s = 1 exactly, so x * s is x: half-integer x are ties,
// and |mx| or |mn| crossing 2^22 moves the chunk off the fast path.
TEST(MinMaxMath, FastEncodingMatchesAtTiesAndAroundTheLimit) {
  Tally tally;
  const float limit = minmax::kFastLimit;
  for (float c : {0.0f, 1000.0f, -128.0f, limit - 300.0f, limit - 256.0f, limit - 255.0f,
                  limit - 254.5f, limit, -limit - 1.0f, -limit, -limit + 0.5f, -limit + 1.0f}) {
    std::vector<float> xs;
    for (int k = -2; k <= 512; ++k) xs.push_back(c + 0.5f * static_cast<float>(k));
    checkRange(c, c + 255.0f, xs, tally);
  }
  EXPECT_GE(tally.fast, 7);
  EXPECT_GE(tally.general, 4);
}

// Random fp32 ranges with max(|mn|, |mx|) * s spread over 2^12 .. 2^23.
TEST(MinMaxMath, FastEncodingMatchesOnFp32RangesNearTheLimit) {
  testing::Rng rng(19);
  Tally tally;
  for (int r = 0; r < 3000 && !::testing::Test::HasFatalFailure(); ++r) {
    const float top = std::ldexp(1.0f + rng.uniform(), static_cast<int>(rng.below(60)) - 30);
    const float ratio = std::ldexp(1.0f + rng.uniform(), 4 + static_cast<int>(rng.below(11)));
    const float width = top / ratio;
    float mx = rng.next() & 1 ? top : -top + width;
    float mn = mx - width;
    if (!(mn < mx)) continue;
    std::vector<float> xs = {mn, mx, std::nextafter(mn, mx), std::nextafter(mx, mn)};
    for (int k = 0; k < 200; ++k) xs.push_back(mn + (mx - mn) * rng.uniform());
    checkRange(mn, mx, xs, tally);
  }
  EXPECT_GT(tally.fast, 1000);
  EXPECT_GT(tally.general, 100);
}

// A range overflowing fp32 gives s = 0: every code is 255, on either path.
TEST(MinMaxMath, FastEncodingMatchesWhenTheScaleIsZero) {
  Tally tally;
  checkRange(-3e38f, 3e38f, {-3e38f, -1.0f, 0.0f, 2.5e38f, 3e38f}, tally);
  EXPECT_EQ(tally.fast, 1);
}

}  // namespace
}  // namespace bagua::kernels
