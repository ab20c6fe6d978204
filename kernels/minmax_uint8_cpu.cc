// CPU reference of MinMaxUInt8 (minmax_uint8.h): one pass over a chunk for
// its min/max order keys, one pass to quantize; decoding per chunk kind.
// It is also the runtime's CPU path, so loops are kept simple enough for the
// compiler to vectorize the min/max pass.
#include <algorithm>
#include <cstring>

#include "kernels/chunk_args.h"
#include "kernels/cpu_elements.h"
#include "kernels/minmax_uint8.h"
#include "kernels/minmax_uint8_math.h"

namespace bagua::kernels {
namespace {

using minmax::ChunkKind;

// How to decode one compressed chunk, from its header.
template <typename E>
struct ChunkDecoder {
  using Bits = typename E::Bits;
  ChunkKind kind;
  Bits minBits;
  minmax::Grid grid;

  explicit ChunkDecoder(const uint8_t* header) {
    minBits = loadBits<Bits>(header);
    float mn = E::toFloat(minBits);
    float mx = E::toFloat(loadBits<Bits>(header + sizeof(Bits)));
    kind = minmax::classify(mn, mx);
    grid = kind == ChunkKind::kRange ? minmax::makeGrid(mn, mx) : minmax::Grid{0, 0, 0};
  }

  Bits decode(uint8_t q) const {
    switch (kind) {
      case ChunkKind::kNonFinite:
        return E::kNan;
      case ChunkKind::kConstant:
        return minBits;
      case ChunkKind::kRange:
        break;
    }
    return E::fromFloat(minmax::saturate(minmax::decode(q, grid), E::kMaxFinite));
  }
};

template <typename E>
void compressChunk(const typename E::Bits* x, size_t n, uint8_t* out) {
  using Bits = typename E::Bits;
  if (n == 0) {  // an empty chunk: an all-zero header
    std::memset(out, 0, minmax::kHeaderBytes);
    return;
  }
  uint32_t minKey = UINT32_MAX;
  uint32_t maxKey = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t k = minmax::orderKey<Bits>(x[i]);
    minKey = std::min(minKey, k);
    maxKey = std::max(maxKey, k);
  }
  const Bits minBits = minmax::keyToBits<Bits>(minKey);
  const Bits maxBits = minmax::keyToBits<Bits>(maxKey);
  const float mn = E::toFloat(minBits);
  const float mx = E::toFloat(maxBits);
  const ChunkKind kind = minmax::classify(mn, mx);

  std::memset(out, 0, compressedChunkBytes(n));
  const bool finite = kind != ChunkKind::kNonFinite;
  storeBits<Bits>(out, finite ? minBits : E::kNan);
  storeBits<Bits>(out + sizeof(Bits), finite ? maxBits : E::kNan);
  storeBits<uint32_t>(out + minmax::kMinKeyOffset, ~minKey);
  storeBits<uint32_t>(out + minmax::kMaxKeyOffset, maxKey);
  if (!finite) return;  // codes stay 0

  const minmax::Grid grid = minmax::makeGrid(mn, mx);
  uint8_t* codes = out + minmax::kHeaderBytes;
  for (size_t i = 0; i < n; ++i) codes[i] = minmax::encode(E::toFloat(x[i]), grid);
}

template <typename E>
void compressAll(const void* src, size_t chunkElems, int nChunks, int target, uint8_t* dst) {
  const auto* x = static_cast<const typename E::Bits*>(src);
  const size_t stride = compressedChunkBytes(chunkElems);
  if (target >= 0) {
    compressChunk<E>(x + static_cast<size_t>(target) * chunkElems, chunkElems, dst);
    return;
  }
  for (int c = 0; c < nChunks; ++c) {
    compressChunk<E>(x + static_cast<size_t>(c) * chunkElems, chunkElems, dst + c * stride);
  }
}

template <typename E>
void decompressAll(const uint8_t* src, size_t chunkElems, int nChunks, void* dst) {
  auto* y = static_cast<typename E::Bits*>(dst);
  const size_t stride = compressedChunkBytes(chunkElems);
  for (int c = 0; c < nChunks; ++c) {
    const uint8_t* chunk = src + c * stride;
    const ChunkDecoder<E> decoder(chunk);
    const uint8_t* codes = chunk + minmax::kHeaderBytes;
    auto* out = y + static_cast<size_t>(c) * chunkElems;
    if (decoder.kind != ChunkKind::kRange) {
      std::fill(out, out + chunkElems, decoder.decode(0));
      continue;
    }
    for (size_t i = 0; i < chunkElems; ++i) out[i] = decoder.decode(codes[i]);
  }
}

}  // namespace

size_t compressedChunkBytes(size_t chunkElems) {
  return (chunkElems + 31) / 32 * 32 + minmax::kHeaderBytes;
}

void compressCpu(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                 uint8_t* dst) {
  checkChunkArgs("compressCpu", dtype, chunkElems, nChunks, target, false);
  dispatchCpu(dtype,
              [&](auto e) { compressAll<decltype(e)>(src, chunkElems, nChunks, target, dst); });
}

void decompressCpu(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks, void* dst) {
  checkChunkArgs("decompressCpu", dtype, chunkElems, nChunks, -1, false);
  dispatchCpu(dtype, [&](auto e) { decompressAll<decltype(e)>(src, chunkElems, nChunks, dst); });
}

}  // namespace bagua::kernels
