// Scalar fp16 / bf16 <-> fp32 conversions on the CPU, rounding to nearest
// even like the GPU's __float2half_rn / __float2bfloat16_rn, so CPU reference
// results match CUDA results bit for bit. Overflow gives Inf; every NaN
// becomes the canonical 0x7fff, as in cuda_fp16.hpp / cuda_bf16.hpp (the
// payload and sign of a NaN are not kept). Checked exhaustively against the
// compiler's _Float16 and a bf16 rounding reference in
// tests/kernels/float_bits_test.cc.
#pragma once

#include <cstdint>
#include <cstring>

namespace bagua::kernels {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline float bf16ToFloat(uint16_t h) { return bitsFloat(static_cast<uint32_t>(h) << 16); }

inline uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;  // canonical NaN
  u += 0x7fffu + ((u >> 16) & 1u);                      // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bitsFloat(sign | 0x7f800000u | (mant << 13));  // Inf / NaN
  if (exp == 0) {
    if (mant == 0) return bitsFloat(sign);
    // Subnormal: normalise.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    mant &= 0x3ffu;
    return bitsFloat(sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13));
  }
  return bitsFloat(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

inline uint16_t floatToHalf(float f) {
  uint32_t u = floatBits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return 0x7fffu;                                 // canonical NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to Inf
  if (abs < 0x38800000u) {                                      // subnormal or zero in half
    if (abs < 0x33000001u) return static_cast<uint16_t>(sign);  // rounds to 0
    uint32_t exp = abs >> 23;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;  // 14 - (exp - 112)
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even at bit 13
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

}  // namespace bagua::kernels
