// MinMaxUInt8 CPU reference on crafted inputs whose results are known: the
// layout, exact grids, the error bound, constant and non-finite chunks,
// target >= 0, odd sizes and bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/float_bits.h"
#include "kernels/minmax_uint8.h"
#include "tests/kernels/kernel_cases.h"

namespace bagua::kernels {
namespace {

using testing::bitsAt;
using testing::elementAt;
using testing::KernelCase;
using testing::makeCase;
using testing::Pattern;

const DType kAllDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

std::vector<uint8_t> compressAll(const KernelCase& kc) {
  std::vector<uint8_t> out(compressedChunkBytes(kc.chunkElems) * kc.nChunks, 0xcd);
  compressCpu(kc.dtype, kc.data(), kc.chunkElems, kc.nChunks, -1, out.data());
  return out;
}

std::vector<uint8_t> decompressAll(const KernelCase& kc, const std::vector<uint8_t>& packed) {
  std::vector<uint8_t> out(kc.bytes.size(), 0xcd);
  decompressCpu(kc.dtype, packed.data(), kc.chunkElems, kc.nChunks, out.data());
  return out;
}

KernelCase fromFloats(DType dtype, const std::vector<float>& values, int nChunks) {
  KernelCase kc = makeCase(dtype, values.size() / nChunks, nChunks, Pattern::kUniform, 0);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kFloat32) {
      std::memcpy(kc.bytes.data() + 4 * i, &values[i], 4);
    } else {
      uint16_t h = dtype == DType::kFloat16 ? floatToHalf(values[i]) : floatToBf16(values[i]);
      std::memcpy(kc.bytes.data() + 2 * i, &h, 2);
    }
  }
  return kc;
}

// Bits -> unsigned key in the order of the values (as documented).
uint32_t orderKey(DType dtype, uint32_t bits) {
  const uint32_t sign = dtype == DType::kFloat32 ? 0x80000000u : 0x8000u;
  const uint32_t all = dtype == DType::kFloat32 ? 0xffffffffu : 0xffffu;
  return (bits & sign) ? (~bits & all) : (bits | sign);
}

