// Inputs shared by the kernel tests.
#include "tests/kernels/kernel_cases.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/float_bits.h"

namespace bagua::kernels::testing {
namespace {

void storeFloat(DType dtype, std::vector<uint8_t>& bytes, size_t i, float v) {
  switch (dtype) {
    case DType::kFloat32:
      std::memcpy(bytes.data() + 4 * i, &v, 4);
      return;
    case DType::kFloat16: {
      uint16_t h = floatToHalf(v);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
      return;
    }
    case DType::kBFloat16: {
      uint16_t h = floatToBf16(v);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
      return;
    }
    default:  // cases are of the three float types only
      return;
  }
}

// Raw bits, so that NaN payloads and signs survive.
void storeBitsOf(DType dtype, std::vector<uint8_t>& bytes, size_t i, uint32_t bits) {
  if (dtype == DType::kFloat32) {
    std::memcpy(bytes.data() + 4 * i, &bits, 4);
  } else {
    uint16_t h = static_cast<uint16_t>(bits);
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
}

uint32_t special(DType dtype, int which) {
  const bool wide = dtype == DType::kFloat32;
  const bool half = dtype == DType::kFloat16;
  switch (which) {
    case 0:  // quiet NaN with a payload
      return wide ? 0x7fc01234u : half ? 0x7e12u : 0x7fc1u;
    case 1:  // +Inf
      return wide ? 0x7f800000u : half ? 0x7c00u : 0x7f80u;
    case 2:  // -Inf
      return wide ? 0xff800000u : half ? 0xfc00u : 0xff80u;
    default:  // negative NaN
      return wide ? 0xffc00001u : half ? 0xfe01u : 0xffc1u;
  }
}

float patternValue(Pattern p, Rng& rng, int chunk) {
  switch (p) {
    case Pattern::kUniform:
    case Pattern::kSpecials:
      return 2.0f * rng.uniform() - 1.0f;
    case Pattern::kOffset:
      return 1000.0f + rng.uniform();
    case Pattern::kWideMagnitude: {
      float m = 1.0f + rng.uniform();
      int e = static_cast<int>(rng.below(35)) - 20;  // |x| < 32768: finite in fp16
      return (rng.next() & 1 ? -1.0f : 1.0f) * std::ldexp(m, e);
    }
    case Pattern::kTinyRange:
      return chunk % 2 ? std::nextafter(0.3f, 1.0f) * (rng.next() & 1 ? 1.0f : 1.0000001f)
                       : 1e6f + static_cast<float>(rng.below(3)) * 0.0625f;
    case Pattern::kConstant: {
      static const float kConstants[] = {0.0f, 0.3f, -7.5f, 1.0f, 1e30f, -1e-30f, 65504.0f, -0.0f};
      return kConstants[chunk % 8];
    }
    case Pattern::kMixedZeros:
      return rng.next() & 1 ? -0.0f : 0.0f;
    case Pattern::kIntegers:
      return static_cast<float>(static_cast<int>(rng.below(512)) - 256);
  }
  return 0.0f;
}

}  // namespace

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

float Rng::uniform() { return static_cast<float>(next() >> 40) * 0x1p-24f; }

const char* patternName(Pattern p) {
  switch (p) {
    case Pattern::kUniform:
      return "uniform";
    case Pattern::kOffset:
      return "offset";
    case Pattern::kWideMagnitude:
      return "wide";
    case Pattern::kTinyRange:
      return "tiny_range";
    case Pattern::kConstant:
      return "constant";
    case Pattern::kSpecials:
      return "specials";
    case Pattern::kMixedZeros:
      return "mixed_zeros";
    case Pattern::kIntegers:
      return "integers";
  }
  return "?";
}

KernelCase makeCase(DType dtype, size_t chunkElems, int nChunks, Pattern pattern, uint64_t seed) {
  KernelCase kc;
  kc.name = std::string(dtypeName(dtype)) + "/" + patternName(pattern) + "/e" +
            std::to_string(chunkElems) + "/n" + std::to_string(nChunks);
  kc.dtype = dtype;
  kc.chunkElems = chunkElems;
  kc.nChunks = nChunks;
  kc.bytes.assign(kc.elems() * dtypeSize(dtype), 0);
  Rng rng(seed);
  for (int c = 0; c < nChunks; ++c) {
    for (size_t i = 0; i < chunkElems; ++i) {
      storeFloat(dtype, kc.bytes, c * chunkElems + i, patternValue(pattern, rng, c));
    }
    if (pattern == Pattern::kSpecials && c % 5 != 4) {
      storeBitsOf(dtype, kc.bytes, c * chunkElems + rng.below(chunkElems), special(dtype, c % 5));
    }
    if (pattern == Pattern::kMixedZeros && c == 1) {
      storeFloat(dtype, kc.bytes, c * chunkElems + rng.below(chunkElems), 1.0f);
    }
  }
  return kc;
}

std::vector<KernelCase> standardCases() {
  std::vector<KernelCase> cases;
  const DType dtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  const size_t sizes[] = {1, 2, 7, 31, 32, 33, 64, 100, 257, 1000, 4096, 4099};
  const int chunkCounts[] = {1, 2, 3, 4, 5, 8};
  const Pattern patterns[] = {Pattern::kUniform,    Pattern::kOffset,   Pattern::kWideMagnitude,
                              Pattern::kTinyRange,  Pattern::kConstant, Pattern::kSpecials,
                              Pattern::kMixedZeros, Pattern::kIntegers};
  uint64_t seed = 1;
  for (DType d : dtypes) {
    for (size_t e : sizes) {
      for (int n : chunkCounts) {
        for (Pattern p : patterns) cases.push_back(makeCase(d, e, n, p, seed++));
      }
    }
  }
  return cases;
}

float elementAt(DType dtype, const void* data, size_t i) {
  const uint32_t b = bitsAt(dtype, data, i);
  switch (dtype) {
    case DType::kFloat32:
      return bitsFloat(b);
    case DType::kFloat16:
      return halfToFloat(static_cast<uint16_t>(b));
    case DType::kBFloat16:
      return bf16ToFloat(static_cast<uint16_t>(b));
    default:  // cases are of the three float types only
      break;
  }
  return std::numeric_limits<float>::quiet_NaN();
}

void setElement(DType dtype, void* data, size_t i, float value) {
  auto* bytes = static_cast<uint8_t*>(data);
  if (dtype == DType::kFloat32) {
    const uint32_t b = floatBits(value);
    std::memcpy(bytes + 4 * i, &b, 4);
    return;
  }
  const uint16_t h = dtype == DType::kFloat16 ? floatToHalf(value) : floatToBf16(value);
  std::memcpy(bytes + 2 * i, &h, 2);
}

uint32_t bitsAt(DType dtype, const void* data, size_t i) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (dtype == DType::kFloat32) {
    uint32_t b;
    std::memcpy(&b, p + 4 * i, 4);
    return b;
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return h;
}

}  // namespace bagua::kernels::testing
