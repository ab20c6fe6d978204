// CUDA kernels of MinMaxUInt4 (minmax_uint4_cuda.h). The grid is one thread
// block per quantization block of every chunk compressed; min and max are
// exact in any order (the sign of zero is made canonical, NaN/Inf only set a
// flag), so the results equal the CPU loop's.
#include <climits>

#include "kernels/chunk_args.h"
#include "kernels/cuda_elements.cuh"
#include "kernels/minmax_uint4.h"
#include "kernels/minmax_uint4_cuda.h"
#include "kernels/minmax_uint4_math.h"

namespace bagua::kernels {
namespace {

constexpr int kWarps = kThreads / 32;
static_assert(kUInt4Block == 2 * kThreads, "one code byte (two elements) per thread");

struct BlockPlace {
  size_t chunk;  // among the chunks of this launch
  size_t base;   // first element of the block in its chunk
  size_t elems;  // elements in the block
};

__device__ BlockPlace placeOf(size_t chunkElems, size_t blocksPerChunk) {
  const size_t g = blockIdx.x;
  BlockPlace p;
  p.chunk = g / blocksPerChunk;
  p.base = (g % blocksPerChunk) * kUInt4Block;
  const size_t left = chunkElems - p.base;
  p.elems = left < kUInt4Block ? left : kUInt4Block;
  return p;
}

// The block's stored range, known to every thread.
__device__ uint4::Range blockRange(float mn, float mx, bool bad) {
  __shared__ float mins[kWarps], maxs[kWarps];
  __shared__ int bads[kWarps];
  __shared__ uint4::Range range;
  for (int offset = 16; offset > 0; offset /= 2) {
    const float omn = __shfl_down_sync(0xffffffffu, mn, offset);
    const float omx = __shfl_down_sync(0xffffffffu, mx, offset);
    bad = __shfl_down_sync(0xffffffffu, bad, offset) || bad;
    mn = omn < mn ? omn : mn;
    mx = omx > mx ? omx : mx;
  }
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) {
    mins[warp] = mn;
    maxs[warp] = mx;
    bads[warp] = bad;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kWarps; ++w) {
      mn = mins[w] < mn ? mins[w] : mn;
      mx = maxs[w] > mx ? maxs[w] : mx;
      bad = bad || bads[w];
    }
    range = uint4::makeRange(mn, mx, bad);
  }
  __syncthreads();
  return range;
}

template <typename E>
__global__ void compress4Kernel(const typename E::Bits* src, size_t chunkElems,
                                size_t blocksPerChunk, size_t stride, uint8_t* dst) {
  const BlockPlace p = placeOf(chunkElems, blocksPerChunk);
  const typename E::Bits* x = src + p.chunk * chunkElems + p.base;
  uint8_t* out = dst + p.chunk * stride;
  const size_t codesAt = uint4::codesOffset(chunkElems, kUInt4Block);
  const size_t i = 2 * threadIdx.x;
  const bool has0 = i < p.elems;
  const bool has1 = i + 1 < p.elems;
  const float v0 = has0 ? E::toFloat(x[i]) : 0.0f;
  const float v1 = has1 ? E::toFloat(x[i + 1]) : v0;
  float mn = has0 ? (v1 < v0 ? v1 : v0) : __uint_as_float(0x7f800000u);  // +Inf: no element
  float mx = has0 ? (v1 > v0 ? v1 : v0) : __uint_as_float(0xff800000u);  // -Inf
  const bool bad = has0 && (!minmax::isFiniteHd(v0) || !minmax::isFiniteHd(v1));
  const uint4::Range r = blockRange(mn, mx, bad);
  const size_t block = p.base / kUInt4Block;
  if (threadIdx.x == 0) {
    reinterpret_cast<float*>(out)[2 * block] = r.mn;
    reinterpret_cast<float*>(out)[2 * block + 1] = r.mx;
  }
  if (block == 0 && threadIdx.x < 32) {  // the zero padding of the chunk
    const size_t headerEnd = 8 * blocksPerChunk;
    if (headerEnd + threadIdx.x < codesAt) out[headerEnd + threadIdx.x] = 0;
    const size_t codesEnd = (chunkElems + 1) / 2;
    if (codesEnd + threadIdx.x < uint4::align32(codesEnd))
      out[codesAt + codesEnd + threadIdx.x] = 0;
  }
  if (!has0) return;
  const bool finite = minmax::isFiniteHd(r.mn);
  const uint8_t q0 = finite ? uint4::encode(v0, r) : 0;
  const uint8_t q1 = finite && has1 ? uint4::encode(v1, r) : 0;
  out[codesAt + (p.base + i) / 2] = static_cast<uint8_t>(q0 | (q1 << 4));
}