uint32_t u32At(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

TEST(MinMaxUInt8, CompressedChunkBytesIsAlign32PlusHeader) {
  EXPECT_EQ(compressedChunkBytes(0), 32u);
  EXPECT_EQ(compressedChunkBytes(1), 64u);
  EXPECT_EQ(compressedChunkBytes(32), 64u);
  EXPECT_EQ(compressedChunkBytes(33), 96u);
  EXPECT_EQ(compressedChunkBytes(1000), 1024u + 32u);
}

// 0..255 and 1000..1255: s = 255 / (255 + 1e-7) rounds to 1, so codes are
// the values minus the minimum and decoding is exact.
TEST(MinMaxUInt8, IntegerRangeOf255IsQuantizedExactly) {
  for (DType dtype : kAllDTypes) {
    for (float offset : {0.0f, 1000.0f, -128.0f}) {
      if (dtype == DType::kBFloat16 && offset != 0.0f) continue;  // bf16 has 8 bits
      std::vector<float> v(256);
      for (int i = 0; i < 256; ++i) v[i] = offset + static_cast<float>((i * 37) % 256);
      const KernelCase kc = fromFloats(dtype, v, 1);
      const auto packed = compressAll(kc);
      for (int i = 0; i < 256; ++i) {
        EXPECT_EQ(packed[32 + i], static_cast<uint8_t>((i * 37) % 256)) << dtypeName(dtype) << i;
      }
      EXPECT_EQ(decompressAll(kc, packed), kc.bytes) << dtypeName(dtype) << " offset " << offset;
    }
  }
}

TEST(MinMaxUInt8, HeaderHoldsExactMinMaxZerosAndKeys) {
  for (DType dtype : kAllDTypes) {
    const KernelCase kc = makeCase(dtype, 1000, 3, Pattern::kWideMagnitude, 7);
    const auto packed = compressAll(kc);
    const size_t stride = compressedChunkBytes(kc.chunkElems);
    const size_t width = dtypeSize(dtype);
    for (int c = 0; c < kc.nChunks; ++c) {
      const uint8_t* h = packed.data() + c * stride;
      float mn = INFINITY;
      float mx = -INFINITY;
      for (size_t i = 0; i < kc.chunkElems; ++i) {
        mn = std::fmin(mn, elementAt(dtype, kc.data(), c * kc.chunkElems + i));
        mx = std::fmax(mx, elementAt(dtype, kc.data(), c * kc.chunkElems + i));
      }
      EXPECT_EQ(elementAt(dtype, h, 0), mn);
      EXPECT_EQ(elementAt(dtype, h, 1), mx);
      for (size_t b = 2 * width; b < 24; ++b) EXPECT_EQ(h[b], 0) << b;
      EXPECT_EQ(u32At(h + 24), ~orderKey(dtype, bitsAt(dtype, h, 0)));
      EXPECT_EQ(u32At(h + 28), orderKey(dtype, bitsAt(dtype, h, 1)));
      for (size_t b = 32 + kc.chunkElems; b < stride; ++b) EXPECT_EQ(h[b], 0) << b;
      // The maximum sits on the top code.
      for (size_t i = 0; i < kc.chunkElems; ++i) {
        if (elementAt(dtype, kc.data(), c * kc.chunkElems + i) == mx) {
          EXPECT_EQ(h[32 + i], 255);
        }
      }
    }
  }
}

// |x' - x| <= (mx - mn + eps) / 510 plus fp32 rounding of the products, plus
// half an ulp of the output dtype.
TEST(MinMaxUInt8, ErrorIsAtMostHalfAStep) {
  for (DType dtype : kAllDTypes) {
    for (Pattern p : {Pattern::kUniform, Pattern::kOffset, Pattern::kWideMagnitude}) {
      const KernelCase kc = makeCase(dtype, 4099, 4, p, 11);
      const auto out = decompressAll(kc, compressAll(kc));
      const float outUlp = dtype == DType::kFloat32   ? 0x1p-24f
                           : dtype == DType::kFloat16 ? 0x1p-11f
                                                      : 0x1p-8f;
      for (int c = 0; c < kc.nChunks; ++c) {
        float mn = INFINITY;
        float mx = -INFINITY;
        float big = 0;
        for (size_t i = 0; i < kc.chunkElems; ++i) {
          const float x = elementAt(dtype, kc.data(), c * kc.chunkElems + i);
          mn = std::fmin(mn, x);
          mx = std::fmax(mx, x);
          big = std::fmax(big, std::fabs(x));
        }
        const double bound = (static_cast<double>(mx) - mn + 1e-7) / 510 + 4 * 0x1p-24 * big;
        for (size_t i = 0; i < kc.chunkElems; ++i) {
          const size_t k = c * kc.chunkElems + i;
          const double x = elementAt(dtype, kc.data(), k);
          const double y = elementAt(dtype, out.data(), k);
          ASSERT_LE(std::fabs(y - x), bound + outUlp * std::fabs(y))
              << kc.name << " chunk " << c << " element " << i;
        }
      }
    }
  }
}

// Values already on a grid of step 2^-e anchored at the top come back
// unchanged, codes and all.
TEST(MinMaxUInt8, ValuesOnTheGridRoundTripExactly) {
  testing::Rng rng(3);
  for (int e : {0, 1, 2, 3}) {
    const float step = std::ldexp(1.0f, -e);
    std::vector<float> v(300);
    std::vector<uint8_t> codes(v.size());
    const float top = 40.0f;  // a multiple of every step: rint(top * s) is exact
    for (size_t i = 0; i < v.size(); ++i) {
      codes[i] = i == 0 ? 0 : i == 1 ? 255 : static_cast<uint8_t>(rng.below(256));
      v[i] = top - step * static_cast<float>(255 - codes[i]);
    }
    const KernelCase kc = fromFloats(DType::kFloat32, v, 1);
    const auto packed = compressAll(kc);
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(packed[32 + i], codes[i]) << e << " " << i;
    EXPECT_EQ(decompressAll(kc, packed), kc.bytes) << "step 2^-" << e;
  }
}

// Including 1e30 (x * s overflows in Bagua's formula) and -0.0; in fp16 1e30
// is Inf, so that chunk decodes to NaN like every non-finite chunk.
TEST(MinMaxUInt8, ConstantChunksRoundTripExactly) {
  for (DType dtype : kAllDTypes) {
    for (size_t n : {1, 5, 33}) {
      const KernelCase kc = makeCase(dtype, n, 8, Pattern::kConstant, 5);
      const auto out = decompressAll(kc, compressAll(kc));
      for (size_t k = 0; k < kc.elems(); ++k) {
        if (std::isinf(elementAt(dtype, kc.data(), k))) {
          EXPECT_TRUE(std::isnan(elementAt(dtype, out.data(), k))) << kc.name << " " << k;
        } else {
          EXPECT_EQ(bitsAt(dtype, out.data(), k), bitsAt(dtype, kc.data(), k))
              << kc.name << " " << k;
        }
      }
    }
  }
}

TEST(MinMaxUInt8, NonFiniteChunkDecodesToNanEverywhere) {
  for (DType dtype : kAllDTypes) {
    const KernelCase kc = makeCase(dtype, 100, 5, Pattern::kSpecials, 9);
    const auto packed = compressAll(kc);
    const auto out = decompressAll(kc, packed);
    const uint32_t nan = dtype == DType::kFloat32 ? 0x7fffffffu : 0x7fffu;
    const size_t stride = compressedChunkBytes(kc.chunkElems);
    for (int c = 0; c < kc.nChunks; ++c) {
      const bool poisoned = c % 5 != 4;  // NaN, +Inf, -Inf, -NaN; chunk 4 is finite
      if (poisoned) {
        EXPECT_EQ(bitsAt(dtype, packed.data() + c * stride, 0), nan);
        EXPECT_EQ(bitsAt(dtype, packed.data() + c * stride, 1), nan);
      }
      for (size_t i = 0; i < kc.chunkElems; ++i) {
        const size_t k = c * kc.chunkElems + i;
        if (poisoned) {
          ASSERT_EQ(bitsAt(dtype, out.data(), k), nan) << kc.name << " chunk " << c;
          ASSERT_EQ(packed[c * stride + 32 + i], 0);
        } else {
          ASSERT_TRUE(std::isfinite(elementAt(dtype, out.data(), k)));
        }
      }
    }
  }
}

TEST(MinMaxUInt8, NonFiniteHeaderFromAnyEncoderDecodesToNan) {
  std::vector<uint8_t> packed(compressedChunkBytes(4), 0);
  const float mn = -INFINITY;
  const float mx = 1.0f;
  std::memcpy(packed.data(), &mn, 4);
  std::memcpy(packed.data() + 4, &mx, 4);
  std::vector<float> out(4);
  decompressCpu(DType::kFloat32, packed.data(), 4, 1, out.data());
  for (float v : out) EXPECT_EQ(floatBits(v), 0x7fffffffu);
}

// Kept from Bagua: a range that overflows fp32 gives s = 0 and NaN.
TEST(MinMaxUInt8, RangeOverflowingFp32DecodesToNan) {
  const KernelCase kc =
      fromFloats(DType::kFloat32, std::vector<float>{-3e38f, 0.0f, 3e38f, 1.0f}, 1);
  const auto out = decompressAll(kc, compressAll(kc));
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(elementAt(DType::kFloat32, out.data(), i)));
}

