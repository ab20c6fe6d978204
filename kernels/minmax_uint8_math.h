// The arithmetic of MinMaxUInt8 and of the chunk reduction, written once for
// both the CPU reference (g++) and the CUDA kernels (nvcc): every operation
// here is one IEEE fp32 operation rounded to nearest even, so both sides give
// the same bits. Formula, layout and sources: minmax_uint8.h.
//
// Relies on: no fast-math and no contraction of a*b+c into an FMA (the CPU
// library is built with -ffp-contract=off; the one product followed by a sum,
// in encodeFast, uses __fmul_rn/__fadd_rn on the GPU, which nvcc never
// contracts; nvcc keeps IEEE division without --use_fast_math).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define BAGUA_HD __host__ __device__ __forceinline__
#else
#define BAGUA_HD inline
#endif
// Unrolling keeps small arrays indexed by loop counters in registers on the GPU.
#if defined(__CUDA_ARCH__)
#define BAGUA_UNROLL _Pragma("unroll")
#else
#define BAGUA_UNROLL
#endif

namespace bagua::kernels::minmax {

constexpr float kEps = 1e-7f;      // Bagua's eps (a float constant in bagua_kernels.cu)
constexpr float kLevels = 255.0f;  // quantization levels
constexpr size_t kHeaderBytes = 32;
// Two uint32 of the header after Bagua's min/max: the order keys of min and
// max (the CUDA kernel's atomics work there; the CPU writes the same values).
constexpr size_t kMinKeyOffset = 24;  // ~orderKey(min)
constexpr size_t kMaxKeyOffset = 28;  // orderKey(max)
constexpr int kMaxReduceWidth = 32;

BAGUA_HD uint32_t floatToBitsHd(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

// Not Inf and not NaN.
BAGUA_HD bool isFiniteHd(float f) { return (floatToBitsHd(f) & 0x7f800000u) != 0x7f800000u; }

BAGUA_HD bool isNanHd(float f) { return (floatToBitsHd(f) & 0x7fffffffu) > 0x7f800000u; }

// rint in the default rounding mode: nearest, ties to even (Bagua: rintf).
BAGUA_HD float rintEven(float x) {
#if defined(__CUDA_ARCH__)
  return rintf(x);
#else
  // |x| >= 2^23 is already an integer (or Inf/NaN). Below, adding 2^23 leaves
  // no fraction bits, so the addition itself rounds to nearest even; the
  // subtraction is exact. Written as selects so loops vectorize (libm's rintf
  // is a call on x86-64 without SSE4.1).
  const float kTwo23 = 8388608.0f;
  const float ax = __builtin_fabsf(x);
  const float r = __builtin_copysignf((ax + kTwo23) - kTwo23, x);
  return ax < kTwo23 ? r : x;
#endif
}

// float -> uint8 exactly as nvcc compiles Bagua's implicit conversion of the
// code (checked on nvcc 13 PTX): cvt.rzi.u32.f32 (truncate, saturate to
// [0, 2^32-1], NaN -> 0), then the low byte is stored. So 256 wraps to 0.
BAGUA_HD uint8_t codeByte(float v) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint8_t>(__float2uint_rz(v));
#else
  // Selects instead of branches, for the vectorizer: below 2^31 an int32
  // conversion truncates exactly; floats in [2^31, 2^32) are multiples of 256
  // (low byte 0); from 2^32 the saturated value 0xffffffff has low byte 255.
  const float c = v > 0.0f ? v : 0.0f;  // NaN and negatives -> 0
  const auto low = static_cast<uint8_t>(static_cast<int32_t>(c < 2147483648.0f ? c : 0.0f));
  return c >= 4294967296.0f ? uint8_t{255} : low;
#endif
}

// Quantization grid of one chunk, from its min and max as floats.
struct Grid {
  float scale;  // 255 / (mx - mn + eps)
  float lower;  // upper - 255
  float upper;  // rint(mx * scale)
};

BAGUA_HD Grid makeGrid(float mn, float mx) {
  Grid g;
  // Bagua writes 255.0 / (...) and upper - 255.0 in double; for one division
  // or subtraction of floats, double then float rounding equals one float
  // rounding (53 >= 2*24 + 2), so fp32 arithmetic gives the same bits.
  g.scale = kLevels / (mx - mn + kEps);
  g.upper = rintEven(mx * g.scale);
  g.lower = g.upper - kLevels;
  return g;
}

BAGUA_HD uint8_t encode(float x, const Grid& g) {
  float level = rintEven(x * g.scale);
  // fminf(level, upper): upper is never NaN for a finite header.
  level = level < g.upper ? level : g.upper;
  return codeByte(level - g.lower);
}

// The same codes without rint and without the float -> integer conversion,
// for the GPU's quantize loop: FRND and F2I go to the conversion pipe (16
// lanes per SM and clock on sm_80/sm_90, an eighth of the FP32 rate), and two
// of them per element made the 16-bit dtypes compute-bound. Valid for the
// elements x of a finite chunk [mn, mx] when fastEncodable(mn, mx, g):
//  * |x * s| < 2^22, so adding 1.5 * 2^23 (an even integer) lands in
//    [2^23, 2^24], where the float grid is the integers: the sum rounds x * s
//    to the nearest integer, ties to even, exactly like rint (kRoundShift + r).
//  * x <= mx and s >= 0, so r <= rint(mx * s) = upper: Bagua's min(r, upper)
//    never changes r. r < lower would give a negative code, which saturates
//    to 0: that is max(r, lower).
//  * kRoundShift + max(r, lower) + (2^23 - kRoundShift - lower) is
//    2^23 + code, code in [0, 255], exact: the code is its low mantissa byte.
// Every sum is exact or rounds once as said; products and sums must not be
// contracted into an FMA (mulRn/addRn).
constexpr float kRoundShift = 12582912.0f;  // 1.5 * 2^23
constexpr float kFastLimit = 4194304.0f;    // 2^22

struct FastGrid {
  float scale;  // Grid::scale
  float floor;  // kRoundShift + lower
  float shift;  // 2^23 - floor
};

BAGUA_HD float mulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

BAGUA_HD float addRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// Larger of two floats that are not NaN (one FMNMX on the GPU).
BAGUA_HD float maxHd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return fmaxf(a, b);
#else
  return a > b ? a : b;
#endif
}

