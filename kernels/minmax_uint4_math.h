// The arithmetic of MinMaxUInt4 (minmax_uint4.h), written once for the CPU
// reference (g++) and the CUDA kernels (nvcc). Every step is one IEEE fp32
// operation rounded to nearest even; the CPU library is built with
// -ffp-contract=off and the GPU side uses __fmul_rn/__fadd_rn (MinMaxUInt8's
// minmax::mulRn/addRn), which nvcc never contracts into an FMA, so both give
// the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/minmax_uint8_math.h"

namespace bagua::kernels::uint4 {

constexpr float kLevels = 15.0f;

// The canonical quiet NaN (0x7fffffff), as the rest of kernels/ writes it.
BAGUA_HD float nanHd() {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(0x7fffffffu);
#else
  const uint32_t bits = 0x7fffffffu;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
#endif
}

BAGUA_HD size_t align32(size_t n) { return (n + 31) / 32 * 32; }

// Byte offsets inside one compressed chunk of `elems` elements.
BAGUA_HD size_t blocksOf(size_t elems, size_t block) { return (elems + block - 1) / block; }
BAGUA_HD size_t codesOffset(size_t elems, size_t block) {
  return align32(8 * blocksOf(elems, block));
}
BAGUA_HD size_t chunkBytes(size_t elems, size_t block) {
  return codesOffset(elems, block) + align32((elems + 1) / 2);
}

// A block's range as stored: mn, mx; NaN for a non-finite block.
struct Range {
  float mn;
  float mx;
};

// The stored range from the block's min, max and whether it held a NaN/Inf.
BAGUA_HD Range makeRange(float mn, float mx, bool nonFinite) {
  const float range = mx - mn;
  if (nonFinite || !minmax::isFiniteHd(range)) {
    return Range{nanHd(), nanHd()};
  }
  // +0.0f turns -0.0 into +0.0, so the stored bits do not depend on which of
  // two signed zeros the reduction order picked.
  return Range{mn + 0.0f, mx + 0.0f};
}

// The code of x in a finite block.
BAGUA_HD uint8_t encode(float x, Range r) {
  const float range = r.mx - r.mn;
  if (!(range > 0.0f)) return 0;  // constant block
  // A range below 15 / FLT_MAX (subnormal) makes s infinite and (mn - mn) * s
  // NaN: the clamps are written so that NaN lands on 0 (the block's minimum),
  // never cast (UB); every other code is unchanged.
  const float s = kLevels / range;
  float q = minmax::rintEven(minmax::mulRn(x - r.mn, s));
  q = q > 0.0f ? q : 0.0f;
  q = q > kLevels ? kLevels : q;
  return static_cast<uint8_t>(q);
}

// The value of code q.
BAGUA_HD float decode(uint8_t q, Range r) {
  if (!minmax::isFiniteHd(r.mn)) return r.mn;  // NaN block
  const float step = (r.mx - r.mn) / kLevels;
  return minmax::addRn(r.mn, minmax::mulRn(static_cast<float>(q), step));
}

}  // namespace bagua::kernels::uint4