TEST(MinMaxUInt8, MixedSignedZerosGiveMinusZeroAndPlusZero) {
  const KernelCase kc =
      fromFloats(DType::kFloat32, std::vector<float>{0.0f, -0.0f, 0.0f, -0.0f}, 1);
  const auto packed = compressAll(kc);
  EXPECT_EQ(u32At(packed.data()), 0x80000000u);
  EXPECT_EQ(u32At(packed.data() + 4), 0u);
  const auto out = decompressAll(kc, packed);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(elementAt(DType::kFloat32, out.data(), i), 0.0f);
}

TEST(MinMaxUInt8, TargetCompressesOneChunkLikeTheFullBuffer) {
  for (DType dtype : kAllDTypes) {
    for (int n : {1, 2, 3, 8}) {
      const KernelCase kc = makeCase(dtype, 77, n, Pattern::kUniform, 13);
      const auto all = compressAll(kc);
      const size_t stride = compressedChunkBytes(kc.chunkElems);
      for (int t = 0; t < n; ++t) {
        std::vector<uint8_t> one(stride, 0xcd);
        compressCpu(dtype, kc.data(), kc.chunkElems, n, t, one.data());
        EXPECT_TRUE(std::equal(one.begin(), one.end(), all.begin() + t * stride)) << kc.name << t;
      }
    }
  }
}

TEST(MinMaxUInt8, EmptyChunksWriteZeroHeaders) {
  std::vector<uint8_t> packed(64, 0xcd);
  compressCpu(DType::kFloat16, nullptr, 0, 2, -1, packed.data());
  for (uint8_t b : packed) EXPECT_EQ(b, 0);
  decompressCpu(DType::kFloat16, packed.data(), 0, 2, nullptr);
}

TEST(MinMaxUInt8, BadArgumentsThrowNamingTheValue) {
  std::vector<uint8_t> buf(1024);
  EXPECT_THROW(compressCpu(DType::kFloat32, buf.data(), 4, 0, -1, buf.data()),
               std::invalid_argument);
  EXPECT_THROW(compressCpu(DType::kFloat32, buf.data(), 4, 2, 2, buf.data()),
               std::invalid_argument);
  EXPECT_THROW(reduceChunksCpu(DType::kFloat32, buf.data(), 4, 2, -1, false),
               std::invalid_argument);
  EXPECT_THROW(decompressCpu(static_cast<DType>(7), buf.data(), 4, 1, buf.data()),
               std::invalid_argument);
  try {
    compressCpu(DType::kFloat32, buf.data(), 4, 70000, -1, buf.data());
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("nChunks = 70000"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace bagua::kernels
