// Bagua's MinMaxUInt8, re-stated one scalar at a time (see the header).
#include "tests/kernels/bagua_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tests/kernels/kernel_cases.h"

namespace bagua::kernels::testing {
namespace {

constexpr float kEps = 1e-7f;  // bagua_kernels.cu: const float eps = 1e-7;

uint32_t floatToRaw(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float rawToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// bf16 rounding by comparing the two neighbours in double.
uint16_t toBf16(float f) {
  if (std::isnan(f)) return 0x7fff;
  const uint32_t u = floatToRaw(f);
  const uint16_t down = static_cast<uint16_t>(u >> 16);  // toward zero
  if ((u & 0xffffu) == 0) return down;
  const uint16_t up = static_cast<uint16_t>(down + 1);  // away from zero (may reach Inf)
  const double dd = std::fabs(static_cast<double>(rawToFloat(static_cast<uint32_t>(down) << 16)));
  // bf16 spacing in this binade (7 fraction bits); past the top, 2^128 is "Inf".
  const int biased = static_cast<int>((u >> 23) & 0xffu);
  const double du = dd + std::ldexp(1.0, (biased == 0 ? 1 : biased) - 127 - 7);
  const double a = std::fabs(static_cast<double>(f));
  if (a - dd < du - a) return down;
  if (a - dd > du - a) return up;
  return (down & 1) ? up : down;
}

#if !defined(__FLT16_MANT_DIG__)
// Without the compiler's _Float16 (clang on x86 before 15): fp16 rounding in
// double: scale to an integer count of the binade's quantum, rint (ties to
// even in the default mode), rebuild the bits.
uint16_t toHalf(float f) {
  if (std::isnan(f)) return 0x7fff;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  int e = 0;
  std::frexp(a, &e);                     // a = m * 2^e, m in [0.5, 1)
  const int exp = std::max(e - 1, -14);  // subnormals share the quantum 2^-24
  const double quantum = std::ldexp(1.0, exp - 10);
  const double v = std::rint(a / quantum) * quantum;
  if (v >= 65536.0) return sign | 0x7c00;
  if (v < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(v / std::ldexp(1.0, -24));
  std::frexp(v, &e);
  const double mant = v / std::ldexp(1.0, e - 1 - 10) - 1024;
  return sign | static_cast<uint16_t>(((e - 1 + 15) << 10) | static_cast<int>(mant));
}

float fromHalf(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  if (exp == 0x1f) return mant ? NAN : static_cast<float>(sign * INFINITY);
  if (exp == 0) return static_cast<float>(sign * std::ldexp(mant, -24));
  return static_cast<float>(sign * std::ldexp(1024 + mant, exp - 25));
}
#endif

// Bagua's implicit float -> uint8_t, as nvcc compiles it: cvt.rzi.u32.f32
// (truncate; saturate to [0, 2^32 - 1]; NaN -> 0), then the low byte.
uint8_t toUint8LikeNvcc(float v) {
  if (std::isnan(v) || v <= 0.0f) return 0;
  if (v >= 4294967296.0f) return 0xff;
  return static_cast<uint8_t>(static_cast<uint32_t>(std::trunc(v)));
}

struct Bounds {
  float scale;
  float lower;
  float upper;
};

Bounds bounds(float mn, float mx) {
  Bounds b;
  // float scale = 255.0 / (max_ - min_ + eps);  (double division)
  b.scale = static_cast<float>(255.0 / static_cast<double>(mx - mn + kEps));
  b.upper = std::rint(mx * b.scale);
  // float lower_bound = upper_bound - 255.0;  (double subtraction)
  b.lower = static_cast<float>(static_cast<double>(b.upper) - 255.0);
  return b;
}

}  // namespace

uint32_t referenceFromFloat(DType dtype, float f) {
  switch (dtype) {
    case DType::kFloat32:
      return floatToRaw(f);
    case DType::kFloat16: {
#if defined(__FLT16_MANT_DIG__)
      if (std::isnan(f)) return 0x7fff;
      _Float16 h = static_cast<_Float16>(f);
      uint16_t b;
      std::memcpy(&b, &h, 2);
      return b;
#else
      return toHalf(f);
#endif
    }
    case DType::kBFloat16:
      return toBf16(f);
    default:  // the quantization takes the three float types only
      break;
  }
  return 0;
}

float referenceToFloat(DType dtype, uint32_t bits) {
  switch (dtype) {
    case DType::kFloat32:
      return rawToFloat(bits);
    case DType::kFloat16: {
      uint16_t b = static_cast<uint16_t>(bits);
#if defined(__FLT16_MANT_DIG__)
      _Float16 h;
      std::memcpy(&h, &b, 2);
      return static_cast<float>(h);
#else
      return fromHalf(b);
#endif
    }
    case DType::kBFloat16:
      return rawToFloat(bits << 16);
    default:  // the quantization takes the three float types only
      break;
  }
  return 0.0f;
}

ReferenceChunk referenceCompress(DType dtype, const void* chunk, size_t n) {
  ReferenceChunk out;
  // _min = torch.min(tensor); _max = torch.max(tensor)
  size_t minAt = 0;
  size_t maxAt = 0;
  for (size_t i = 1; i < n; ++i) {
    const float x = referenceToFloat(dtype, bitsAt(dtype, chunk, i));
    if (x < referenceToFloat(dtype, bitsAt(dtype, chunk, minAt))) minAt = i;
    if (x > referenceToFloat(dtype, bitsAt(dtype, chunk, maxAt))) maxAt = i;
  }
  out.minBits = bitsAt(dtype, chunk, minAt);
  out.maxBits = bitsAt(dtype, chunk, maxAt);
  const Bounds b =
      bounds(referenceToFloat(dtype, out.minBits), referenceToFloat(dtype, out.maxBits));
  out.codes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    // level = rintf(x * scale); level = min(level, upper_bound); level - lower_bound
    float level = std::rint(referenceToFloat(dtype, bitsAt(dtype, chunk, i)) * b.scale);
    level = std::fmin(level, b.upper);
    out.codes[i] = toUint8LikeNvcc(level - b.lower);
  }
  return out;
}

std::vector<uint32_t> referenceDecompress(DType dtype, const ReferenceChunk& chunk) {
  const Bounds b =
      bounds(referenceToFloat(dtype, chunk.minBits), referenceToFloat(dtype, chunk.maxBits));
  std::vector<uint32_t> out(chunk.codes.size());
  for (size_t i = 0; i < out.size(); ++i) {
    // (i + lower_bound) / scale, with i an int
    const float v = (static_cast<int>(chunk.codes[i]) + b.lower) / b.scale;
    out[i] = referenceFromFloat(dtype, v);
  }
  return out;
}

std::vector<uint32_t> referenceReduce(DType dtype, const void* data, size_t chunkElems, int nChunks,
                                      bool average) {
  // reduce_chunk_inplace_host: block height by chunk count.
  const int height = nChunks <= 4    ? 2
                     : nChunks <= 8  ? 4
                     : nChunks <= 16 ? 8
                     : nChunks <= 32 ? 16
                                     : 32;
  std::vector<uint32_t> out(chunkElems);
  std::vector<float> sdata(static_cast<size_t>(height));
  for (size_t idx = 0; idx < chunkElems; ++idx) {
    for (int tidy = 0; tidy < height; ++tidy) {
      float sum = 0.0;
      for (int i = tidy; i < nChunks; i += height) {
        sum = sum + referenceToFloat(dtype, bitsAt(dtype, data, chunkElems * i + idx));
      }
      sdata[static_cast<size_t>(tidy)] = sum;
    }
    // block_y_reduce: for s = height/2 .. 1: row t += row t + s.
    for (int s = height / 2; s >= 1; s /= 2) {
      for (int t = 0; t < s; ++t) sdata[t] = sdata[t] + sdata[t + s];
    }
    const float r = average ? sdata[0] / nChunks : sdata[0];
    out[idx] = referenceFromFloat(dtype, r);
  }
  return out;
}

}  // namespace bagua::kernels::testing