// Whether encodeFast equals encode for every x of the finite chunk [mn, mx]:
// |x * s| <= max(|mn * s|, |mx * s|) because rounding is monotonic.
BAGUA_HD bool fastEncodable(float mn, float mx, const Grid& g) {
  const float lo = mulRn(mn, g.scale);
  const float hi = mulRn(mx, g.scale);
  return lo > -kFastLimit && lo < kFastLimit && hi > -kFastLimit && hi < kFastLimit;
}

BAGUA_HD FastGrid makeFastGrid(const Grid& g) {
  const float floor = kRoundShift + g.lower;
  return FastGrid{g.scale, floor, 8388608.0f - floor};
}

BAGUA_HD uint8_t encodeFast(float x, const FastGrid& f) {
  const float t = maxHd(addRn(mulRn(x, f.scale), kRoundShift), f.floor);
  return static_cast<uint8_t>(floatToBitsHd(addRn(t, f.shift)));
}

BAGUA_HD float decode(uint8_t q, const Grid& g) {
  return (static_cast<float>(q) + g.lower) / g.scale;
}

// A decoded value within +-maxFinite, the element type's largest finite
// value. Bagua's formula puts the extreme codes up to range / 510 beyond the
// chunk's min and max, which rounds to +-Inf in a float16 chunk reaching
// +-65504 (or a bfloat16 one near its limit): a finite chunk must decode to
// finite values. Every value that does not overflow is Bagua's, unchanged.
BAGUA_HD float saturate(float x, float maxFinite) {
  return x > maxFinite ? maxFinite : (x < -maxFinite ? -maxFinite : x);
}

// What a chunk's min/max say about how to decode it.
enum class ChunkKind : uint8_t {
  kRange,      // Bagua's formula
  kConstant,   // min == max: every element is min, exactly
  kNonFinite,  // a NaN or Inf in the chunk: every element is NaN
};

