// The CPU kernels against a plain scalar re-statement of Bagua's formulas
// (bagua_reference.h), bit for bit, over the standard sweep of dtypes, sizes,
// chunk counts and patterns. Where we deliberately differ (constant and
// non-finite chunks) the expected value is ours, as documented.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/minmax_uint8.h"
#include "kernels/float_bits.h"
#include "kernels/minmax_uint8_math.h"
#include "tests/kernels/bagua_reference.h"
#include "tests/kernels/kernel_cases.h"

namespace bagua::kernels {
namespace {

using testing::bitsAt;
using testing::KernelCase;
using testing::Pattern;
using testing::referenceCompress;
using testing::referenceDecompress;
using testing::referenceReduce;
using testing::referenceToFloat;

bool isNan(DType dtype, uint32_t bits) { return std::isnan(referenceToFloat(dtype, bits)); }

bool chunkFinite(const KernelCase& kc, int c) {
  for (size_t i = 0; i < kc.chunkElems; ++i) {
    if (!std::isfinite(testing::elementAt(kc.dtype, kc.data(), c * kc.chunkElems + i)))
      return false;
  }
  return true;
}

class ReferenceSweep : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cases_ = new std::vector<KernelCase>(testing::standardCases()); }
  static void TearDownTestSuite() { delete cases_; }
  static std::vector<KernelCase>* cases_;
};
std::vector<KernelCase>* ReferenceSweep::cases_ = nullptr;

TEST_F(ReferenceSweep, CompressAndDecompressMatchBagua) {
  for (const KernelCase& kc : *cases_) {
    const size_t stride = compressedChunkBytes(kc.chunkElems);
    std::vector<uint8_t> packed(stride * kc.nChunks);
    compressCpu(kc.dtype, kc.data(), kc.chunkElems, kc.nChunks, -1, packed.data());
    std::vector<uint8_t> out(kc.bytes.size());
    decompressCpu(kc.dtype, packed.data(), kc.chunkElems, kc.nChunks, out.data());
    for (int c = 0; c < kc.nChunks; ++c) {
      if (!chunkFinite(kc, c)) continue;  // no NaN policy in Bagua: minmax_uint8_test.cc
      const uint8_t* chunk = kc.bytes.data() + c * kc.chunkElems * dtypeSize(kc.dtype);
      const testing::ReferenceChunk ref = referenceCompress(kc.dtype, chunk, kc.chunkElems);
      const uint8_t* ours = packed.data() + c * stride;
      const float mn = referenceToFloat(kc.dtype, ref.minBits);
      const float mx = referenceToFloat(kc.dtype, ref.maxBits);
      // Same value; the sign of a zero may differ (Bagua: by reduction order).
      ASSERT_EQ(referenceToFloat(kc.dtype, bitsAt(kc.dtype, ours, 0)), mn) << kc.name << " c" << c;
      ASSERT_EQ(referenceToFloat(kc.dtype, bitsAt(kc.dtype, ours, 1)), mx) << kc.name << " c" << c;
      for (size_t i = 0; i < kc.chunkElems; ++i) {
        ASSERT_EQ(ours[32 + i], ref.codes[i]) << kc.name << " chunk " << c << " element " << i;
      }
      const std::vector<uint32_t> decoded = referenceDecompress(kc.dtype, ref);
      for (size_t i = 0; i < kc.chunkElems; ++i) {
        const uint32_t got = bitsAt(kc.dtype, out.data(), c * kc.chunkElems + i);
        if (mn == mx) {  // constant: min exactly here (Bagua: min - ~1e-7, or Inf)
          ASSERT_EQ(referenceToFloat(kc.dtype, got), mn) << kc.name << " chunk " << c;
          continue;
        }
        const uint32_t want = decoded[i];
        if (isNan(kc.dtype, want)) {
          ASSERT_TRUE(isNan(kc.dtype, got)) << kc.name;
        } else {
          ASSERT_EQ(got, want) << kc.name << " chunk " << c << " element " << i;
        }
      }
    }
  }
}

