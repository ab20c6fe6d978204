// CPU reference of MinMaxUInt4 (minmax_uint4.h), also the runtime's CPU
// path: per block one pass for min/max, one to quantize.
#include <algorithm>
#include <cstring>

#include "kernels/chunk_args.h"
#include "kernels/cpu_elements.h"
#include "kernels/minmax_uint4.h"
#include "kernels/minmax_uint4_math.h"

namespace bagua::kernels {
namespace {

template <typename E>
uint4::Range blockRange(const typename E::Bits* x, size_t n) {
  float mn = E::toFloat(x[0]);
  float mx = mn;
  bool nonFinite = false;
  for (size_t i = 0; i < n; ++i) {
    const float v = E::toFloat(x[i]);
    nonFinite = nonFinite || !minmax::isFiniteHd(v);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
  return uint4::makeRange(mn, mx, nonFinite);
}

template <typename E>
void compressChunk(const typename E::Bits* x, size_t n, uint8_t* out) {
  std::memset(out, 0, compressedChunkBytes4(n));
  uint8_t* codes = out + uint4::codesOffset(n, kUInt4Block);
  for (size_t b = 0; b * kUInt4Block < n; ++b) {
    const size_t base = b * kUInt4Block;
    const size_t m = std::min(kUInt4Block, n - base);
    const uint4::Range r = blockRange<E>(x + base, m);
    storeBits<float>(out + 8 * b, r.mn);
    storeBits<float>(out + 8 * b + 4, r.mx);
    if (!minmax::isFiniteHd(r.mn)) continue;  // codes stay 0
    for (size_t i = 0; i < m; ++i) {
      const uint8_t q = uint4::encode(E::toFloat(x[base + i]), r);
      codes[(base + i) / 2] |= static_cast<uint8_t>((base + i) % 2 == 0 ? q : q << 4);
    }
  }
}

template <typename E>
void decompressChunk(const uint8_t* in, size_t n, typename E::Bits* y) {
  const uint8_t* codes = in + uint4::codesOffset(n, kUInt4Block);
  for (size_t b = 0; b * kUInt4Block < n; ++b) {
    const size_t base = b * kUInt4Block;
    const size_t m = std::min(kUInt4Block, n - base);
    const uint4::Range r{loadBits<float>(in + 8 * b), loadBits<float>(in + 8 * b + 4)};
    for (size_t i = base; i < base + m; ++i) {
      const uint8_t q = i % 2 == 0 ? codes[i / 2] & 0xf : codes[i / 2] >> 4;
      y[i] = E::fromFloat(uint4::decode(q, r));
    }
  }
}

}  // namespace

size_t compressedChunkBytes4(size_t chunkElems) {
  return uint4::chunkBytes(chunkElems, kUInt4Block);
}

void compress4Cpu(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                  uint8_t* dst) {
  checkChunkArgs("compress4Cpu", dtype, chunkElems, nChunks, target, false);
  const size_t stride = compressedChunkBytes4(chunkElems);
  dispatchCpu(dtype, [&](auto e) {
    using E = decltype(e);
    const auto* x = static_cast<const typename E::Bits*>(src);
    const int first = target >= 0 ? target : 0;
    const int last = target >= 0 ? target + 1 : nChunks;
    for (int c = first; c < last; ++c) {
      compressChunk<E>(x + static_cast<size_t>(c) * chunkElems, chunkElems,
                       dst + static_cast<size_t>(c - first) * stride);
    }
  });
}

void decompress4Cpu(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks, void* dst) {
  checkChunkArgs("decompress4Cpu", dtype, chunkElems, nChunks, -1, false);
  const size_t stride = compressedChunkBytes4(chunkElems);
  dispatchCpu(dtype, [&](auto e) {
    using E = decltype(e);
    auto* y = static_cast<typename E::Bits*>(dst);
    for (int c = 0; c < nChunks; ++c) {
      decompressChunk<E>(src + static_cast<size_t>(c) * stride, chunkElems,
                         y + static_cast<size_t>(c) * chunkElems);
    }
  });
}

}  // namespace bagua::kernels