BAGUA_HD ChunkKind classify(float mn, float mx) {
  if (!isFiniteHd(mn) || !isFiniteHd(mx)) return ChunkKind::kNonFinite;
  if (mn == mx) return ChunkKind::kConstant;
  return ChunkKind::kRange;
}

// Order key: unsigned integer order of keys == total order of the values
// (-NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN). Min/max over keys is
// associative and commutative, so any reduction order (CPU loop, GPU atomics)
// picks the same bits, and NaN/Inf end up as min or max.
template <typename Bits>
BAGUA_HD uint32_t orderKey(Bits bits) {
  constexpr Bits kSign = static_cast<Bits>(Bits(1) << (sizeof(Bits) * 8 - 1));
  Bits key = (bits & kSign) ? static_cast<Bits>(~bits) : static_cast<Bits>(bits | kSign);
  return key;
}

template <typename Bits>
BAGUA_HD Bits keyToBits(uint32_t key) {
  constexpr Bits kSign = static_cast<Bits>(Bits(1) << (sizeof(Bits) * 8 - 1));
  Bits k = static_cast<Bits>(key);
  return (k & kSign) ? static_cast<Bits>(k & ~kSign) : static_cast<Bits>(~k);
}

// Bagua's reduce_chunk_inplace block height for nChunks chunks: thread row t
// sums chunks t, t+Y, t+2Y, ... starting from 0.0f, then rows are combined by
// a shared-memory tree (row t += row t+s for s = Y/2 ... 1).
BAGUA_HD int reduceWidth(int nChunks) {
  return nChunks <= 4 ? 2 : nChunks <= 8 ? 4 : nChunks <= 16 ? 8 : nChunks <= 32 ? 16 : 32;
}

BAGUA_HD int log2Width(int width) {
  int l = 0;
  while ((1 << l) < width) ++l;
  return l;
}

BAGUA_HD int bitReverse(int v, int bits) {
  int r = 0;
  for (int i = 0; i < bits; ++i) r |= ((v >> i) & 1) << (bits - 1 - i);
  return r;
}

// Sum of nChunks values per lane in Bagua's order, for G lanes at once.
// The tree over rows equals a pairwise sum of the rows taken in bit-reversed
// order (rows 0, Y/2, Y/4, 3Y/4, ...), computed here with a stack of
// log2(Y)+1 partial sums: leaf L is merged with the stack top once for every
// trailing one bit of L, so stack indices are compile-time constants once the
// leaf loop is unrolled. load(chunk, float (&v)[G]) adds chunk's lanes to v.
template <int G, typename Load>
BAGUA_HD void baguaChunkSum(int nChunks, Load load, float (&out)[G]) {
  const int width = reduceWidth(nChunks);
  const int bits = log2Width(width);
  float stack[6][G];
  int depth = 0;
  BAGUA_UNROLL
  for (int leaf = 0; leaf < kMaxReduceWidth; ++leaf) {
    if (leaf >= width) break;
    const int row = bitReverse(leaf, bits);
    float v[G];
    BAGUA_UNROLL
    for (int e = 0; e < G; ++e) v[e] = 0.0f;
    for (int c = row; c < nChunks; c += width) load(c, v);
    BAGUA_UNROLL
    for (int m = leaf; m & 1; m >>= 1) {
      --depth;
      BAGUA_UNROLL
      for (int e = 0; e < G; ++e) v[e] = stack[depth][e] + v[e];
    }
    BAGUA_UNROLL
    for (int e = 0; e < G; ++e) stack[depth][e] = v[e];
    ++depth;
  }
  BAGUA_UNROLL
  for (int e = 0; e < G; ++e) out[e] = stack[0][e];
}

// Sum or mean of a Bagua chunk sum: Bagua divides the fp32 sum by n.
BAGUA_HD float finishReduce(float sum, int nChunks, bool average) {
  return average ? sum / static_cast<float>(nChunks) : sum;
}

}  // namespace bagua::kernels::minmax