template <typename E>
__global__ void decompress4Kernel(const uint8_t* src, size_t chunkElems, size_t blocksPerChunk,
                                  size_t stride, typename E::Bits* dst) {
  const BlockPlace p = placeOf(chunkElems, blocksPerChunk);
  const uint8_t* in = src + p.chunk * stride;
  const size_t block = p.base / kUInt4Block;
  const uint4::Range r{reinterpret_cast<const float*>(in)[2 * block],
                       reinterpret_cast<const float*>(in)[2 * block + 1]};
  const size_t i = 2 * threadIdx.x;
  if (i >= p.elems) return;
  const uint8_t byte = in[uint4::codesOffset(chunkElems, kUInt4Block) + (p.base + i) / 2];
  typename E::Bits* y = dst + p.chunk * chunkElems + p.base;
  y[i] = E::fromFloat(uint4::decode(byte & 0xf, r));
  if (i + 1 < p.elems) y[i + 1] = E::fromFloat(uint4::decode(byte >> 4, r));
}

// The grid for `chunks` chunks; 0 when it does not fit one launch.
size_t gridOf(size_t chunkElems, int chunks) {
  const size_t blocks = uint4::blocksOf(chunkElems, kUInt4Block) * static_cast<size_t>(chunks);
  return blocks <= static_cast<size_t>(INT_MAX) ? blocks : 0;
}

}  // namespace

cudaError_t compress4(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                      uint8_t* dst, cudaStream_t stream) {
  checkChunkArgs("compress4", dtype, chunkElems, nChunks, target, false);
  checkAligned("compress4", "src", src, dtypeSize(dtype));
  checkAligned("compress4", "dst", dst, 4);
  const int chunks = target >= 0 ? 1 : nChunks;
  const size_t stride = compressedChunkBytes4(chunkElems);
  if (chunkElems == 0) return cudaSuccess;
  const size_t grid = gridOf(chunkElems, chunks);
  if (grid == 0) return cudaErrorInvalidValue;
  const size_t first = target >= 0 ? static_cast<size_t>(target) * chunkElems : 0;
  return dispatchGpu(dtype, [&](auto e) {
    using E = decltype(e);
    const auto* x = static_cast<const typename E::Bits*>(src) + first;
    compress4Kernel<E><<<static_cast<unsigned>(grid), kThreads, 0, stream>>>(
        x, chunkElems, uint4::blocksOf(chunkElems, kUInt4Block), stride, dst);
    BAGUA_KERNELS_RETURN_IF_LAUNCH_FAILED();
    return cudaSuccess;
  });
}

cudaError_t decompress4(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks, void* dst,
                        cudaStream_t stream) {
  checkChunkArgs("decompress4", dtype, chunkElems, nChunks, -1, false);
  checkAligned("decompress4", "src", src, 4);
  checkAligned("decompress4", "dst", dst, dtypeSize(dtype));
  if (chunkElems == 0) return cudaSuccess;
  const size_t grid = gridOf(chunkElems, nChunks);
  if (grid == 0) return cudaErrorInvalidValue;
  return dispatchGpu(dtype, [&](auto e) {
    using E = decltype(e);
    decompress4Kernel<E><<<static_cast<unsigned>(grid), kThreads, 0, stream>>>(
        src, chunkElems, uint4::blocksOf(chunkElems, kUInt4Block),
        compressedChunkBytes4(chunkElems), static_cast<typename E::Bits*>(dst));
    BAGUA_KERNELS_RETURN_IF_LAUNCH_FAILED();
    return cudaSuccess;
  });
}

}  // namespace bagua::kernels