// Where Bagua's formula overflows (the extreme codes of a float16 chunk that
// reaches +-65504 decode up to range / 510 beyond it: Inf), ours saturates to
// the largest finite value: a finite chunk stays finite. Reduced with another
// rank's copy, the Inf became NaN for the whole chunk.
TEST(Saturation, AFloat16ChunkAtItsLimitsDecodesFinite) {
  const std::vector<uint16_t> in = {floatToHalf(-65504.0f), floatToHalf(65504.0f),
                                    floatToHalf(1.0f), floatToHalf(2.0f)};
  const testing::ReferenceChunk ref = referenceCompress(DType::kFloat16, in.data(), in.size());
  const std::vector<uint32_t> bagua = referenceDecompress(DType::kFloat16, ref);
  EXPECT_TRUE(std::isinf(referenceToFloat(DType::kFloat16, bagua[1])))
      << "the case no longer overflows in Bagua's formula: pick another";
  std::vector<uint8_t> packed(compressedChunkBytes(in.size()));
  compressCpu(DType::kFloat16, in.data(), in.size(), 1, -1, packed.data());
  std::vector<uint16_t> out(in.size());
  decompressCpu(DType::kFloat16, packed.data(), in.size(), 1, out.data());
  for (size_t i = 0; i < out.size(); ++i) {
    const float b = referenceToFloat(DType::kFloat16, bagua[i]);
    if (std::isinf(b)) {
      EXPECT_EQ(halfToFloat(out[i]), b > 0 ? 65504.0f : -65504.0f) << "element " << i;
    } else {
      EXPECT_EQ(out[i], bagua[i]) << "element " << i << ": a value that does not overflow is Bagua's";
    }
  }
  // Two ranks' copies decoded and averaged (ByteGrad's step): finite, where
  // Bagua's Inf made the re-compressed chunk non-finite, NaN throughout.
  std::vector<uint16_t> raw(2 * in.size());
  std::vector<uint8_t> both(2 * packed.size());
  std::copy(packed.begin(), packed.end(), both.begin());
  std::copy(packed.begin(), packed.end(), both.begin() + static_cast<long>(packed.size()));
  decompressCpu(DType::kFloat16, both.data(), in.size(), 2, raw.data());
  reduceChunksCpu(DType::kFloat16, raw.data(), in.size(), 2, 0, /*average=*/true);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_TRUE(std::isfinite(halfToFloat(raw[i]))) << "element " << i;
  }
}

TEST_F(ReferenceSweep, ReduceChunksMatchesBaguaOrder) {
  for (const KernelCase& kc : *cases_) {
    for (bool average : {false, true}) {
      const std::vector<uint32_t> want =
          referenceReduce(kc.dtype, kc.data(), kc.chunkElems, kc.nChunks, average);
      for (int target : {0, kc.nChunks - 1}) {
        std::vector<uint8_t> data = kc.bytes;
        reduceChunksCpu(kc.dtype, data.data(), kc.chunkElems, kc.nChunks, target, average);
        for (size_t i = 0; i < kc.chunkElems; ++i) {
          const uint32_t got = bitsAt(kc.dtype, data.data(), target * kc.chunkElems + i);
          if (isNan(kc.dtype, want[i])) {
            ASSERT_TRUE(isNan(kc.dtype, got)) << kc.name;
          } else {
            ASSERT_EQ(got, want[i]) << kc.name << " avg " << average << " element " << i;
          }
        }
        // Only the target chunk changes.
        for (int c = 0; c < kc.nChunks; ++c) {
          if (c == target) continue;
          const size_t from = c * kc.chunkElems * dtypeSize(kc.dtype);
          const size_t to = from + kc.chunkElems * dtypeSize(kc.dtype);
          ASSERT_TRUE(std::equal(data.begin() + from, data.begin() + to, kc.bytes.begin() + from));
        }
      }
    }
  }
}

// Also checks that Bagua's order is not just any order: with more chunks than
// rows, a sequential sum differs somewhere.
TEST(BaguaReduceOrder, DiffersFromSequentialSum) {
  const KernelCase kc = testing::makeCase(DType::kFloat32, 4096, 8, Pattern::kWideMagnitude, 17);
  const std::vector<uint32_t> bagua = referenceReduce(kc.dtype, kc.data(), 4096, 8, false);
  int differs = 0;
  for (size_t i = 0; i < 4096; ++i) {
    float s = 0;
    for (int c = 0; c < 8; ++c) s += testing::elementAt(kc.dtype, kc.data(), c * 4096 + i);
    differs += bitsAt(kc.dtype, &s, 0) != bagua[i];
  }
  EXPECT_GT(differs, 0);
}

// The GPU's form of the order (a stack over rows in bit-reversed order,
// minmax::baguaChunkSum), run on the host, against Bagua's block tree.
TEST(BaguaReduceOrder, StackFormulationMatchesBlockTree) {
  for (int n = 1; n <= 70; ++n) {
    const KernelCase kc = testing::makeCase(DType::kFloat32, 4, n, Pattern::kWideMagnitude, 50 + n);
    const std::vector<uint32_t> want = referenceReduce(kc.dtype, kc.data(), 4, n, false);
    float sums[4];
    minmax::baguaChunkSum<4>(
        n,
        [&](int c, float(&v)[4]) {
          for (int e = 0; e < 4; ++e) v[e] += testing::elementAt(kc.dtype, kc.data(), c * 4 + e);
        },
        sums);
    for (int e = 0; e < 4; ++e) ASSERT_EQ(bitsAt(kc.dtype, &sums[e], 0), want[e]) << n << " " << e;
  }
}

}  // namespace
}  // namespace bagua::kernels
