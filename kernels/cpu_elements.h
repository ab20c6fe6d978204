// Element types of the CPU reference: raw bits <-> fp32 through float_bits.h
// (round to nearest even, like cuda_fp16/cuda_bf16; every NaN written is the
// canonical one, like on the GPU) and a dispatch from DType.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/float_bits.h"
#include "kernels/minmax_uint8_math.h"

namespace bagua::kernels {

struct CpuFloat32 {
  using Bits = uint32_t;
  static constexpr Bits kNan = 0x7fffffffu;  // CUDA's canonical NaN
  static constexpr float kMaxFinite = 3.40282347e38f;
  static float toFloat(Bits b) { return bitsFloat(b); }
  static Bits fromFloat(float f) { return minmax::isNanHd(f) ? kNan : floatBits(f); }
};

struct CpuFloat16 {
  using Bits = uint16_t;
  static constexpr Bits kNan = 0x7fffu;
  static constexpr float kMaxFinite = 65504.0f;
  static float toFloat(Bits b) { return halfToFloat(b); }
  static Bits fromFloat(float f) { return floatToHalf(f); }  // NaN -> 0x7fff
};

struct CpuBFloat16 {
  using Bits = uint16_t;
  static constexpr Bits kNan = 0x7fffu;
  static constexpr float kMaxFinite = 3.38953139e38f;  // 0x7f7f
  static float toFloat(Bits b) { return bf16ToFloat(b); }
  static Bits fromFloat(float f) { return floatToBf16(f); }  // NaN -> 0x7fff
};

// Calls fn(Traits{}) with the traits of dtype, a float type (the callers
// check it first: checkChunkArgs / checkElementArgs); does nothing for others.
template <typename Fn>
void dispatchCpu(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      fn(CpuFloat32{});
      return;
    case DType::kFloat16:
      fn(CpuFloat16{});
      return;
    case DType::kBFloat16:
      fn(CpuBFloat16{});
      return;
    case DType::kFloat64:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt32:
    case DType::kInt64:
      return;
  }
}

template <typename Bits>
Bits loadBits(const uint8_t* p) {
  Bits b;
  std::memcpy(&b, p, sizeof(b));
  return b;
}

template <typename Bits>
void storeBits(uint8_t* p, Bits b) {
  std::memcpy(p, &b, sizeof(b));
}

// Bagua's reduction order (minmax_uint8_math.h) over blocks of elements:
// the rows of its CUDA block become arrays, so the loops vectorize.
// addChunk(c, base, m, float* row) adds elements [base, base + m) of chunk c
// to row[0, m); store(base, m, const float* sums) takes the finished sums.
// All chunks of a block are read before it is stored (in-place safe).
template <typename AddChunk, typename Store>
void baguaReduceBlocks(size_t chunkElems, int nChunks, AddChunk&& addChunk, Store&& store) {
  constexpr size_t kBlock = 256;
  const int width = minmax::reduceWidth(nChunks);
  std::vector<float> rows(static_cast<size_t>(width) * kBlock);
  for (size_t base = 0; base < chunkElems; base += kBlock) {
    const size_t m = std::min(kBlock, chunkElems - base);
    for (int t = 0; t < width; ++t) {
      float* row = rows.data() + t * kBlock;
      std::fill(row, row + m, 0.0f);
      for (int c = t; c < nChunks; c += width) addChunk(c, base, m, row);
    }
    for (int s = width / 2; s >= 1; s /= 2) {
      for (int t = 0; t < s; ++t) {
        float* a = rows.data() + t * kBlock;
        const float* b = rows.data() + (t + s) * kBlock;
        for (size_t i = 0; i < m; ++i) a[i] = a[i] + b[i];
      }
    }
    store(base, m, rows.data());
  }
}

}  // namespace bagua::kernels
