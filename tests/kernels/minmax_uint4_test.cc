// MinMaxUInt4 CPU reference: the layout, the error bound on the standard
// sweep, exact codes on a grid, constant and non-finite blocks, per-block
// ranges, target >= 0, odd sizes and bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/minmax_uint4.h"
#include "kernels/minmax_uint4_math.h"
#include "tests/kernels/kernel_cases.h"

namespace bagua::kernels {
namespace {

using testing::elementAt;
using testing::KernelCase;
using testing::makeCase;
using testing::Pattern;

std::vector<uint8_t> pack(const KernelCase& kc) {
  std::vector<uint8_t> out(compressedChunkBytes4(kc.chunkElems) * kc.nChunks, 0xcd);
  compress4Cpu(kc.dtype, kc.data(), kc.chunkElems, kc.nChunks, -1, out.data());
  return out;
}

std::vector<uint8_t> unpack(const KernelCase& kc, const std::vector<uint8_t>& packed) {
  std::vector<uint8_t> out(kc.bytes.size(), 0xcd);
  decompress4Cpu(kc.dtype, packed.data(), kc.chunkElems, kc.nChunks, out.data());
  return out;
}

KernelCase floats(const std::vector<float>& v) {
  KernelCase kc = makeCase(DType::kFloat32, v.size(), 1, Pattern::kUniform, 0);
  std::memcpy(kc.bytes.data(), v.data(), 4 * v.size());
  return kc;
}

std::vector<float> asFloats(const std::vector<uint8_t>& bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

TEST(MinMaxUInt4, LayoutIsRangesThenTwoCodesPerByte) {
  EXPECT_EQ(compressedChunkBytes4(1), 32u + 32u);
  EXPECT_EQ(compressedChunkBytes4(64), 32u + 32u);
  EXPECT_EQ(compressedChunkBytes4(65), 32u + 64u);
  EXPECT_EQ(compressedChunkBytes4(512), 32u + 256u);
  EXPECT_EQ(compressedChunkBytes4(513), 32u + 288u);       // 2 ranges, 257 code bytes
  EXPECT_EQ(compressedChunkBytes4(5 * 512), 64u + 1280u);  // 5 ranges: 40 bytes
}

// Values on the grid mn + k (mx - mn) / 15 decode exactly, and the codes sit
// two per byte, low nibble first.
TEST(MinMaxUInt4, ValuesOnTheGridAreExactAndPacked) {
  std::vector<float> v;
  for (int i = 0; i < 33; ++i) v.push_back(static_cast<float>((i * 7) % 16) - 3.0f);  // -3..12
  v[0] = -3.0f;
  v[1] = 12.0f;
  const KernelCase kc = floats(v);
  const std::vector<uint8_t> packed = pack(kc);
  float mn, mx;
  std::memcpy(&mn, packed.data(), 4);
  std::memcpy(&mx, packed.data() + 4, 4);
  EXPECT_EQ(mn, -3.0f);
  EXPECT_EQ(mx, 12.0f);
  const uint8_t* codes = packed.data() + 32;
  EXPECT_EQ(codes[0], 0 | (15 << 4));
  EXPECT_EQ(codes[16], static_cast<uint8_t>(v[32] + 3.0f));  // odd count: high nibble 0
  for (size_t i = 17; i < 32; ++i) EXPECT_EQ(codes[i], 0) << "padding byte " << i;
  EXPECT_EQ(asFloats(unpack(kc, packed)), v);
}

TEST(MinMaxUInt4, StandardSweepStaysWithinHalfAStepOfEachBlock) {
  for (const KernelCase& kc : testing::standardCases()) {
    const std::vector<uint8_t> packed = pack(kc);
    const std::vector<uint8_t> out = unpack(kc, packed);
    const size_t stride = compressedChunkBytes4(kc.chunkElems);
    for (int c = 0; c < kc.nChunks; ++c) {
      for (size_t i = 0; i < kc.chunkElems; ++i) {
        const size_t at = c * kc.chunkElems + i;
        const float x = elementAt(kc.dtype, kc.data(), at);
        const float y = elementAt(kc.dtype, out.data(), at);
        float mn, mx;
        std::memcpy(&mn, packed.data() + c * stride + 8 * (i / kUInt4Block), 4);
        std::memcpy(&mx, packed.data() + c * stride + 8 * (i / kUInt4Block) + 4, 4);
        if (!std::isfinite(mn)) {
          ASSERT_TRUE(std::isnan(y)) << kc.name << " element " << at;
          continue;
        }
        // Half a step (and its rounding), the rounding of the dtype.
        const float bound =
            (mx - mn) / 30.0f * 1.0001f + (std::fabs(x) + std::fabs(y)) * 1e-2f + 1e-30f;
        ASSERT_LE(std::fabs(y - x), bound) << kc.name << " element " << at;
      }
    }
  }
}

TEST(MinMaxUInt4, EachBlockHasItsOwnRange) {
  std::vector<float> v(2 * kUInt4Block);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i < kUInt4Block ? 1e-3f * (i % 7) : 1e3f * (i % 5);
  const std::vector<float> out = asFloats(unpack(floats(v), pack(floats(v))));
  for (size_t i = 0; i < kUInt4Block; ++i) {
    ASSERT_NEAR(out[i], v[i], 6e-3f / 30.0f + 1e-9f) << i;  // not 4000 / 30
  }
}

TEST(MinMaxUInt4, ConstantAndNonFiniteBlocks) {
  std::vector<float> v(3 * kUInt4Block, 0.25f);
  v[kUInt4Block + 3] = NAN;
  v[2 * kUInt4Block + 9] = -INFINITY;
  const std::vector<float> out = asFloats(unpack(floats(v), pack(floats(v))));
  for (size_t i = 0; i < kUInt4Block; ++i) ASSERT_EQ(out[i], 0.25f);
  for (size_t i = kUInt4Block; i < v.size(); ++i) ASSERT_TRUE(std::isnan(out[i])) << i;
}

// A subnormal range makes the scale infinite: the minimum's (x - mn) * s is
// NaN, which must become code 0, not a NaN cast to uint8 (UB: UBSan's
// float-cast-overflow, on in the sanitizer build's kernel tests, stops here
// without the clamp's NaN case).
TEST(MinMaxUInt4, ASubnormalRangeEncodesItsEndsAsZeroAndFifteen) {
  const float tiny = std::numeric_limits<float>::denorm_min();
  const uint4::Range r{0.0f, tiny};
  EXPECT_EQ(uint4::encode(0.0f, r), 0);
  EXPECT_EQ(uint4::encode(tiny, r), 15);
  const uint4::Range shifted{1.0f, 1.0f + tiny};  // rounds to a constant block
  EXPECT_EQ(uint4::encode(1.0f, shifted), 0);
  std::vector<float> v(kUInt4Block, 0.0f);
  for (size_t i = 0; i < v.size(); i += 2) v[i] = tiny;
  const std::vector<float> out = asFloats(unpack(floats(v), pack(floats(v))));
  for (size_t i = 0; i < v.size(); ++i) ASSERT_LE(std::fabs(out[i] - v[i]), tiny) << i;
}

TEST(MinMaxUInt4, NegativeZeroIsStoredAsPositiveZero) {
  const std::vector<float> v = {-0.0f, 1.0f, -0.0f};
  const std::vector<uint8_t> packed = pack(floats(v));
  uint32_t minBits;
  std::memcpy(&minBits, packed.data(), 4);
  EXPECT_EQ(minBits, 0u);
}

TEST(MinMaxUInt4, TargetCompressesOneChunkLikeTheFullCall) {
  const KernelCase kc = makeCase(DType::kBFloat16, 1031, 3, Pattern::kWideMagnitude, 5);
  const std::vector<uint8_t> all = pack(kc);
  const size_t stride = compressedChunkBytes4(kc.chunkElems);
  std::vector<uint8_t> one(stride, 0xcd);
  compress4Cpu(kc.dtype, kc.data(), kc.chunkElems, kc.nChunks, 2, one.data());
  EXPECT_EQ(one, std::vector<uint8_t>(all.begin() + 2 * stride, all.end()));
}

TEST(MinMaxUInt4, BadArgumentsNameTheValue) {
  std::vector<uint8_t> buf(1024);
  try {
    compress4Cpu(DType::kInt32, buf.data(), 4, 1, -1, buf.data());
    FAIL() << "int32 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("compress4Cpu: dtype int32 is not supported"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(decompress4Cpu(DType::kFloat32, buf.data(), 4, 0, buf.data()),
               std::invalid_argument);
  EXPECT_THROW(compress4Cpu(DType::kFloat32, buf.data(), 4, 2, 2, buf.data()),
               std::invalid_argument);
}

}  // namespace
}  // namespace bagua::kernels
